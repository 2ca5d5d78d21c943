"""GET /metrics: Litestar's request series per route template and the app's own answer, ingestion and
collection series, after real questions over real HTTP."""

from __future__ import annotations

import httpx
import pytest
from litestar.testing import AsyncTestClient
from prometheus_client.parser import text_string_to_metric_families

from assistant.app import create_app
from assistant.services import Services
from evals.local_server import serve_in_thread
from indexes.jobs import FileState, Jobs
from indexes.store import Store
from tests.assistant.test_app import fill
from tests.support.sse import parse_sse

QUESTION = {"question": "How early must flights be booked?", "collection": "handbook"}


def samples(text: str) -> dict[str, list[tuple[dict, float]]]:
    """sample name -> [(labels, value)] of a Prometheus text page."""
    out: dict[str, list[tuple[dict, float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def total(page: dict, name: str, **labels: str) -> float:
    return sum(v for l, v in page.get(name, []) if all(l.get(k) == want for k, want in labels.items()))


def queue_ingestion(store: Store) -> None:
    """A job with a file waiting, one being parsed and one that failed (as a worker records them)."""
    coll = store.require_collection("handbook")
    jobs = Jobs(store.engine)
    job = jobs.enqueue(coll.id, coll.name, {"paths": []})
    jobs.add_files(job.id, [FileState("a.md", "pending"), FileState("b.md", "parsing"),
                            FileState("c.md", "failed", reason="binary file")])


@pytest.mark.slow
def test_after_questions_every_series_has_counts(settings_factory, embedder, llama):
    """Real HTTP, the real model (one running, one waiting at most): two questions answered, one refused."""
    settings = settings_factory(backend="llamacpp", generation={"max_tokens": 24, "temperature": 0})
    store = Store(settings.data_dir)
    fill(store, embedder)
    queue_ingestion(store)
    services = Services.assemble(settings, store, embedder, llama)
    try:
        with serve_in_thread(create_app(settings, services)) as server, httpx.Client(base_url=server.url, timeout=120) as http:
            with http.stream("POST", "/api/ask", json=QUESTION) as running, http.stream("POST", "/api/ask", json=QUESTION) as waiting:
                assert http.post("/api/ask", json=QUESTION).status_code == 429
                running.read(), waiting.read()
            r = http.post("/v1/chat/completions", json={"model": "rag:handbook", "messages": [{"role": "user", "content": "Vacation?"}]})
            assert r.status_code == 200
            assert http.get("/api/collections/handbook/documents").status_code == 200
            page = http.get("/metrics")
    finally:
        store.close()
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    m = samples(page.text)
    assert total(m, "assistant_http_requests_total", path="/api/ask", status_code="200") >= 2
    assert total(m, "assistant_http_requests_total", path="/api/ask", status_code="429") >= 1
    assert total(m, "assistant_http_requests_total", path="/v1/chat/completions") >= 1
    paths = {labels["path"] for labels, _ in m["assistant_http_requests_total"]}
    assert "/api/collections/{name}/documents" in paths and "/api/collections/handbook/documents" not in paths
    assert total(m, "assistant_http_request_duration_seconds_count", path="/api/ask") >= 2
    assert total(m, "assistant_retrieval_seconds_count") == 3 and total(m, "assistant_retrieval_seconds_sum") > 0
    assert total(m, "assistant_time_to_first_token_seconds_count") == 3
    assert total(m, "assistant_time_to_first_token_seconds_sum") > 0
    assert total(m, "assistant_generated_tokens_total") >= 3
    assert total(m, "assistant_busy_rejections_total") == 1
    assert total(m, "assistant_answers_total", outcome="done") == 3
    assert total(m, "assistant_answers_in_flight") == 0  # every answer ended
    assert total(m, "assistant_collection_chunks", collection="handbook") == 3
    for state in ("queued", "running", "failed"):
        assert total(m, "assistant_ingest_files", collection="handbook", state=state) == 1, state


def test_answers_in_flight_counts_a_streaming_answer(settings_factory, make_services, embedder):
    settings = settings_factory(echo={"delay_s": 0.3})  # about 2 s for the answer
    services = make_services(settings, lambda store: fill(store, embedder))
    with serve_in_thread(create_app(settings, services)) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        with http.stream("POST", "/api/ask", json=QUESTION) as r:
            lines = r.iter_lines()  # kept: an iterator dropped closes the response (a disconnect)
            assert next(line for line in lines if line.startswith("event: ") and line != "event: retrieved") == (
                "event: token")  # the first token is out; the rest is being generated
            assert total(samples(http.get("/metrics").text), "assistant_answers_in_flight") == 1
            rest = parse_sse("\n".join(["event: token", *lines]))
            assert rest[-1][0] == "done" and rest[-1][1]["answer"], rest[-1]
        assert total(samples(http.get("/metrics").text), "assistant_answers_in_flight") == 0


async def test_each_app_counts_its_own_answers_and_metrics_can_be_off(settings_factory, make_services, embedder):
    settings = settings_factory()
    services = make_services(settings, lambda store: fill(store, embedder))
    async with AsyncTestClient(app=create_app(settings, services)) as first:
        assert (await first.post("/api/ask", json=QUESTION)).status_code == 200
        async with AsyncTestClient(app=create_app(settings, services)) as second:
            one = samples((await first.get("/metrics")).text)
            two = samples((await second.get("/metrics")).text)
    assert total(one, "assistant_answers_total") == 1 and total(two, "assistant_answers_total") == 0
    assert total(one, "assistant_generated_tokens_total") > 0  # echo reports no count: the pieces are counted
    off = settings.model_copy(update={"server": settings.server.model_copy(update={"metrics": False})})
    async with AsyncTestClient(app=create_app(off, services)) as quiet:
        assert (await quiet.get("/metrics")).status_code == 404
        assert (await quiet.post("/api/ask", json=QUESTION)).status_code == 200
