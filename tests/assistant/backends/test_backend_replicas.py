"""The `openai` backend over several real replicas (`python -m llama_cpp.server`, the packaged GGUF):
least-in-flight routing, a stopped replica skipped and found again, per-request deadlines, and a
backend that is down from the start, seen through the app."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from litestar.testing import AsyncTestClient

from assistant.app import create_app
from assistant.backends.base import BackendError, GenParams
from assistant.backends.factory import create_backend
from evals.local_server import free_port, serve_in_thread
from assistant.services import Services
from indexes.store import Store
from tests.support.stores import write_pages
from tests.support.llama_server import LlamaServer
from tests.support.wait import async_wait_until

QUESTION = [{"role": "user", "content": "Question: What is the capital of France?\nAnswer:"}]
COUNTING = [{"role": "user", "content": "Count from one to five hundred: one, two, three,"}]
DOCS = {
    "travel.md": ("Travel", "Flights are booked through the travel desk at least 14 days before departure."),
    "leave.md": ("Leave", "Annual leave accrues at four hours per pay period."),
}


@pytest.fixture(scope="module")
def replicas(gguf_path, tmp_path_factory):
    """Two llama.cpp servers on their own ports."""
    pytest.importorskip("sse_starlette", reason="the llama-cpp-python[server] extra is not installed")
    log_dir = tmp_path_factory.mktemp("replicas")
    servers = []
    try:
        for _ in range(2):
            servers.append(LlamaServer(gguf_path, log_dir).start())
        yield servers
    finally:
        for s in servers:
            s.stop()


def openai_settings(settings_factory, urls: list[str], **extra):
    cfg = {"base_urls": urls, "prompt_style": "completion", "context_window": 2048, "retry_unhealthy_s": 1.0, **extra}
    return settings_factory(backend="openai", openai=cfg, generation={"max_tokens": 12, "temperature": 0})


def fill(settings, embedder) -> Store:
    store = Store(settings.data_dir)
    write_pages(store, embedder, "handbook", DOCS)
    return store


async def collect(stream) -> list[str]:
    return [piece async for piece in stream]


@pytest.mark.slow
async def test_each_request_goes_to_the_replica_with_fewest_in_flight(replicas, settings_factory):
    backend = create_backend(openai_settings(settings_factory, [s.url for s in replicas]))
    try:
        first = backend.stream(COUNTING, GenParams(max_tokens=200, temperature=0))
        await anext(first)  # running on one replica
        second = backend.stream(COUNTING, GenParams(max_tokens=200, temperature=0))
        await anext(second)
        assert [r.in_flight for r in backend.replicas.all] == [1, 1], "the second request went to the idle replica"
        await first.aclose()
        await second.aclose()
        assert [r.in_flight for r in backend.replicas.all] == [0, 0]
    finally:
        await backend.aclose()


@pytest.mark.slow
async def test_with_one_replica_stopped_every_request_succeeds_and_it_is_found_again(replicas, settings_factory, embedder):
    settings = openai_settings(settings_factory, [s.url for s in replicas])
    store = fill(settings, embedder)
    backend = create_backend(settings)
    services = Services.assemble(settings, store, embedder, backend)
    stopped, restarted = replicas[1], backend.replicas.all[1]
    body = {"question": "How early are flights booked?", "collection": "handbook"}
    try:
        with serve_in_thread(create_app(settings, services)) as server:
            async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:

                async def ask() -> str:
                    return (await client.post("/api/ask", json=body)).text

                stopped.stop()
                answers = await asyncio.gather(*(ask() for _ in range(6)))
                assert all("event: done" in a and "event: error" not in a for a in answers), answers
                assert "refused" in restarted.last_error or "failed" in restarted.last_error, "it was tried and set aside"
                health = (await client.get("/health")).json()
                assert health["status"] == "ok" and "1 of 2 replicas up" in health["backend"]["detail"]
                assert stopped.url in health["backend"]["detail"]

                stopped.start()  # the same port, as a restarted server
                await async_wait_until(lambda: restarted.up, timeout=30,
                                       what="the set-aside replica coming due for a retry (retry_unhealthy_s)")
                served = restarted.served
                answers = await asyncio.gather(*(ask() for _ in range(4)))
                assert all("event: done" in a for a in answers), answers
                assert restarted.served > served, "the restarted replica takes requests again"
                assert "2 of 2 replicas up" in (await client.get("/health")).json()["backend"]["detail"]
        assert [r.in_flight for r in backend.replicas.all] == [0, 0]
    finally:
        if stopped.proc is None or stopped.proc.poll() is not None:
            stopped.start()
        await backend.aclose()
        store.close()


@pytest.mark.slow
async def test_a_request_longer_than_its_deadline_ends_with_a_backend_error(replicas, settings_factory):
    # 3 s: a warm replica streams its first token in well under a second even beside other tests, and
    # needs some 50 s for the whole count on this CPU.
    # Warmed through a backend of its own with a long deadline: a cold first request beside other tests
    # can take longer than the deadline under test.
    warming = create_backend(openai_settings(settings_factory, [replicas[0].url], timeout_s=60.0))
    try:
        warm = warming.stream(COUNTING, GenParams(max_tokens=1, temperature=0))
        assert [p async for p in warm]  # the model loaded and the prompt's prefix cached
    finally:
        await warming.aclose()
    backend = create_backend(openai_settings(settings_factory, [replicas[0].url], timeout_s=3.0))
    pieces: list[str] = []
    try:
        started = time.monotonic()
        with pytest.raises(BackendError, match=r"timed out|longer than 3 s"):
            async for piece in backend.stream(COUNTING, GenParams(max_tokens=1000, temperature=0)):
                pieces.append(piece)
        assert time.monotonic() - started < 7
        assert pieces, "tokens flowed until the deadline"
        assert backend.replicas.all[0].in_flight == 0
    finally:
        await backend.aclose()


async def test_backend_down_at_start_degrades_health_and_ask_errors_promptly(settings_factory, embedder):
    urls = [f"http://127.0.0.1:{free_port()}/v1", f"http://127.0.0.1:{free_port()}/v1"]
    settings = openai_settings(settings_factory, urls)
    store = fill(settings, embedder)
    backend = create_backend(settings)
    services = Services.assemble(settings, store, embedder, backend)
    try:
        async with AsyncTestClient(app=create_app(settings, services), timeout=30) as client:
            r = await client.get("/health")
            assert r.status_code == 503
            detail = r.json()["backend"]["detail"]
            assert r.json()["status"] == "degraded" and "no replica can be reached" in detail and urls[0] in detail
            started = time.monotonic()
            r = await client.post("/api/ask", json={"question": "How early are flights booked?", "collection": "handbook"})
            assert time.monotonic() - started < 5
            assert "event: error" in r.text and "backend_error" in r.text and "unreachable" in r.text
    finally:
        await backend.aclose()
        store.close()
