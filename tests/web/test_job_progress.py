"""web/jobs.js, the page's reading of a job's progress, run by Node: the time left shown never goes up
(the server's estimate jumps when a file is stuck), it shows once two estimates came, and a job whose
files are not counted yet is waiting, not "0 of 0"."""

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


def shown(raws: list[float | None], step_ms: int = 1000) -> list[int | None]:
    """The seconds shown after each estimate of the server, one poll every step_ms."""
    return run_js(f"""
      let s = null; const out = [];
      {json.dumps(raws)}.forEach((raw, i) => {{ s = m.smoothEta(s, raw, i * {step_ms}); out.push(m.shownSeconds(s)); }});
      console.log(JSON.stringify(out));""")


def test_a_stuck_file_does_not_make_the_time_left_go_up():
    seen = shown([55, 101, 140, 180, 30, 20, 10])  # stuck at 1 of 3 for three polls, then going again
    assert seen[0] is None, "one estimate is not shown"
    numbers = [s for s in seen if s is not None]
    assert numbers == sorted(numbers, reverse=True), f"the time left went up: {seen}"
    assert seen == [None, 54, 53, 52, 45, 37, 28]  # counted down while stuck, then falling with the estimate


def test_the_time_left_counts_down_between_polls_and_follows_a_falling_estimate():
    assert shown([60, 59, 58, 57]) == [None, 59, 58, 57]
    assert shown([100, 50, 10]) == [None, 85, 62]  # blended with what was shown, counted down
    assert shown([None, None, 40, 39]) == [None, None, None, 39]  # no rate yet: nothing to show


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
