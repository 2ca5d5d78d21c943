"""A question asked in a saved conversation: its history from the store, its standalone search query,
and the turn recorded when the answer is done. No HTTP in here: `/api/ask`, `assistant chat` and any
other entry point use it the same way:

    turn = ConversationTurn.open(store.engine, conversation_id, history_turns=10)   # UnknownConversation
    # or, for another answer to the last question: open(..., regenerate_of=turn_id)  (variants.py)
    query = await turn.standalone_query(backend, question, settings.conversations)
    prepared = await prepare(question, collections, ..., history=turn.history, query=query)
    await turn.begin()                                     # an untitled conversation named now
    turn.take(event) for each event; `error`: await turn.keep_unfinished("error", turn.query);
    `done`: event = await turn.finish(event)  # gains conversation_id, turn_id; closed early: await turn.stopped()
    (answers/ask.py takes these steps in the one loop an answer's events pass)

An untitled conversation is named after the question as soon as the answer starts. Every answer that
started is recorded, with its status: "done" keeps what the user saw last, `done.answer` (the
replacement when the citation check replaced an unsupported answer; the model's own text is not
stored) and the sources with their `support`; "stopped" (the events were closed before `done`: the
client pressed Stop or went away) and "error" (an `error` event) keep the text that had streamed and
the `retrieved` sources, marked `cited` by that text.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import anyio
from sqlalchemy.engine import Engine

from indexes.conversations import add_turn, get_conversation, name_untitled
from indexes.models import Conversation, Turn
from indexes.turn_groups import latest_variants

from assistant.backends.base import Backend
from assistant.answers.followup import Rewrite, standalone_query
from assistant.answers.events import Done, Event, Failed, Retrieved, Sources
from assistant.answers.rag import partial_sources
from assistant.answers.variants import replaced_group
from assistant.settings import ConversationSettings


class UnknownConversation(LookupError):
    """No conversation has this id (never made, or deleted)."""


def require_conversation(engine: Engine, conversation_id: int) -> Conversation:
    conv = get_conversation(engine, conversation_id)
    if conv is None:
        raise UnknownConversation(f"unknown conversation: {conversation_id}")
    return conv


def collections_of(conv: Conversation) -> list[str]:
    return list(json.loads(conv.collections or "[]"))


def history_for(
    engine: Engine, conversation_id: int, *, turns: int = 10, without_group: int | None = None
) -> list[dict]:
    """The last `turns` turns as role/content messages, oldest first (what `prepare(history=...)` takes):
    each question once, with its latest answer (regenerated or edited ones replace the earlier), and
    never the question `without_group` names, whose new answer is being asked for.

    A stopped turn's partial answer goes in as it is: the user read it and chose to stop there, and a
    follow-up ("go on", "what does [2] say?") refers to that text. A failed turn is left out, question
    and all: its text was cut by a failure rather than by the user, and its question is usually asked
    again next.
    """
    out: list[dict] = []
    for t in latest_variants(engine, conversation_id, last=turns, without_group=without_group) if turns > 0 else []:
        if t.status == "error":
            continue
        out.append({"role": "user", "content": t.question})
        if t.answer:
            out.append({"role": "assistant", "content": t.answer})
    return out


def record_turn(
    engine: Engine, conversation_id: int, *, question: str, query: str, answer: str, sources: list[dict],
    status: str = "done", variant_of: int | None = None, check: dict | None = None, model_answer: str | None = None,
    document: dict | None = None,
) -> Turn:
    """Append a turn that ended (raises UnknownConversation when it was deleted meanwhile)."""
    try:
        return add_turn(engine, conversation_id, question=question, query=query, answer=answer, sources=sources,
                        status=status, variant_of=variant_of, check=check, model_answer=model_answer,
                        document=document)
    except LookupError:
        raise UnknownConversation(f"unknown conversation: {conversation_id}") from None


@dataclass
class ConversationTurn:
    """One question being asked in a conversation."""

    engine: Engine
    conversation: Conversation
    history: list[dict]
    question: str = ""
    rewrite: Rewrite | None = None
    rewrite_ms: float = 0.0
    sources: list[dict] = field(default_factory=list)
    retrieved: list[dict] = field(default_factory=list)
    streamed: list[str] = field(default_factory=list)  # the `token` texts so far
    variant_of: int | None = None  # the group this turn answers again (its first turn), else None
    document: dict | None = None  # the one document asked about ({id, collection, path, title}), kept with the turn

    @classmethod
    def open(
        cls, engine: Engine, conversation_id: int, *, history_turns: int = 10, regenerate_of: int | None = None
    ) -> "ConversationTurn":
        """UnknownConversation; with `regenerate_of`, UnknownTurn or NotLastQuestion (variants.py)."""
        conv = require_conversation(engine, conversation_id)
        group = None if regenerate_of is None else replaced_group(engine, conversation_id, regenerate_of)
        history = history_for(engine, conversation_id, turns=history_turns, without_group=group)
        return cls(engine, conv, history, variant_of=group)

    @property
    def conversation_id(self) -> int:
        assert self.conversation.id is not None
        return self.conversation.id

    @property
    def collections(self) -> list[str]:
        """The collections the conversation was started with (the default scope of its questions)."""
        return collections_of(self.conversation)

    async def standalone_query(self, backend: Backend, question: str, settings: ConversationSettings) -> str:
        """The search query for question: itself on the first turn, else a rewrite (followup.py)."""
        started = time.perf_counter()
        self.question = question
        self.rewrite = await standalone_query(
            backend, question, self.history, mode=settings.rewrite, max_tokens=settings.rewrite_max_tokens,
            timeout_s=settings.rewrite_timeout_s,
        )
        self.rewrite_ms = (time.perf_counter() - started) * 1000
        return self.rewrite.query

    @property
    def query(self) -> str:
        """What retrieval was asked: the rewrite, else the question itself."""
        return self.rewrite.query if self.rewrite else self.question

    async def begin(self) -> None:
        """The answer starts: an untitled conversation is named after the question now."""
        if not self.question:
            raise RuntimeError("standalone_query() names the question: call it before begin()")
        await anyio.to_thread.run_sync(name_untitled, self.engine, self.conversation_id, self.question)

    def take(self, event: Event) -> None:
        """The sources an event names, kept for the turn: those retrieved, then the final ones (the text
        streamed goes to `streamed` as it comes)."""
        match event:
            case Retrieved(sources=sources):
                self.retrieved = sources
            case Sources(sources=sources):
                self.sources = sources

    async def finish(self, done: Done) -> Done | Failed:
        """The turn stored with `done`'s answer; `done` then says where (a `conversation_not_found` error
        when the conversation was deleted during the answer)."""
        query = self.query
        try:
            turn = await anyio.to_thread.run_sync(lambda: record_turn(
                self.engine, self.conversation_id, question=self.question, query=query, answer=done.answer,
                sources=self.sources, variant_of=self.variant_of, check=done.check,
                model_answer=done.get("model_answer"), document=self.document,
            ))
        except UnknownConversation as exc:
            return Failed(f"{exc}: it was deleted during the answer", "conversation_not_found")
        return Done(done.answer, done.model, done.prompt_tokens, dict(done.timings, rewrite_ms=round(self.rewrite_ms, 1)),
                    done.check, done.completion_tokens,
                    dict(done.extra, conversation_id=self.conversation_id, turn_id=turn.id, query=query,
                         query_rewrite=self.rewrite.method if self.rewrite else "none"))

    async def stopped(self) -> None:
        """Events closed before `done` or `error` (a client gone: cancelled or closed): the turn stored as
        "stopped", shielded from that cancellation."""
        with anyio.CancelScope(shield=True):
            await self.keep_unfinished("stopped", self.query)

    async def keep_unfinished(self, status: str, query: str) -> None:
        """Store the turn of an answer that ended before `done`: the text that had streamed, and the
        final sources when they came, else the retrieved ones (a conversation deleted meanwhile keeps nothing)."""
        text = "".join(self.streamed).strip()
        sources = self.sources or partial_sources(self.retrieved, text)
        try:
            await anyio.to_thread.run_sync(lambda: record_turn(
                self.engine, self.conversation_id, question=self.question, query=query, answer=text,
                sources=sources, status=status, variant_of=self.variant_of, document=self.document,
            ))
        except UnknownConversation:
            return
