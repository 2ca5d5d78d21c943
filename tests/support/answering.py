"""An answer's events straight from rag.prepare(), for tests of the answer itself (the server's doors ask
through answers/ask.py)."""

from __future__ import annotations

from typing import Any, AsyncIterator

from assistant.answers.events import Event
from assistant.answers.rag import prepare


async def answer(question: str, collections: str | list[str], **how: Any) -> AsyncIterator[Event]:
    """The events answering question from collections, `how` as prepare() takes it."""
    prepared = await prepare(question, collections, **how)
    try:
        async for event in prepared.events():
            yield event
    finally:
        await prepared.aclose()
