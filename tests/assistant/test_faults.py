"""Faults, each followed by recovery with nothing lost: a FAISS file truncated or deleted, the backend
killed in the middle of an answer, the disk filling up during an ingest. (A worker killed with SIGKILL
mid-ingest: tests/ingest/test_crash.py.)"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import threading
import uuid

import httpx
import numpy as np
import pytest

from assistant.app import create_app
from assistant.services import Services
from evals.local_server import serve_in_thread
from indexes.jobs import Jobs
from indexes.store import Store
from indexes.vectors import VectorOptions
from ingest.worker import Worker
from tests.support.sse import parse_sse
from tests.support.stores import write_pages
from tests.support.wait import wait_until

PAGES = {f"p{i}.md": (f"Page {i}", f"Topic {i}: the kettle on floor {i} is descaled every {i + 2} weeks.") for i in range(30)}


@pytest.mark.parametrize("damage", ["truncate", "delete", "garbage"])
def test_a_damaged_faiss_file_is_rebuilt_on_start_with_the_same_results(tmp_path, settings_factory, embedder, damage):
    settings = settings_factory()
    store = Store(settings.data_dir)
    write_pages(store, embedder, "office", PAGES)
    before = Services.assemble(settings, store, embedder, None).retriever.search("kettle floor 7", ["office"], 5)
    store.save_vectors(store.get_collection("office"))
    store.close()
    files = list((settings.data_dir / "vectors").glob("*.faiss"))
    assert files
    for f in files:
        if damage == "truncate":
            os.truncate(f, f.stat().st_size // 2)
        elif damage == "delete":
            f.unlink()
        else:
            f.write_bytes(os.urandom(4096))
    again = Services.assemble(settings, Store(settings.data_dir), embedder, None)
    try:
        assert again.check_indexes() == ["office"]  # what the server does on start
        after = again.retriever.search("kettle floor 7", ["office"], 5)
        assert [h.chunk_id for h in after] == [h.chunk_id for h in before]
        assert len(list((settings.data_dir / "vectors").glob("*.faiss"))) == 1
    finally:
        again.store.close()


@pytest.mark.slow
def test_the_backend_killed_mid_answer_ends_the_stream_with_an_error_and_the_next_answer_works(
        gguf_path, tmp_path, settings_factory, make_services, embedder):
    from tests.support.llama_server import MODEL_ALIAS, LlamaServer

    pytest.importorskip("sse_starlette", reason="the llama-cpp-python[server] extra is not installed")
    # One thread: two of llama.cpp's spinning threads beside another worker's engine on two cores can take
    # minutes a token; this test is about the kill and the recovery, not speed.
    engine = LlamaServer(gguf_path, tmp_path, threads=1).start()
    try:
        settings = settings_factory(backend="openai", openai={"base_url": engine.url, "model": MODEL_ALIAS, "timeout_s": 120,
                                                                 "retry_unhealthy_s": 1},
                                    generation={"max_tokens": 48})
        services = make_services(settings, lambda s: write_pages(s, embedder, "office", PAGES))
        body = {"question": "Write a long story about the kettle on floor 7.", "collection": "office"}
        with serve_in_thread(create_app(settings, services)) as server:
            seen: list[str] = []
            with httpx.stream("POST", f"{server.url}/api/ask", json=body, timeout=60) as r:
                assert r.status_code == 200
                for line in r.iter_lines():
                    seen.append(line)
                    if line.startswith("event: token") and len(seen) > 6:
                        engine.proc.send_signal(signal.SIGKILL)  # mid-stream
                        engine.proc.wait()
            events = parse_sse("\n".join(seen))
            assert events[-1][0] == "error", events[-3:]
            assert httpx.get(f"{server.url}/health", timeout=30).status_code == 503
            engine.start()
            (replica,) = services.backend.replicas.all
            wait_until(lambda: replica.up, timeout=30, what="the failed replica coming due for a retry (retry_unhealthy_s)")
            r = httpx.post(f"{server.url}/api/ask", json=body | {"question": "Which floor has a kettle?"}, timeout=120)
            assert r.status_code == 200 and parse_sse(r.text)[-1][0] == "done", parse_sse(r.text)[-2:]
            assert httpx.get(f"{server.url}/health", timeout=30).status_code == 200
    finally:
        engine.stop()


@pytest.fixture
def small_disk(tmp_path):
    """A 48 MB tmpfs (root only: elsewhere the test is skipped, saying why)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip() or 'not root'})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill_disk(path, leave_bytes: int, name: str = "filler") -> None:
    """A file taking the space of path's file system but leave_bytes (to a page or so)."""
    fd = os.open(path / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while (free := shutil.disk_usage(path).free) > leave_bytes:
            os.write(fd, b"\0" * min(1024 * 1024, max(4096, free - leave_bytes)))
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)


