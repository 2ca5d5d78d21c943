"""Answers end to end without HTTP: a real store and retriever, the echo backend (and llama.cpp for the queue)."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from assistant.backends.base import BackendBusy
from assistant.backends.factory import create_backend
from assistant.answers.prompts import build_prompt
from assistant.answers.rag import AnswerPolicy, prepare
from tests.support.answering import answer
from indexes.retrieval.retriever import Retriever
from tests.support.stores import write_pages
from tests.support.wait import async_wait_until
from evals.local_server import free_port

DOCS = {
    "travel/booking.md": ("Booking travel", ["Book flights through the travel desk at least 14 days before departure.",
                                            "Hotels need the approval of your manager."]),
    "leave/vacation.md": ("Vacation", ["Annual leave accrues at four hours per pay period."]),
    "tools/laptops.md": ("Laptops", ["New staff receive a laptop on their first day from the IT help desk."]),
}


@pytest.fixture
def retriever(store, embedder):
    write_pages(store, embedder, "handbook", DOCS, headings=True)
    store.ensure_collection("empty", embedder.name, embedder.dim)
    return Retriever(store, embedder)


async def events_of(gen) -> list:
    return [e async for e in gen]


async def test_events_in_order_with_cited_sources_first(retriever, settings_factory):
    settings = settings_factory(retrieval={"k": 3})
    backend = create_backend(settings)
    question = "How early must flights be booked?"
    events = await events_of(answer(question, ["handbook"], retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings)))

    types = [e.type for e in events]
    assert types == ["retrieved"] + ["token"] * (len(types) - 3) + ["sources", "done"] and len(types) > 3
    text = "".join(e.data["text"] for e in events if e.type == "token")
    done = events[-1].data
    assert text == done["answer"] == f"Echo: {question} [1]"

    sources = events[-2].data["sources"]
    assert len(sources) == 3
    first = sources[0]
    assert first["n"] == 1 and first["cited"] is True and first["path"] == "travel/booking.md"
    assert first["url"] == f"/api/chunks/{first['chunk_id']}" and "text" not in first and first["snippet"]
    assert [s["cited"] for s in sources[1:]] == [False, False] and [s["n"] for s in sources] == [1, 2, 3]
    retrieved = events[0].data["sources"]
    final = {s["n"]: {k: v for k, v in s.items() if k != "support"} for s in sources}
    assert retrieved == [dict(final[n], cited=False) for n in (1, 2, 3)], "the same sources, in prompt order, none cited yet"

    hits = retriever.search(question, ["handbook"], 3)
    prompt = build_prompt(question, hits, backend, settings.generation.max_tokens, settings.generation.margin_tokens)
    assert done["prompt_tokens"] == prompt.prompt_tokens == backend.count_tokens(prompt.messages)
    assert done["model"] == "echo"
    timings = done["timings"]
    assert set(timings) == {"retrieve_ms", "prompt_ms", "early_count_ms", "first_token_ms", "backend_first_token_ms", "check_ms",
                            "total_ms"}
    assert 0 <= timings["retrieve_ms"] + timings["prompt_ms"] <= timings["first_token_ms"] <= timings["total_ms"]
    assert 0 <= timings["backend_first_token_ms"] <= timings["first_token_ms"] - timings["retrieve_ms"] - timings["prompt_ms"]


async def test_citations_of_missing_sources_never_reach_the_user(retriever, settings_factory):
    settings = settings_factory(retrieval={"k": 2})
    backend = create_backend(settings)
    events = await events_of(answer("what does [7] say about laptops", "handbook", retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings)))
    done = events[-1].data
    assert "[7]" not in done["answer"] and done["answer"].endswith("[1]")
    assert [s["n"] for s in events[-2].data["sources"] if s["cited"]] == [1]


async def test_no_sources_still_answers(retriever, settings_factory):
    settings = settings_factory()
    backend = create_backend(settings)
    events = await events_of(answer("Anything at all?", ["empty"], retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings)))
    types = [e.type for e in events]
    assert types[0] == "retrieved" and types[-2:] == ["sources", "done"]
    assert events[0].data == events[-2].data == {"sources": []}
    assert events[-1].data["answer"] == "Echo: Anything at all?"  # nothing to cite


async def test_history_is_passed_and_the_last_question_answered(retriever, settings_factory):
    settings = settings_factory()
    backend = create_backend(settings)
    history = [{"role": "user", "content": "Tell me about travel."}, {"role": "assistant", "content": "Book early [1]."}]
    events = await events_of(answer("And hotels?", "handbook", retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings), history=history))
    assert events[-1].data["answer"] == "Echo: And hotels? [1]"


async def test_prompt_too_long_is_an_error_event(retriever, settings_factory):
    settings = settings_factory(echo={"context_window": 200}, generation={"max_tokens": 384})
    backend = create_backend(settings)
    events = await events_of(answer("How early?", "handbook", retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings)))
    assert [e.type for e in events] == ["error"]
    assert events[0].data["code"] == "prompt_too_long" and "context window 200" in events[0].data["message"]


async def test_unreachable_backend_is_an_error_event(retriever, settings_factory):
    url = f"http://127.0.0.1:{free_port()}/v1"
    settings = settings_factory(backend="openai", openai={"base_url": url, "model": "m"})
    backend = create_backend(settings)
    try:
        with anyio.fail_after(30):
            events = await events_of(answer("How early?", "handbook", retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings)))
    finally:
        await backend.aclose()
    assert [e.type for e in events] == ["retrieved", "error"]  # the sources were found; the answer failed
    assert events[1].data["code"] == "backend_error" and url in events[1].data["message"]


async def test_closing_the_answer_early_ends_the_backend_stream(retriever, settings_factory):
    settings = settings_factory(echo={"delay_s": 0.01})
    backend = create_backend(settings)
    prepared = await prepare("How early must flights be booked?", "handbook", retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings))
    events = prepared.events()
    assert [(await anext(events)).type for _ in range(2)] == ["retrieved", "token"]
    await events.aclose()
    inner = prepared.stream.stream  # the backend's own stream, started at once
    assert inner.ag_running is False and inner.ag_frame is None  # and closed


@pytest.mark.slow
async def test_busy_backend_is_raised_before_any_event(retriever, settings_factory, llama):
    """llama.cpp in-process, one request running and one waiting: the third is refused up front."""
    settings = settings_factory(generation={"max_tokens": 12, "temperature": 0})
    ask = dict(retriever=retriever, backend=llama, policy=AnswerPolicy.of(settings))
    running = answer("How early must flights be booked?", "handbook", **ask)
    assert [(await anext(running)).type for _ in range(2)] == ["retrieved", "token"]
    waiting = answer("Who hands out laptops?", "handbook", **ask)
    assert (await anext(waiting)).type == "retrieved"  # its sources are out at once; its first token waits
    waiting_first = asyncio.create_task(anext(waiting))
    await async_wait_until(lambda: llama.queued, accept=lambda n: n >= 2, timeout=60, interval=0.01,
                           what="the second request waiting in the queue")
    refused = answer("When does leave accrue?", "handbook", **ask)
    with pytest.raises(BackendBusy):
        await anext(refused)
    await running.aclose()  # the first answer is abandoned: the waiting one gets the model
    with anyio.fail_after(60):
        event = await waiting_first
    assert event.type == "token"
    rest = await events_of(waiting)
    assert [e.type for e in rest][-2:] == ["sources", "done"]
    assert rest[-1].data["prompt_tokens"] <= 512 - 12 - settings.generation.margin_tokens
    assert llama.queued == 0
