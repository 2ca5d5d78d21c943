"""The HTTP API in-process (Litestar's test client) with the echo backend over a real store."""

from __future__ import annotations

import json
import logging
import shutil

import httpx
import pytest
from litestar.testing import AsyncTestClient

from assistant.app import create_app
from evals.local_server import serve_in_thread
from assistant.services import Services
from indexes.store import Store
from tests.support.sse import parse_sse
from tests.support.stores import write_pages

PAGES = {
    "travel/booking.md": ("Booking travel", "Book flights through the travel desk at least 14 days before departure."),
    "leave/vacation.md": ("Vacation", "Annual leave accrues at four hours per pay period and carries over up to 240 hours."),
    "tools/laptops.md": ("Laptops", "New staff receive a laptop on their first day from the IT help desk."),
}


def fill(store: Store, embedder) -> None:
    write_pages(store, embedder, "handbook", PAGES, headings=True)


@pytest.fixture
def services(settings_factory, make_services, embedder):
    return make_services(settings_factory(), lambda store: fill(store, embedder))


async def test_ask_streams_tokens_then_cited_sources_then_done(client):
    r = await client.post("/api/ask", json={"question": "How early must flights be booked?", "collection": "handbook"})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(r.text)
    kinds = [k for k, _ in events]
    assert kinds[:2] == ["retrieved", "token"] and kinds[-2:] == ["sources", "done"]
    assert set(kinds[1:-2]) == {"token"}
    answer = "".join(d["text"] for k, d in events if k == "token")
    sources = events[-2][1]["sources"]
    assert answer.strip() and sources
    assert sources[0]["cited"] is True and sources[0]["path"] == "travel/booking.md"
    cited = [s["cited"] for s in sources]
    assert cited == sorted(cited, reverse=True), "cited sources come first"
    for s in sources:
        assert {"n", "path", "title", "score", "snippet", "url", "heading_path", "collection"} <= s.keys()
    assert events[-1][1]["answer"] == answer


@pytest.mark.parametrize(
    "body, status, fragment",
    [
        ({"question": "", "collection": "handbook"}, 400, "empty"),
        ({"question": "   \n ", "collection": "handbook"}, 400, "empty"),
        ({"question": "x" * 5000, "collection": "handbook"}, 400, "too long"),
        ({"question": "hi", "collection": "nope"}, 404, "unknown collection"),
        ({"question": "hi"}, 400, "collection"),
        ({"collection": "handbook"}, 400, "question"),
        ({"question": "hi", "collection": "handbook", "k": 0}, 400, "k"),
    ],
)
async def test_bad_ask_requests_get_a_clear_4xx(client, caplog, body, status, fragment):
    with caplog.at_level(logging.ERROR):
        r = await client.post("/api/ask", json=body)
    assert r.status_code == status
    payload = r.json()
    assert fragment in json.dumps(payload).lower()
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR], "no unhandled exception logged"


