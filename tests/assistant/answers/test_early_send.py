"""A prompt sent before it is counted: the count beside the answer, and a prompt that turns out too long.

The echo backend stands in for a server whose exact count is a round trip; it guesses its counts as a
remote backend does after its first exact one (openai_server.likely_tokens). The real engine's path is in
tests/assistant/backends/test_llama_server.py.
"""

from __future__ import annotations

import asyncio

import pytest

from assistant.answers import absent_terms
from assistant.answers.absent_terms import unmatched_words
from assistant.answers.early_send import Started
from assistant.answers.prompts import build_prompt, early_prompt, sources_shown
from assistant.answers.rag import AnswerPolicy, prepare
from tests.support.answering import answer
from assistant.backends.echo import EchoBackend
from indexes.retrieval.retriever import Retriever
from tests.support.stores import write_pages

DOCS = {
    "travel/booking.md": ("Booking travel", ["Book flights through the travel desk at least 14 days before departure. " * 6,
                                            "Hotels need the approval of your manager. " * 6]),
    "leave/vacation.md": ("Vacation", ["Annual leave accrues at four hours per pay period. " * 6]),
    "tools/laptops.md": ("Laptops", ["New staff receive a laptop on their first day from the IT help desk. " * 6]),
}
QUESTION = "How early must flights be booked?"


class Guessing(EchoBackend):
    """Echo that guesses its counts as `factor` times the exact one, and keeps every stream it opens."""

    def __init__(self, factor: float | None, context_window: int = 4096) -> None:
        super().__init__(context_window=context_window, delay_s=0.001)
        self.factor = factor
        self.opened: list = []
        self.counts = 0

    def count_tokens(self, messages):
        self.counts += 1
        return super().count_tokens(messages)

    def likely_tokens(self, messages):
        return None if self.factor is None else int(super().count_tokens(messages) * self.factor)

    def stream(self, messages, params):
        s = super().stream(messages, params)
        self.opened.append((messages, s))
        return s


@pytest.fixture
def retriever(store, embedder):
    write_pages(store, embedder, "handbook", DOCS, headings=True)
    return Retriever(store, embedder)


def test_an_early_prompt_only_where_the_guess_fits_and_nothing_came_before(retriever):
    hits = retriever.search(QUESTION, ["handbook"], 4)
    assert early_prompt(QUESTION, hits, Guessing(None), 64, 16) is None, "no guess before an exact count"
    assert early_prompt(QUESTION, hits, Guessing(1.0), 64, 16, history=[{"role": "user", "content": "Hi"}]) is None
    assert early_prompt(QUESTION, [], Guessing(1.0), 64, 16) is None
    exact = build_prompt(QUESTION, hits, Guessing(None), 64, 16)
    assert early_prompt(QUESTION, hits, Guessing(1.0, context_window=exact.prompt_tokens + 79), 64, 16) is None
    early = early_prompt(QUESTION, hits, Guessing(1.0, context_window=exact.prompt_tokens + 80), 64, 16)
    assert early is not None and not early.counted
    assert early.messages == exact.messages and early.sources_used == exact.sources_used


async def test_a_prompt_that_fits_is_counted_beside_its_answer(retriever, settings_factory):
    settings = settings_factory(retrieval={"k": 4})
    counted = await collect(answer(QUESTION, ["handbook"], retriever=retriever, backend=Guessing(None), policy=AnswerPolicy.of(settings)))
    backend = Guessing(1.0)
    early = await collect(answer(QUESTION, ["handbook"], retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings)))
    assert [e.type for e in early] == [e.type for e in counted]
    assert [e.data for e in early if e.type != "done"] == [e.data for e in counted if e.type != "done"]
    done, before = early[-1].data, counted[-1].data
    assert done["prompt_tokens"] == before["prompt_tokens"] and done["answer"] == before["answer"]
    assert done["timings"]["early_count_ms"] >= 0 and before["timings"]["early_count_ms"] is None
    assert len(backend.opened) == 1 and backend.counts == 1, "one request, one count"


