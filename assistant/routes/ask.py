"""POST /api/ask: a question in, Server-Sent Events out (`retrieved`, `progress`…, `token`…, `sources`, `done` | `error`).

The request becomes a `Question` for the one ask use case (answers/ask.py), its refusals 4xx with their
codes, its events SSE messages (routes/sse.py). `retrieved` (the prompt's sources, none cited yet) leaves
before the first token, so that a page shows them while the model works; `progress` ({done, total, cached}
prompt tokens) says how far the engine has read the prompt, where the backend can tell. In a saved conversation the turn
is stored whatever ends the stream: `done`, an `error` event, or the client closing it (a turn "stopped"
with what had streamed). With `document`, the question is about that document alone
(answers/document_question.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import post
from litestar.exceptions import HTTPException, ValidationException
from litestar.response import ServerSentEvent
from pydantic import BaseModel, ConfigDict, Field, model_validator

from indexes.retrieval.filters import SearchFilters

from assistant.answers.ask import AskError, Question
from assistant.answers.document_question import DocumentKey
from assistant.routes.deps import MAX_ROW_ID
from assistant.routes.errors import coded
from assistant.routes.sse import EVENT_STREAM, to_message
from assistant.security.access import Identity, scoped
from assistant.services import Services


class HistoryTurn(BaseModel):
    """An earlier turn of the conversation, sent by the client (a saved conversation's come from `conversation_id`)."""

    role: str = Field(pattern="^(user|assistant)$")
    content: str = Field(max_length=20000)


MAX_GLOB_CHARS = 1024
Glob = Annotated[str, Field(min_length=1, max_length=MAX_GLOB_CHARS)]
Kind = Annotated[str, Field(min_length=1, max_length=32)]
Time = float | Annotated[str, Field(max_length=64)] | None


class Filters(BaseModel):
    """Which documents may be sources: path globs, file types, modification time (epoch or ISO-8601)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def known_filters(cls, data: Any) -> Any:
        """An unknown filter is a 400 naming the known ones, not a search quietly left unfiltered."""
        if isinstance(data, dict):
            SearchFilters.check_keys(data)
        return data

    paths: list[Glob] = Field(default_factory=list, max_length=32)
    kinds: list[Kind] = Field(default_factory=list, max_length=32)
    modified_after: Time = None
    modified_before: Time = None


class AskRequest(BaseModel):
    question: str
    collection: str | None = Field(None, max_length=64)
    collections: list[Annotated[str, Field(max_length=64)]] | None = Field(None, max_length=16)
    k: int | None = Field(None, ge=1, le=50)
    history: list[HistoryTurn] = Field(default_factory=list, max_length=20)
    filters: Filters | None = None
    conversation_id: int | None = Field(None, ge=1, le=MAX_ROW_ID, description="a saved conversation to continue (its turns are the history)")
    regenerate_of: int | None = Field(
        None, ge=1, le=MAX_ROW_ID,
        description="a turn of the conversation's last question: the question (as sent, edited or not) is answered "
                    "again as a new variant of it, every earlier answer kept",
    )
    document: DocumentKey | None = Field(
        None, description="ask about this document alone: its id, or its path within the collection (whole when it "
                          "fits the model's window, else retrieval within it; `done.document_mode` says which)",
    )

    def scope(self) -> list[str]:
        names = list(self.collections or []) + ([self.collection] if self.collection else [])
        return list(dict.fromkeys(names))


def checked_filters(filters: Filters | None) -> SearchFilters | None:
    """The filters as retrieval takes them; a date that cannot be read is a 400, not a failed answer."""
    if filters is None:
        return None
    try:
        return SearchFilters.coerce(filters.model_dump())
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValidationException(f"bad filter: {exc}") from None


def http_error(exc: AskError) -> HTTPException:
    """The use case's refusal as this door's error: its status, its message, its code."""
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
    return coded(HTTPException(status_code=exc.status, detail=exc.message, headers=headers,
                               extra=exc.extra or None), exc.code)


@post("/api/ask", tags=["ask"], status_code=200, opt=scoped("ask"), responses=EVENT_STREAM)
async def ask(services: Services, identity: Identity, data: AskRequest) -> ServerSentEvent:
    question = Question(
        data.question, tuple(data.scope()), k=data.k, filters=checked_filters(data.filters), document=data.document,
        conversation_id=data.conversation_id, regenerate_of=data.regenerate_of,
        history=tuple(t.model_dump() for t in data.history), progress=True,
    )
    try:
        answering = await services.asking.open(identity, question)
    except AskError as exc:
        raise http_error(exc) from None

    # Returned before the engine's first token: the response starts while the engine works, so that
    # token then goes out as one more body chunk. Client gone or stream done: the backend request is aborted.
    return ServerSentEvent(answering.events(to_message))
