"""Files are parsed in a child process: same chunks as in-process, reasons kept, and a dead child replaced."""

from __future__ import annotations

import os
import signal

import pytest

from ingest.elements import ParseError
from ingest.parse_pool import ParsePool
from ingest.chunking import TokenCounter, parse_and_split
from ingest.sources import walk
from tests.support.wait import wait_until

PAGE = "# Leave\n\nYou get 25 days of annual leave.\n\n## Booking\n\nBook leave in the HR tool two weeks ahead.\n"


@pytest.fixture(scope="module")
def pool():
    p = ParsePool()
    yield p
    p.shutdown()


def test_child_gives_the_same_chunks_as_parsing_here(pool, embedder, tmp_path):
    (tmp_path / "leave.md").write_text(PAGE)
    [src] = walk(str(tmp_path / "leave.md"))
    data = src.abs_path.read_bytes()
    here = parse_and_split(src, data, 200, 32, TokenCounter.for_model(embedder.model_path), 256)
    there = pool.parse_and_split(src, data, 200, 32, str(embedder.model_path), 256)
    assert there[0].title == here[0].title == "Leave" and there[0].elements == []
    assert [c.text for c in there[1]] == [c.text for c in here[1]] and there[2] == here[2]
    assert there[1][0].anchor == "leave" and "Book leave in the HR tool" in there[1][-1].text


def test_reasons_survive_the_process_boundary(pool, embedder, tmp_path):
    (tmp_path / "empty.md").write_text("   \n")
    [src] = walk(str(tmp_path / "empty.md"))
    with pytest.raises(ParseError) as info:
        pool.parse_and_split(src, src.abs_path.read_bytes(), 200, 32, str(embedder.model_path), 256)
    assert info.value.skip and "whitespace" in info.value.reason


def test_a_killed_child_is_replaced(pool, embedder, tmp_path):
    (tmp_path / "leave.md").write_text(PAGE)
    [src] = walk(str(tmp_path / "leave.md"))
    pool.warm()
    for pid in pool.child_pids():
        os.kill(pid, signal.SIGKILL)
    parsed, chunks, _ = pool.parse_and_split(src, src.abs_path.read_bytes(), 200, 32, str(embedder.model_path), 256)
    assert parsed.title == "Leave" and chunks


def test_warming_a_pool_whose_child_died_starts_a_new_child(pool):
    pool.warm()
    [dead] = pool.child_pids()
    os.kill(dead, signal.SIGKILL)
    pool.warm()  # a bench or worker warming up after the child died between files
    assert pool.child_pids() and pool.child_pids() != [dead]


def test_the_child_ends_when_its_parent_is_killed(tmp_path):
    """A worker killed with SIGKILL must not leave its parser process behind."""
    import subprocess
    import sys

    code = ("from ingest.parse_pool import ParsePool\n"
            "p = ParsePool.shared(); p.warm()\n"
            "print(p.child_pids()[0], flush=True)\n"
            "import time; time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    os.kill(child, 0)  # alive
    parent.kill()
    parent.wait()

    def gone() -> bool:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return True
        return False

    wait_until(gone, timeout=10, interval=0.2, what="the parser process ending with its parent")


def test_token_counts_through_the_rust_tokenizer_match_the_python_one(embedder):
    counter = TokenCounter.for_model(embedder.model_path)
    texts = ["", "Book leave in the HR tool.", "会议室怎么预订？", "naïve café " * 300, "def make_response(self, rv):"]
    python_side = [len(counter.tokenizer(t, add_special_tokens=False, truncation=False)["input_ids"]) for t in texts]
    assert [counter(t) for t in texts] == python_side and python_side[3] > 512  # no truncation either way
