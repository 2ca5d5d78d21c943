"""A worker killed with SIGKILL at random points of a many-file job, restarted each time, ends with
exactly the expected chunks: none lost, none written twice, FAISS and FTS5 in step with SQLite.

The suite runs 300 files and 5 kills; `CRASH_FILES=1000 CRASH_KILLS=10` runs the full-size job (about
seven minutes on two cores), and `CRASH_SEED` repeats a run's kill points."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import faiss
import numpy as np
import pytest
from sqlalchemy import text

from indexes.jobs import Jobs
from indexes.store import Store
from ingest.parse import parse
from ingest.sources import walk
from ingest.split import split
from tests.support.wait import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.long]

FILES = int(os.environ.get("CRASH_FILES", 300))
KILLS = int(os.environ.get("CRASH_KILLS", 5))
WORDS = ("harbour ledger copper violet signal orchard lantern meadow granite willow ember falcon "
         "cobalt thistle quarry beacon saffron tundra canyon marble").split()


def make_corpus(root: Path) -> None:
    root.mkdir()
    for i in range(FILES):
        rng = random.Random(i)
        paras = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(25, 45))) + "." for _ in range(2)]
        (root / f"d{i // 100:02d}").mkdir(exist_ok=True)
        (root / f"d{i // 100:02d}" / f"note-{i:04d}.txt").write_text(f"Note {i} of the archive.\n\n" + "\n\n".join(paras))


def expected_chunks(root: Path, count) -> dict[str, list[str]]:
    out = {}
    for source in walk(root):
        parsed = parse(source)
        out[source.rel_path] = [c.text for c in split(parsed.elements, count, chunk_tokens=48, overlap_tokens=8,
                                                      anchors=parsed.anchors)]
    return out


def start_worker(data: Path, log) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "assistant.cli", "worker", "--data-dir", str(data)],
                            stdout=log, stderr=subprocess.STDOUT, cwd=data.parent)


def progress(data: Path, job_id: int) -> dict:
    store = Store(data)
    try:
        return Jobs(store.engine).progress(job_id)
    finally:
        store.close()


def test_sigkill_at_random_points_loses_and_duplicates_nothing(tmp_path, embedder):
    docs, data = tmp_path / "docs", tmp_path / "data"
    make_corpus(docs)
    data.mkdir()
    # small pools: a transaction every few dozen files, so the kills land between and inside many of them
    (data / "config.toml").write_text("[ingest]\nchunk_tokens = 48\noverlap_tokens = 8\nembed_pool = 48\nworker_poll_s = 0.2\n")
    expected = expected_chunks(docs, embedder.count_tokens)
    total = sum(len(v) for v in expected.values())
    assert len(expected) == FILES and total > FILES

    store = Store(data)
    job = Jobs(store.engine).enqueue(0, "crash", {"paths": [str(docs)]})
    store.close()

    seed = int(os.environ.get("CRASH_SEED", time.time_ns() % 100_000))
    rng = random.Random(seed)
    points = sorted(rng.sample(range(10, FILES - 60), KILLS))
    killed_at = []
    with open(tmp_path / "worker.log", "wb") as log:
        for attempt, point in enumerate(points, start=1):
            proc = start_worker(data, log)

            def at_the_point(info: dict) -> bool:
                # this worker has taken the job over (it may start past the point: then it dies at once)
                return (info["attempts"] == attempt and info["files_done"] >= point) or proc.poll() is not None

            wait_until(lambda: progress(data, job.id), accept=at_the_point, timeout=300, interval=0.02,
                       what=f"worker {attempt} reaching {point} files (seed {seed})")
            time.sleep(rng.uniform(0, 0.25))  # time is the subject: the kill lands anywhere (parsing, embedding, a commit, FAISS)
            proc.kill()
            proc.wait()
            killed_at.append(progress(data, job.id)["files_done"])
        final = subprocess.run([sys.executable, "-m", "assistant.cli", "worker", "--once", "--data-dir", str(data)],
                               stdout=log, stderr=subprocess.STDOUT, timeout=600, cwd=tmp_path)
    assert final.returncode == 0, (tmp_path / "worker.log").read_text()[-3000:]
    assert all(n < FILES for n in killed_at), f"the job ended before a kill: {killed_at} (seed {seed})"

    info = progress(data, job.id)
    assert info["status"] == "done" and info["attempts"] == KILLS + 1, (info, seed)
    assert (info["files_total"], info["files_done"], info["files_failed"]) == (FILES, FILES, 0)

    store = Store(data)
    try:
        coll = store.require_collection("crash")
        with store.engine.connect() as conn:
            rows = conn.execute(text(
                "SELECT d.path, c.ordinal, c.text, c.id FROM chunk c JOIN document d ON d.id = c.document_id "
                "ORDER BY d.path, c.ordinal")).all()
            fts = conn.execute(text("SELECT count(*), count(DISTINCT rowid) FROM chunk_fts")).one()
            docs_ok = conn.execute(text("SELECT count(*) FROM document WHERE status = 'ok'")).scalar_one()
        got: dict[str, list[str]] = {}
        for path, ordinal, body, _ in rows:
            got.setdefault(path, []).append(body)
        assert docs_ok == FILES
        assert got == expected, f"chunks differ from what the files give (seed {seed})"  # 0 lost, 0 duplicated
        assert len(rows) == total and tuple(fts) == (total, total)
        assert store.counts(coll) == (total, total)
        # the FAISS file on disk is at the store's generation and holds exactly the chunk ids
        [faiss_file] = (data / "vectors").glob(f"{coll.id}.g*.faiss")
        assert faiss_file.name == f"{coll.id}.g{coll.generation}.faiss"
        index = faiss.read_index(str(faiss_file))
        ids = np.sort(faiss.vector_to_array(index.id_map))
        assert np.array_equal(ids, np.array(sorted(r[3] for r in rows)))
    finally:
        store.close()
    wait_until(lambda: processes_in(tmp_path), accept=lambda alive: not alive, timeout=5, interval=0.2,
               what="the parser processes of the killed workers ending with them")


def processes_in(cwd: Path) -> list[int]:
    """Processes running in cwd (each killed worker's parser process must end with it)."""
    alive = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and Path(proc, "cwd").resolve() == cwd.resolve():
                alive.append(int(proc.name))
        except OSError:
            continue
    return alive