async def test_malformed_json_is_a_400(client):
    r = await client.post("/api/ask", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400


async def test_search_collections_documents_and_chunks(client):
    r = await client.get("/api/search", params={"q": "laptop first day", "collection": "handbook", "k": 2})
    assert r.status_code == 200
    hits = r.json()["hits"]
    assert hits[0]["path"] == "tools/laptops.md" and len(hits) == 2

    chunk = (await client.get(hits[0]["url"])).json()
    assert chunk["text"].startswith("New staff receive a laptop")

    (coll,) = (await client.get("/api/collections")).json()
    assert (coll["name"], coll["documents"], coll["chunks"]) == ("handbook", 3, 3)

    docs = (await client.get("/api/collections/handbook/documents")).json()["documents"]
    assert sorted(d["path"] for d in docs) == sorted(PAGES)

    assert (await client.get("/api/collections/nope/documents")).status_code == 404
    assert (await client.get("/api/chunks/999999")).status_code == 404
    assert (await client.get("/api/search", params={"q": "", "collection": "handbook"})).status_code == 400
    assert (await client.get("/api/search", params={"q": "x", "collection": "handbook", "k": 0})).status_code == 400


async def test_search_reports_files_when_asked(client):
    r = await client.get("/api/search", params={"q": "laptop", "collection": "handbook", "k": 5, "group": "files"})
    assert r.status_code == 200 and r.json()["group"] == "files"
    paths = [h["path"] for h in r.json()["hits"]]
    assert paths and len(paths) == len(set(paths))
    bad = await client.get("/api/search", params={"q": "laptop", "collection": "handbook", "group": "folders"})
    assert bad.status_code == 400


async def test_health_and_web_page(client):
    r = await client.get("/health")
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["backend"]["name"] == "echo"
    page = await client.get("/")
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert (await client.get("/static/app.js")).status_code == 200


async def test_faiss_file_deleted_then_restart_gives_the_same_results(services, settings_factory, embedder):
    query = {"q": "how much vacation carries over", "collection": "handbook", "k": 3}
    async with AsyncTestClient(app=create_app(services.settings, services)) as c:
        before = (await c.get("/api/search", params=query)).json()["hits"]
    vectors = services.settings.data_dir / "vectors"
    assert list(vectors.glob("*.faiss")), "the app saved the index on start"
    shutil.rmtree(vectors)

    store = Store(services.settings.data_dir)
    fresh = Services.assemble(services.settings, store, embedder, services.backend)
    async with AsyncTestClient(app=create_app(services.settings, fresh)) as c:
        after = (await c.get("/api/search", params=query)).json()["hits"]
    assert store.vectors.rebuilds == 1
    assert list(vectors.glob("*.faiss")), "the rebuilt index was saved again"
    assert [(h["chunk_id"], h["score"]) for h in after] == [(h["chunk_id"], h["score"]) for h in before]
    store.close()


async def test_status_reports_backend_and_gpus(client):
    body = (await client.get("/api/status")).json()
    assert body["backend"]["name"] == "echo" and body["backend"]["ok"] is True
    assert body["backend"]["in_flight"] == 0
    assert isinstance(body["gpus"], list)  # empty on a machine without NVIDIA GPUs


async def test_filters_restrict_search_and_ask(client):
    params = {"q": "laptop first day", "collection": "handbook", "k": 3, "path": "travel/*"}
    hits = (await client.get("/api/search", params=params)).json()["hits"]
    assert hits and {h["path"] for h in hits} == {"travel/booking.md"}
    r = await client.get("/api/search", params={**params, "modified_after": "not a date"})
    assert r.status_code == 400 and "bad filter" in r.json()["detail"]

    r = await client.post(
        "/api/ask",
        json={"question": "laptop on my first day?", "collection": "handbook", "filters": {"paths": ["leave/*"]}},
    )
    sources = parse_sse(r.text)[-2][1]["sources"]
    assert [s["path"] for s in sources] == ["leave/vacation.md"]


@pytest.mark.slow
def test_answers_start_before_their_first_token_and_a_full_queue_is_a_429(settings_factory, embedder, llama):
    """Real HTTP over llama.cpp in-process (one running, one waiting at most): the response of an
    admitted question starts at once, while the model works; the question beyond the queue gets 429."""
    settings = settings_factory(generation={"max_tokens": 48, "temperature": 0})
    store = Store(settings.data_dir)
    fill(store, embedder)
    services = Services.assemble(settings, store, embedder, llama)
    body = {"question": "How early must flights be booked?", "collection": "handbook"}
    try:
        with serve_in_thread(create_app(settings, services)) as server, httpx.Client(base_url=server.url, timeout=120) as http:
            with http.stream("POST", "/api/ask", json=body) as running, http.stream("POST", "/api/ask", json=body) as waiting:
                assert running.status_code == waiting.status_code == 200
                assert llama.queued == 2  # both admitted before either had a token
                refused = http.post("/api/ask", json=body)
                assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
                assert "busy" in refused.json()["detail"]
                events = parse_sse("".join(waiting.iter_text()))
            assert [e for e, _ in events][-2:] == ["sources", "done"]
        assert llama.queued == 0
    finally:
        store.close()