@pytest.mark.slow
def test_a_full_disk_during_ingest_loses_nothing_and_the_job_completes_later(tmp_path, small_disk, settings_factory, embedder):
    base, more = tmp_path / "base", tmp_path / "more"
    base.mkdir()
    more.mkdir()
    (base / "kept.md").write_text("# Kept\n\nThe boiler is serviced every October.\n")
    for i in range(120):
        (more / f"doc{i:03}.md").write_text(f"# Doc {i}\n\n" + f"Paragraph {i} about room {uuid.uuid4().hex}. " * 60 + "\n")
    settings = settings_factory(data_dir=small_disk / "data")

    def run(paths: list[str]) -> dict:
        worker = Worker(settings, embedder=embedder)
        jobs = Jobs(worker.store.engine)
        job = jobs.enqueue(0, "office", {"paths": paths})
        try:
            worker.run(once=True)
            return jobs.progress(job.id)
        finally:
            worker.store.close()

    assert run([str(base)])["status"] == "done"
    # Kept aside so that, with the disk as full as the failed ingest left it, the store can still be opened
    # (SQLite's shared-memory index of its log needs 32 KiB), as a server already running would have it.
    (small_disk / "reserve").write_bytes(b"\0" * 128 * 1024)
    fill_disk(small_disk, leave_bytes=1 * 1024 * 1024)
    try:
        failed = run([str(base), str(more)])
    except Exception as exc:  # the worker itself may stop on ENOSPC: what matters is the store
        failed = {"status": f"raised {type(exc).__name__}", "files_ingested": None}
    print(f"disk full: {json.dumps({k: failed.get(k) for k in ('status', 'files_ingested', 'files_failed', 'error')})}")
    assert failed["status"] != "done" or failed.get("files_failed")
    fill_disk(small_disk, leave_bytes=0, name="the-rest")  # however much the failed ingest left
    (small_disk / "reserve").unlink()
    store = Store(settings.data_dir)
    try:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        hits = Services.assemble(settings, store, embedder, None).retriever.search("boiler serviced", ["office"], 3)
        assert hits and hits[0].path == "kept.md"  # what was there before is intact
    finally:
        store.close()

    (small_disk / "filler").unlink()
    (small_disk / "the-rest").unlink()
    again = run([str(base), str(more)])
    assert again["status"] == "done" and again["files_failed"] == 0, again
    store = Store(settings.data_dir)
    try:
        with store.engine.connect() as conn:
            docs = conn.exec_driver_sql("SELECT count(*) FROM document WHERE status = 'ok'").scalar()
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        assert docs == 121
    finally:
        store.close()


@pytest.mark.slow
def test_a_worker_waits_out_a_full_disk_and_then_runs_the_job(tmp_path, small_disk, settings_factory, embedder, caplog):
    """The server's background worker is started once: a full disk must not end it."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "boiler.md").write_text("# Boiler\n\nThe boiler is serviced every October.\n")
    settings = settings_factory(data_dir=small_disk / "data")
    settings.ingest.worker_poll_s = 0.2
    worker = Worker(settings, embedder=embedder)
    jobs = Jobs(worker.store.engine)
    job = jobs.enqueue(0, "office", {"paths": [str(docs)]})
    fill_disk(small_disk, leave_bytes=0)
    thread = threading.Thread(target=worker.run, name="worker", daemon=True)
    thread.start()
    try:
        wait_until(lambda: [r for r in caplog.records if "cannot be written to" in r.getMessage()],
                   accept=lambda refused: len(refused) >= 2, timeout=60, what="the worker meeting the full disk twice")
        assert thread.is_alive()
        assert jobs.progress(job.id)["status"] in ("pending", "running")
        (small_disk / "filler").unlink()
        wait_until(lambda: jobs.progress(job.id), accept=lambda p: p["status"] == "done", timeout=60, interval=0.2,
                   what="the job running once the disk has room")
        assert thread.is_alive()
    finally:
        worker.stop.set()
        thread.join(30)
        worker.store.close()


def test_a_vector_index_saved_on_a_full_disk_leaves_no_file(small_disk):
    """FAISS's own writer misses a failed flush and left an empty index behind as if saved."""
    from indexes.vectors import VectorIndex

    vectors = np.random.default_rng(0).random((2000, 64), dtype=np.float32)
    index = VectorIndex.build(np.arange(2000), vectors, VectorOptions())
    fill_disk(small_disk, leave_bytes=64 * 1024)
    target = small_disk / "vectors" / "1.g1.faiss"
    with pytest.raises(OSError) as raised:
        index.save(target)
    assert raised.value.errno == errno.ENOSPC
    assert list(target.parent.iterdir()) == []


