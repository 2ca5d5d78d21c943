"""Two server replicas on one PostgreSQL store, each with its own data dir (FAISS files, FTS5 copy):
a document uploaded through A is found through B within 2 s of its ingestion, and each replica keeps
answering while the other restarts. Real HTTP (uvicorn on 127.0.0.1), a real worker, real PostgreSQL."""

from __future__ import annotations

import contextlib
import threading
import time

import httpx
import pytest

from assistant.app import create_app
from assistant.backends.factory import create_backend
from assistant.services import Services
from evals.local_server import serve_in_thread
from indexes.store import Store
from ingest.worker import Worker
from tests.support.stores import write_pages
from tests.support.wait import wait_until

FACT = "The Zephyrine archive is opened with the brass key kept in cabinet forty-two."
QUESTION = {"q": "which key opens the Zephyrine archive", "collection": "wiki", "k": 3}


@contextlib.contextmanager
def replica(settings_factory, embedder, name: str, url: str):
    """One replica, as a process would run it: its own store objects over the shared database."""
    settings = settings_factory(data_dir=settings_factory().data_dir.parent / name, database_url=url)
    store = Store(settings.data_dir, database_url=url)
    services = Services.assemble(settings, store, embedder, create_backend(settings))
    try:
        with serve_in_thread(create_app(settings, services)) as server:
            yield server.url
    finally:
        store.close()


def paths_found(base: str) -> list[str]:
    r = httpx.get(f"{base}/api/search", params=QUESTION, timeout=30)
    r.raise_for_status()
    return [h["path"] for h in r.json()["hits"]]


def keep_asking(base: str, stop: threading.Event, answers: list) -> None:
    while not stop.is_set():
        try:
            answers.append(paths_found(base)[:1])
        except httpx.HTTPError as exc:
            answers.append(exc)
        time.sleep(0.1)


@pytest.mark.slow
def test_two_replicas_share_one_store(settings_factory, embedder, pg_url, tmp_path):
    seed = Store(tmp_path / "seed", database_url=pg_url)
    write_pages(seed, embedder, "wiki", {f"page{i}.md": (f"Page {i}", f"Notes about topic {i} and its meetings.")
                                         for i in range(20)})
    seed.close()
    upload = tmp_path / "archive.md"
    upload.write_text(f"# Archive\n\n{FACT}\n")
    worker = Worker(settings_factory(data_dir=tmp_path / "worker", database_url=pg_url),
                    Store(tmp_path / "worker", database_url=pg_url), embedder=embedder)
    threading.Thread(target=worker.run, daemon=True).start()
    try:
        with replica(settings_factory, embedder, "a", pg_url) as a, replica(settings_factory, embedder, "b", pg_url) as b:
            assert "archive.md" not in paths_found(b)
            with upload.open("rb") as fh:
                job = httpx.post(f"{a}/api/collections/wiki/documents", files={"file": ("archive.md", fh)},
                                 headers={"X-Requested-By": "test"}, timeout=30).json()
            wait_until(lambda: httpx.get(f"{a}/api/jobs/{job['job']}", timeout=30).json()["status"],
                       accept=lambda status: status == "done", timeout=120, interval=0.1, what="the upload's ingestion")
            ingested = time.monotonic()
            wait_until(lambda: paths_found(b)[:1], accept=lambda top: top == ["archive.md"], timeout=2.0,
                       what="replica B finding the new document within 2 s of its ingestion")
            print(f"\nthe document ingested through A was found through B after {time.monotonic() - ingested:.3f} s")
            answer = httpx.post(f"{b}/api/ask", json={"question": QUESTION["q"], "collections": ["wiki"]}, timeout=60)
            assert answer.status_code == 200 and "archive.md" in answer.text

        # Each replica answers while the other goes down and comes back.
        for steady, restarting in (("a", "b"), ("b", "a")):
            with replica(settings_factory, embedder, steady, pg_url) as up:
                stop, answers = threading.Event(), []
                asker = threading.Thread(target=keep_asking, args=(up, stop, answers))
                asker.start()
                with replica(settings_factory, embedder, restarting, pg_url) as back:
                    assert paths_found(back)[:1] == ["archive.md"]  # it caught up from its own files
                stop.set()
                asker.join()
                assert answers and all(x == ["archive.md"] for x in answers), answers[:5]
    finally:
        worker.stop.set()
        worker.store.close()
