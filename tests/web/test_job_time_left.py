"""The time left of an ingestion, in headless Chromium against a real server and a real worker (echo backend,
the packaged embedder): files are uploaded from the documents view, the job card says how many are done and
about how long is left; then the worker is stopped mid-job (SIGSTOP, as a worker stuck on one file would
be), and while no file gets done the time left stays where it was instead of counting down to nothing; the
worker resumed, the job ends and the time left goes with it. Screenshots at 390 and 1440 px of the stuck
job; axe-core finds no serious or critical violation."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from typing import Iterator

import pytest

from tests.web.conftest import artifacts_dir, assistant_command, base_env, checked_page, running_server, stop
from tests.web.test_first_visit import shoot
from tests.web.test_pages import open_documents

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

FILES = 12
JOB_TIMEOUT_MS = 300_000
PROGRESS = re.compile(r"^(\d+) of (\d+) files")
LEFT = re.compile(r"about (\d+) s left")


def note(i: int) -> bytes:
    """A Markdown note long enough that embedding it takes a moment (about 40 chunks' worth of text)."""
    paragraphs = [f"## Part {p}\n\nNote {i}, part {p}: the allotment's bed {p % 9} grows {['beans', 'leeks', 'kale'][p % 3]} "
                  f"this season; water it every {p % 4 + 1} days and mulch it after rain in week {p % 52}.\n"
                  for p in range(80)]
    return (f"# Allotment note {i}\n\n" + "\n".join(paragraphs)).encode()


@pytest.fixture
def server_and_worker(tmp_path_factory) -> Iterator[tuple[str, subprocess.Popen]]:
    """A real server over an empty data folder, and an ingestion worker in a process group of its own (so that
    the test can stop and resume it)."""
    root = tmp_path_factory.mktemp("time-left")
    data = root / "data"
    env = base_env(ASSISTANT_BACKEND="echo", ASSISTANT_INGEST_RUN_WORKER="false")  # this worker is the only one
    with running_server(root, data, env) as base:
        with (root / "worker.log").open("w") as log:
            worker = subprocess.Popen([*assistant_command(), "worker", "--data-dir", str(data), "--exit-with-parent"],
                                      env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            yield base, worker
        finally:
            os.killpg(worker.pid, signal.SIGCONT)
            stop(worker)


def test_the_time_left_stays_put_while_the_worker_is_stuck(browser, server_and_worker, tmp_path_factory):
    base, worker = server_and_worker
    with checked_page(browser, base, locale="en-GB", viewport={"width": 1440, "height": 900}) as page:
        open_documents(page, "allotment")
        page.set_input_files("#pick-files", files=[
            {"name": f"note-{i:02d}.md", "mimeType": "text/markdown", "buffer": note(i)} for i in range(FILES)])
        facts = page.locator(".job").first.locator(".job-facts")
        expect(facts).to_contain_text(LEFT, timeout=JOB_TIMEOUT_MS)  # a file was done while the page watched

        os.killpg(worker.pid, signal.SIGSTOP)  # stuck: no file gets done from now on
        try:
            time.sleep(1.5)  # time is the subject: a file written as the worker stopped is counted by the next poll
            seen = []
            for _ in range(24):  # six seconds: six of the page's polls
                seen.append(facts.text_content())
                time.sleep(0.25)  # time is the subject: the card watched across the page's polls
            assert all(PROGRESS.match(s) for s in seen), seen
            stuck = {(PROGRESS.match(s)[1], m[1] if (m := LEFT.search(s)) else None) for s in seen}
            assert len(stuck) == 1, f"the job card changed while no file was done: {seen}"
            [(done, left)] = stuck
            assert int(done) < FILES and left is not None, seen  # mid-job, with a time left shown all along
            problems: dict[str, list[str]] = {}
            shoot(page, artifacts_dir(tmp_path_factory), problems, "time-left-stuck")
            expect(facts).to_contain_text(f"about {left} s left")  # still, after the screenshots
        finally:
            os.killpg(worker.pid, signal.SIGCONT)

        expect(page.locator(".job").first).to_have_attribute("data-status", "done", timeout=JOB_TIMEOUT_MS)
        expect(facts).to_have_text(f"{FILES} ingested")
        assert not problems, f"serious or critical accessibility violations: {problems}"
