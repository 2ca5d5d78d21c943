"""Workers sharing one job on PostgreSQL: 4 `assistant worker` processes ingest the files while two of
them are SIGKILLed mid-run and started again; every file ends up ingested exactly once, with exact
chunk counts and job progress. The suite runs 600 files; ASSISTANT_TEST_SHARED_FILES=2000 is the full
measurement (about 5 minutes on 2 cores)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from indexes.jobs import Jobs
from indexes.lease import FileLeases
from indexes.store import Store
from tests.support.wait import wait_until

REPO = Path(__file__).resolve().parents[2]
FILES = int(os.environ.get("ASSISTANT_TEST_SHARED_FILES", "600"))


def start_worker(data_dir: Path, url: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "ASSISTANT_DATABASE_URL": url, "ASSISTANT_INGEST_FILE_LEASE_S": "6",
           "ASSISTANT_INGEST_CLAIM_FILES": "50", "ASSISTANT_INGEST_WORKER_POLL_S": "0.2", "ASSISTANT_BACKEND": "echo",
           "ASSISTANT_INGEST_PARSE_PROCESS": "false",
           "ASSISTANT_LOG_LEVEL": "WARNING"}
    data_dir.mkdir(parents=True, exist_ok=True)
    log = open(data_dir / "worker.log", "w")  # noqa: SIM115  (kept open by the child)
    return subprocess.Popen([sys.executable, "-m", "assistant.cli", "worker", "--data-dir", str(data_dir)], env=env,
                            stdout=log, stderr=subprocess.STDOUT, cwd=REPO)


def test_leases_hand_out_disjoint_files_and_take_back_expired_ones(tmp_path, pg_url):
    store = Store(tmp_path / "d", database_url=pg_url)
    jobs, leases = Jobs(store.engine), FileLeases(store.engine, lease_s=0.5)
    job = jobs.enqueue(1, "c", {"paths": []})
    from indexes.jobs import FileState

    jobs.add_files(job.id, [FileState(f"f{i}", "pending") for i in range(10)])
    a, b = leases.claim(job.id, "a", 6), leases.claim(job.id, "b", 6)
    assert len(a) == 6 and len(b) == 4 and not {p for p, _ in a} & {p for p, _ in b}
    assert leases.claim(job.id, "c", 5) == []
    jobs.record(job.id, [FileState(p, "done") for p, _ in b])
    # a stopped renewing: its files go to the next claimant once its lease ends; b's finished files never do
    taken = wait_until(lambda: leases.claim(job.id, "c", 10), timeout=30, what="a's expired lease handing its files on")
    assert sorted(p for p, _ in taken) == sorted(p for p, _ in a)
    assert leases.renew(job.id, "b") == 0
    assert leases.unfinished(job.id) == 6 and leases.release(job.id, "c") == 6
    store.close()


@pytest.mark.slow
@pytest.mark.long
def test_four_workers_two_killed_lose_nothing_and_double_nothing(tmp_path, pg_url):
    from assistant.cli import main

    root = tmp_path / "notes"
    root.mkdir()
    for i in range(FILES):
        (root / f"note_{i:04d}.py").write_text(f'CODE_WORD_{i} = "w{i * 7919 % 100003}"  # item {i}\n')
    os.environ["ASSISTANT_DATABASE_URL"] = pg_url
    try:
        assert main(["ingest", str(root), "-c", "notes", "--enqueue", "--data-dir", str(tmp_path / "cli")]) == 0
    finally:
        del os.environ["ASSISTANT_DATABASE_URL"]
    store = Store(tmp_path / "check", database_url=pg_url)
    jobs = Jobs(store.engine)
    (job,) = jobs.list()
    workers = [start_worker(tmp_path / f"w{i}", pg_url) for i in range(4)]
    try:
        started = time.monotonic()
        wait_until(lambda: jobs.progress(job.id)["files_done"], accept=lambda n: n >= FILES // 5, timeout=300,
                   interval=0.2, what=f"the workers ingesting {FILES // 5} files")
        for w in workers[:2]:
            w.send_signal(signal.SIGKILL)
            w.wait()
        held = store.engine.connect().execute(text(
            "SELECT count(*) FROM ingestfile WHERE state IN ('parsing', 'embedding')")).scalar_one()
        workers[:2] = [start_worker(tmp_path / f"w{i}-again", pg_url) for i in range(2)]
        info = wait_until(lambda: jobs.progress(job.id), accept=lambda p: p["status"] in ("done", "failed"), timeout=400,
                          interval=0.2, what="the job ending")
        elapsed = time.monotonic() - started
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                w.wait(timeout=30)
            except subprocess.TimeoutExpired:
                w.kill()
    print(f"\n{FILES} files by 4 workers (2 killed with {held} files in hand, restarted): {elapsed:.1f} s")
    assert info["status"] == "done", info
    assert (info["files_total"], info["files_ingested"], info["files_failed"], info["chunks"]) == (FILES, FILES, 0, FILES)
    with store.engine.connect() as conn:
        q = lambda sql: conn.execute(text(sql)).scalar_one()  # noqa: E731
        assert q("SELECT count(*) FROM document") == FILES
        assert q("SELECT count(*) FROM chunk") == FILES
        assert q("SELECT count(DISTINCT text) FROM chunk") == FILES
        assert q("SELECT coalesce(sum(n_chunks), 0) FROM document") == FILES
        assert q("SELECT count(*) FROM ingestfile WHERE state = 'done'") == FILES
    coll = store.get_collection("notes")
    i = FILES * 5 // 8  # one file, found by its own word
    hits = store.lexical.search([coll.id], ["w" + str(i * 7919 % 100003)], 3).top
    assert [store.chunk_records([hits[0][0]])[hits[0][0]].path] == [f"note_{i:04d}.py"]
    store.close()
