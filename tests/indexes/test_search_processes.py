"""Searches in worker processes (spawned, each with its own store connections, indexes and embedder):
the same hits as a search here, a burst shared between here and there with every caller getting its own,
a worker's error reaching the caller, and a killed worker costing no search."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from assistant.settings import Settings
from indexes.factory import retriever_from, search_processes_from
from indexes.retrieval.retriever import Retriever
from indexes.store import Store, StoreError
from tests.support.stores import write_pages

pytestmark = pytest.mark.slow  # two processes load the embedder, twice

PAGES = {
    "travel/booking.md": ("Booking travel", ["Book flights through the travel desk at least 14 days before departure.",
                                            "Hotels need the approval of your manager."]),
    "leave/vacation.md": ("Vacation", ["Annual leave accrues at four hours per pay period."]),
    "tools/laptops.md": ("Laptops", ["New staff receive a laptop on their first day from the IT help desk."]),
    "food/sourdough.md": ("Sourdough", ["Feed the starter every twelve hours with equal weights of flour and water."]),
}
QUESTIONS = ["How early must flights be booked?", "Who approves hotels?", "How does annual leave accrue?",
             "When do new staff get a laptop?", "How often is the starter fed?", "What does the travel desk do?"]


@pytest.fixture(scope="module")
def searching(tmp_path_factory, embedder):
    """A retriever with one turn here and two search processes over the same SQLite store (the only kind
    they serve: settings refuse them with database_url)."""
    data = tmp_path_factory.mktemp("searching") / "data"
    store = Store(data)
    write_pages(store, embedder, "handbook", PAGES, headings=True)
    settings = Settings(data_dir=data, backend="echo", retrieval={"search_processes": 2, "searches_at_once": 1})
    retriever = retriever_from(settings.retrieval, store, embedder, settings.embedder)
    retriever.processes = search_processes_from(settings.retrieval, store.data_dir, "", settings.embedder)
    assert len(retriever.processes.start()) == 2
    yield retriever
    retriever.processes.close()
    store.close()


def found(hits) -> list[tuple[int, float]]:
    return [(h.chunk_id, h.score) for h in hits]


def test_a_worker_finds_what_a_search_here_finds(searching):
    for q in QUESTIONS:
        assert found(searching.processes.search(q, ["handbook"], 3)) == found(searching.search(q, ["handbook"], 3))
    hits = searching.processes.search(QUESTIONS[0], ["handbook"], 1, {"paths": ["travel/*"]})
    assert hits[0].path == "travel/booking.md" and hits[0].location.heading_path == "Booking travel"


def test_a_burst_is_shared_between_this_process_and_the_workers_each_caller_its_own(searching):
    here = {q: found(Retriever.search(searching, q, ["handbook"], 3)) for q in QUESTIONS}  # with no turn taken
    before = searching.processes.searched
    start = threading.Barrier(12)

    def ask(q: str):
        start.wait()
        return q, found(searching.search(q, ["handbook"], 3))

    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(ask, QUESTIONS * 2))
    assert all(hits == here[q] for q, hits in answers)
    assert searching.processes.searched > before, "no search of the burst went to a worker"


def test_a_workers_error_reaches_the_caller(searching):
    with pytest.raises(StoreError, match="unknown collection"):
        searching.processes.search(QUESTIONS[0], ["nowhere"], 3)


def test_a_killed_worker_costs_no_search(searching):
    for pid in searching.processes.start():
        os.kill(pid, signal.SIGKILL)
    assert searching.processes.search(QUESTIONS[0], ["handbook"], 3) is None, "with none up, the caller searches"
    hits = searching.search(QUESTIONS[1], ["handbook"], 3)
    assert hits and hits[0].path == "travel/booking.md"
    assert len(searching.processes.start()) == 2, "a new pool starts"
    assert found(searching.processes.search(QUESTIONS[0], ["handbook"], 3)) == found(searching.search(QUESTIONS[0], ["handbook"], 3))


async def test_the_server_starts_its_search_processes_and_stops_them_with_its_services(tmp_path, embedder):
    """Through the app: the lifespan starts the worker (the first burst does not wait for it to load),
    searches are answered, and closing the services stops it."""
    from litestar.testing import AsyncTestClient

    from assistant.app import create_app
    from assistant.backends.factory import create_backend
    from assistant.services import Services

    settings = Settings(data_dir=tmp_path / "data", backend="echo",
                        retrieval={"search_processes": 1, "searches_at_once": 1})
    store = Store(settings.data_dir)
    write_pages(store, embedder, "handbook", PAGES, headings=True)
    services = Services.assemble(settings, store, embedder, create_backend(settings))
    try:
        async with AsyncTestClient(app=create_app(settings, services)) as client:
            assert services.retriever.processes.started, "the lifespan started the worker"
            replies = await asyncio.gather(*[client.get("/api/search", params={"q": q, "collection": "handbook", "k": 2})
                                             for q in QUESTIONS * 2])
            assert [r.status_code for r in replies] == [200] * len(replies)
            firsts = {r.json()["query"]: r.json()["hits"][0]["path"] for r in replies}
            assert firsts["Who approves hotels?"] == "travel/booking.md"
            assert firsts["When do new staff get a laptop?"] == "tools/laptops.md"
            shown = (await client.get("/api/status")).json()["search_processes"]
            assert shown == {"processes": 1, "ready": 1, "searched": services.retriever.processes.searched}
    finally:
        await services.aclose()
    assert not services.retriever.processes.started
    assert services.retriever.processes.search(QUESTIONS[0], ["handbook"], 3) is None, "none started after closing"
    assert not services.retriever.processes.started


def test_settings_refuse_search_processes_on_postgresql(tmp_path):
    with pytest.raises(ValueError, match="SQLite store only"):
        Settings(data_dir=tmp_path, database_url="postgresql+psycopg://u@localhost/db", retrieval={"search_processes": 2})


def _broken() -> None:
    raise RuntimeError("no store here")


def test_workers_that_cannot_start_leave_the_searches_here(caplog):
    from indexes.retrieval.search_processes import SearchProcesses

    broken = SearchProcesses(1, _broken)
    try:
        assert broken.start(timeout=120) == [], "start does not wait out its timeout for a worker that died"
        assert broken.search(QUESTIONS[0], ["handbook"], 3) is None
    finally:
        broken.close()
    assert "did not start" in caplog.text
