"""web/jobs.js, the page's reading of a job's progress, run by Node: the time left comes from the files
done (it stays put while a file is stuck, never counting down to nothing), and a job whose files are not
counted yet is waiting, not "0 of 0"."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

JOBS_JS = Path(__file__).resolve().parents[2] / "web" / "jobs.js"


def run_js(body: str):
    """The JSON value `body` (a module script with `m` = web/jobs.js) prints."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = f"const m = await import({json.dumps(JOBS_JS.as_uri())});\n{body}"
    out = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def shown(looks: list[int], total: int, step_ms: int = 1000) -> list[int | None]:
    """The seconds shown after each look at a job of `total` files, `looks` its files done at each (one a poll)."""
    return run_js(f"""
      let s = null; const out = [];
      {json.dumps(looks)}.forEach((done, i) => {{
        s = m.timeLeft(s, {{files_done: done, files_total: {total}}}, i * {step_ms}); out.push(m.shownSeconds(s)); }});
      console.log(JSON.stringify(out));""")


def test_the_time_left_comes_from_the_files_done():
    # one file every 2 s: 8 left at that rate
    assert shown([0, 0, 1, 1, 2], total=6) == [None, None, 10, 10, 8]
    assert shown([3, 4, 5], total=5) == [None, 1, 0]  # first seen half-way: the rate from then on


def test_a_stuck_file_does_not_make_the_time_left_count_down():
    seen = shown([0, 1, 1, 1, 1, 1, 2], total=10)  # stuck at 1 of 10 for five polls
    assert seen[1:6] == [9] * 5, f"the time left moved while no file was done: {seen}"
    assert seen[6] == 24  # then the honest rate: 2 files in 6 s, 8 left
    assert shown([5, 2, 3], total=4) == [None, None, 1]  # a job that starts again is seen afresh


def test_the_files_read_through_ocr_are_told_apart_from_the_others():
    got = run_js("""console.log(JSON.stringify({
      both: m.currentFiles({current: ["a.md", "scan.png", "b.pdf"], reading_images: ["scan.png"]}),
      older: m.currentFiles({current: ["a.md"]}),
      none: m.currentFiles({})}));""")
    assert got["both"] == {"reading": ["scan.png"], "others": ["a.md", "b.pdf"]}
    assert got["older"] == {"reading": [], "others": ["a.md"]}  # a server from before OCR
    assert got["none"] == {"reading": [], "others": []}


def test_files_by_outcome_and_the_waiting_state():
    got = run_js("""console.log(JSON.stringify({
      outcome: m.outcomes({files_ingested: 2, files_failed: 1, files_skipped: 6, files_unchanged: 2}),
      old: m.outcomes({files_ingested: 3}),
      pending: m.counting({status: "pending", files_total: 0}),
      walking: m.counting({status: "running", files_total: 0}),
      going: m.counting({status: "running", files_total: 3}),
      emptyDone: m.counting({status: "done", files_total: 0})}));""")
    assert got["outcome"] == {"ingested": 2, "failed": 1, "skipped": 4, "unchanged": 2}
    assert got["old"] == {"ingested": 3, "failed": 0, "skipped": 0, "unchanged": 0}
    assert (got["pending"], got["walking"], got["going"], got["emptyDone"]) == (True, True, False, False)