async def test_a_prompt_the_count_finds_too_long_is_taken_back_and_sent_again_fitted(retriever, settings_factory):
    settings = settings_factory(retrieval={"k": 4}, generation={"max_tokens": 64, "margin_tokens": 16})
    hits = retriever.search(QUESTION, ["handbook"], 4)
    whole = build_prompt(QUESTION, hits, Guessing(None), 64, 16)
    window = whole.prompt_tokens + 80 - 40  # forty tokens short of every source
    backend = Guessing(0.5, context_window=window)  # and a guess that says they fit
    events = await collect(answer(QUESTION, ["handbook"], retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings)))
    assert [e.type for e in events][0] == "retrieved" and events[-1].type == "done"
    done = events[-1].data
    assert done["prompt_tokens"] <= window - 80 and done["timings"]["early_count_ms"] is not None
    assert len(backend.opened) == 2
    (first, taken_back), (second, _) = backend.opened
    assert first == whole.messages and taken_back.ag_frame is None, "the early request was aborted"
    fitted = build_prompt(QUESTION, hits, Guessing(None, context_window=window), 64, 16)
    assert second == fitted.messages and len(fitted.sources_used) < len(whole.sources_used)
    shown = events[0].data["sources"]
    assert len(shown) == len(fitted.sources_used), "the sources shown are those of the prompt answered"


async def test_closing_before_the_first_piece_aborts_the_request():
    sent, released = asyncio.Event(), asyncio.Event()

    async def never_answers():
        sent.set()
        try:
            await asyncio.Event().wait()
            yield "late"
        finally:
            released.set()

    started = Started(never_answers())
    await asyncio.wait_for(sent.wait(), 5)  # the request is on its way, before anyone reads
    await asyncio.wait_for(started.aclose(), 5)
    assert released.is_set()


async def test_an_unread_prepared_answer_gives_its_request_back(retriever, settings_factory):
    settings = settings_factory(retrieval={"k": 4})
    backend = Guessing(1.0)
    await collect(answer(QUESTION, ["handbook"], retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings)))
    prepared = await prepare(QUESTION, ["handbook"], retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings))
    assert not prepared.prompt.counted
    await prepared.aclose()
    assert backend.opened[-1][1].ag_frame is None


async def test_a_prompt_rebuilt_with_fewer_sources_is_checked_again_for_the_words_of_the_question(
        retriever, settings_factory, monkeypatch):
    """A word of the question that only a dropped source held is one the rebuilt prompt lacks: the answer
    is then the statement that the documents do not mention it, as when the first prompt had lacked it."""
    monkeypatch.setattr(absent_terms, "MIN_PASSAGES", 3)  # these four passages are weighed
    monkeypatch.setattr(absent_terms, "RARE_SHARE", 0.5)  # a word in at most two of them is a rare one
    question = "What days before departure do new staff book flights, per manager?"
    settings = settings_factory(retrieval={"k": 4}, generation={"max_tokens": 64, "margin_tokens": 16, "absent_words": "on"})
    hits = retriever.search(question, ["handbook"], 4)
    whole = build_prompt(question, hits, Guessing(None), 64, 16)
    window = whole.prompt_tokens + 80 - 40
    fitted = build_prompt(question, hits, Guessing(None, context_window=window), 64, 16)
    shown = [" ".join(t for part in sources_shown(p.sources_used) for t in part.values()) for p in (whole, fitted)]
    assert unmatched_words(question, [shown[0]]) == [] and unmatched_words(question, [shown[1]]) == ["manager"]

    backend = Guessing(0.5, context_window=window)  # a guess that says every source fits
    events = await collect(answer(question, ["handbook"], retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings)))
    done = events[-1].data
    assert done["absent_words"] == ["manager"] and "“manager”" in done["answer"]
    assert len(backend.opened) == 1, "the early request was taken back, and no model asked again"
    assert done["prompt_tokens"] == 0 and done["timings"]["early_count_ms"] is not None


async def collect(gen) -> list:
    return [e async for e in gen]