@pytest.mark.slow
async def test_upload_and_ingest_on_a_full_disk_say_so_and_a_retry_finishes(tmp_path, small_disk, settings_factory,
                                                                           make_services, embedder):
    """The full-disk probes through the API: an upload is 507 with nothing kept; a job the disk stops fails
    its file with kind `no_space`, leaves no index file half-written and a sound store; once space is freed
    `POST /api/jobs/{id}/retry` reads the file again and the job finishes."""
    from litestar.testing import AsyncTestClient

    settings = settings_factory(data_dir=small_disk / "data", ingest={"run_worker": False})
    services = make_services(settings)
    words = "the key of each room is kept in a drawer by the door of the office on this floor".split()
    rng = np.random.default_rng(7)
    text = "# Rooms\n\n" + "".join(" ".join(rng.choice(words, 120)) + ".\n\n" for _ in range(100)) + \
        "The boiler is serviced every October.\n"  # ~50 KB: its chunks, full-text rows and vectors need ~200 KB
    upload = {"headers": {"X-Requested-By": "test"}, "files": [("f", ("rooms.md", text.encode(), "text/markdown"))]}
    uploads = settings.data_dir / "uploads"
    worker = Worker(settings, store=services.store, embedder=embedder)
    async with AsyncTestClient(app=create_app(settings, services)) as client:
        fill_disk(small_disk, leave_bytes=0)
        refused = await client.post("/api/collections/office/documents", **upload)
        assert refused.status_code == 507 and refused.json()["code"] == "no_space", refused.text
        assert "disk is full" in refused.json()["detail"]
        assert not any(p.is_file() for p in uploads.rglob("*")) and not list(uploads.glob(".staging-*"))
        assert Jobs(services.store.engine).list() == []
        (small_disk / "filler").unlink()

        queued = await client.post("/api/collections/office/documents", **upload)
        assert queued.status_code == 202, queued.text
        job_id = queued.json()["job"]
        with services.store.engine.connect() as conn:  # the log's pages reused from its start: a write must grow it
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        fill_disk(small_disk, leave_bytes=128 * 1024)  # room for the job's own rows, not for the file's chunks
        worker.run(once=True)
        job = (await client.get(f"/api/jobs/{job_id}")).json()
        files = (await client.get(f"/api/jobs/{job_id}/files")).json()
        print(f"disk full: {json.dumps({k: job.get(k) for k in ('status', 'files_failed', 'error')})}")
        assert job["status"] == "failed" and job["files_failed"] == 1 and "no space" in job["error"]
        assert [(e["path"], e["kind"]) for e in job["errors"]] == [("rooms.md", "no_space")], job["errors"]
        assert [f["state"] for f in files["files"]] == ["failed"]
        vectors = settings.data_dir / "vectors"
        assert all(p.suffix == ".faiss" and p.stat().st_size > 0 for p in vectors.glob("*")), list(vectors.glob("*"))
        with services.store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"

        (small_disk / "filler").unlink()
        retried = await client.post(f"/api/jobs/{job_id}/retry")
        assert retried.status_code == 202, retried.text
        worker.run(once=True)
        again = (await client.get(f"/api/jobs/{retried.json()['job']}")).json()
        assert again["status"] == "done" and again["files_failed"] == 0, again
        found = await client.get("/api/search", params={"q": "boiler serviced October", "collection": "office"})
        assert found.status_code == 200 and "rooms.md" in found.text
        with services.store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
