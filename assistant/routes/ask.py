"""POST /api/ask: a question in, Server-Sent Events out (`token`…, `sources`, `done` | `error`)."""

from __future__ import annotations

from typing import Annotated, Any, AsyncIterator

from litestar import post
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.response import ServerSentEvent, ServerSentEventMessage
from pydantic import BaseModel, ConfigDict, Field, model_validator

from indexes.filters import SearchFilters

from assistant.security.access import Identity, scoped
from assistant.backends.base import BackendBusy
from assistant.answers.rag import prepare
from assistant.answers.conversation import ConversationTurn, UnknownConversation
from assistant.routes.conversations import require_own_conversation
from assistant.routes.deps import MAX_ROW_ID, require_collection
from assistant.routes.errors import coded
from assistant.routes.sse import EVENT_STREAM, to_message
from assistant.services import Services
from assistant.telemetry import Telemetry


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

    def scope(self) -> list[str]:
        names = list(self.collections or []) + ([self.collection] if self.collection else [])
        return list(dict.fromkeys(names))


def validate_ask(services: Services, data: AskRequest, identity: Identity) -> list[str]:
    """The collections to search, or a 4xx that says what is wrong with the request."""
    question = data.question.strip()
    limit = services.settings.server.max_question_chars
    if not question:
        raise coded(ValidationException("the question is empty"), "question_empty")
    if len(question) > limit:
        raise coded(ValidationException(f"the question is too long: {len(question)} characters, at most {limit}",
                                        extra={"length": len(question), "limit": limit}), "question_too_long")
    scope = data.scope()
    if not scope:
        raise ValidationException("name a collection to ask (`collection` or `collections`)")
    for name in scope:
        require_collection(services, name, identity)
    checked_filters(data.filters)
    return scope


def checked_filters(filters: Filters | None) -> SearchFilters | None:
    """The filters as retrieval takes them; a date that cannot be read is a 400, not a failed answer."""
    try:
        return SearchFilters.coerce(filters.model_dump() if filters else None)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValidationException(f"bad filter: {exc}") from None


def open_conversation_turn(services: Services, data: AskRequest, identity: Identity) -> ConversationTurn | None:
    """The conversation an /api/ask request continues (None without `conversation_id`); 404 when unknown.

    Its stored turns are the history, so a `history` sent too is refused; a request that names no
    collection searches the conversation's.
    """
    if data.conversation_id is None:
        return None
    if data.history:
        raise ValidationException("give either `history` or `conversation_id`: a conversation's history is its stored turns")
    require_own_conversation(services, identity, data.conversation_id)
    try:
        turn = ConversationTurn.open(
            services.store.engine, data.conversation_id, history_turns=services.settings.conversations.history_turns
        )
    except UnknownConversation as exc:
        raise NotFoundException(str(exc)) from None
    if not data.scope():
        data.collections = turn.collections
    return turn


@post("/api/ask", tags=["ask"], status_code=200, opt=scoped("ask"), responses=EVENT_STREAM)
async def ask(services: Services, telemetry: Telemetry, identity: Identity, data: AskRequest) -> ServerSentEvent:
    conversation = open_conversation_turn(services, data, identity)
    scope = validate_ask(services, data, identity)
    try:
        query = None
        if conversation is not None:
            query = await conversation.standalone_query(services.backend, data.question.strip(), services.settings.conversations)
        # Retrieval, the prompt and a place in the backend's queue: a full queue is a 429, not a stream.
        prepared = await prepare(
            data.question.strip(),
            scope,
            retriever=services.retriever,
            backend=services.backend,
            settings=services.settings,
            history=conversation.history if conversation else [t.model_dump() for t in data.history],
            k=data.k,
            filters=data.filters.model_dump() if data.filters else None,
            query=query,
        )
    except BackendBusy as exc:
        telemetry.busy_rejections.inc()
        raise HTTPException(
            status_code=429, detail=str(exc), headers={"Retry-After": str(exc.retry_after)}
        ) from None

    async def stream() -> AsyncIterator[ServerSentEventMessage]:
        services.in_flight += 1
        try:
            events = prepared.events()
            if conversation is not None:
                events = conversation.record(events)
            async for event in telemetry.observe(events):
                yield to_message(event)
        finally:
            services.in_flight -= 1
            await prepared.aclose()  # client gone or stream done: the backend request is aborted

    # Returned before the engine's first token: the response starts while the engine works, so that
    # token then goes out as one more body chunk.
    return ServerSentEvent(stream())
