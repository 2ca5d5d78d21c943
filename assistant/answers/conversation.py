"""A question asked in a saved conversation: its history from the store, its standalone search query,
and the turn recorded when the answer is done. No HTTP in here: `/api/ask`, `assistant chat` and any
other entry point use it the same way:

    turn = ConversationTurn.open(store.engine, conversation_id, history_turns=10)   # UnknownConversation
    query = await turn.standalone_query(backend, question, settings.conversations)
    prepared = await prepare(question, collections, ..., history=turn.history, query=query)
    async for event in turn.record(prepared.events()): ...   # `done` gains conversation_id, turn_id

A turn is recorded only when its answer is done; an answer that ends in an `error` event leaves the
conversation as it was. The turn keeps what the user saw last: `done.answer` (the replacement when the
citation check replaced an unsupported answer; the model's own text is not stored) and the sources
with their `support`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import AsyncIterator

import anyio
from sqlalchemy.engine import Engine

from indexes.conversations import add_turn, get_conversation, list_turns
from indexes.models import Conversation, Turn

from assistant.backends.base import Backend
from assistant.answers.followup import Rewrite, standalone_query
from assistant.answers.rag import Event
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


def history_for(engine: Engine, conversation_id: int, *, turns: int = 10) -> list[dict]:
    """The last `turns` turns as role/content messages, oldest first (what `prepare(history=...)` takes)."""
    out: list[dict] = []
    for t in list_turns(engine, conversation_id, last=turns) if turns > 0 else []:
        out.append({"role": "user", "content": t.question})
        if t.answer:
            out.append({"role": "assistant", "content": t.answer})
    return out


def record_turn(
    engine: Engine, conversation_id: int, *, question: str, query: str, answer: str, sources: list[dict]
) -> Turn:
    """Append a finished turn (raises UnknownConversation when it was deleted meanwhile)."""
    try:
        return add_turn(engine, conversation_id, question=question, query=query, answer=answer, sources=sources)
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

    @classmethod
    def open(cls, engine: Engine, conversation_id: int, *, history_turns: int = 10) -> "ConversationTurn":
        conv = require_conversation(engine, conversation_id)
        return cls(engine, conv, history_for(engine, conversation_id, turns=history_turns))

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

    async def record(self, events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        """The answer's events, unchanged until `done`: the turn is stored first, then `done` says where."""
        if not self.question:
            raise RuntimeError("standalone_query() names the question: call it before record()")
        query = self.rewrite.query if self.rewrite else self.question
        try:
            async for event in events:
                if event.type == "sources":
                    self.sources = event.data.get("sources", [])
                if event.type == "done":
                    try:
                        turn = await anyio.to_thread.run_sync(lambda: record_turn(
                            self.engine, self.conversation_id, question=self.question, query=query,
                            answer=event.data.get("answer", ""), sources=self.sources,
                        ))
                    except UnknownConversation as exc:
                        yield Event("error", {"message": f"{exc}: it was deleted during the answer", "code": "conversation_not_found"})
                        return
                    data = dict(event.data, conversation_id=self.conversation_id, turn_id=turn.id, query=query,
                                query_rewrite=self.rewrite.method if self.rewrite else "none")
                    data["timings"] = dict(data.get("timings") or {}, rewrite_ms=round(self.rewrite_ms, 1))
                    event = Event("done", data)
                yield event
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
