"""POST /api/ask: a question in, Server-Sent Events out (`retrieved`, `token`…, `sources`, `done` | `error`).

`retrieved` (the prompt's sources, none cited yet) leaves before the first token, so that a page shows
them while the model works. In a saved conversation the turn is stored whatever ends the stream: `done`,
an `error` event, or the client closing it (a turn "stopped" with what had streamed). With `document`, the
question is about that document alone (answers/document_question.py).
"""

from __future__ import annotations

from typing import Annotated, Any, AsyncIterator

from litestar import post
from litestar.exceptions import ClientException, HTTPException, NotFoundException, ValidationException
from litestar.response import ServerSentEvent, ServerSentEventMessage
from pydantic import BaseModel, ConfigDict, Field, model_validator

from indexes.filters import SearchFilters
from indexes.reading import DocumentRef

from assistant.security.access import Identity, scoped
from assistant.backends.base import BackendBusy
from assistant.answers.rag import prepare
from assistant.answers.conversation import ConversationTurn, UnknownConversation
from assistant.answers.document_question import DocumentKey, DocumentNotAnswerable, UnknownDocument, find_document
from assistant.answers.variants import NotLastQuestion, UnknownTurn
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


def ask_document(services: Services, data: AskRequest, identity: Identity) -> DocumentRef | None:
    """The document an /api/ask request is about (None without `document`); a request that names no
    collection asks the document's own. A document that does not exist and one in a collection the key may
    not read are the same 404 (`unknown_document`)."""
    if data.document is None:
        return None
    if data.filters is not None:
        raise ValidationException("give either `document` or `filters`: a question about one document searches it alone")
    scope = data.scope()
    if len(scope) > 1:
        raise ValidationException("a `document` is asked about within its own collection: name that one only")
    if scope:
        require_collection(services, scope[0], identity)
    try:
        doc = find_document(services.store, data.document, scope[0] if scope else None, identity.can_use)
    except UnknownDocument as exc:
        raise coded(NotFoundException(str(exc)), "unknown_document") from None
    except DocumentNotAnswerable as exc:
        raise coded(ValidationException(str(exc)), "document_not_answerable") from None
    if not scope:
        data.collection = doc.collection
    return doc


def checked_filters(filters: Filters | None) -> SearchFilters | None:
    """The filters as retrieval takes them; a date that cannot be read is a 400, not a failed answer."""
    try:
        return SearchFilters.coerce(filters.model_dump() if filters else None)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValidationException(f"bad filter: {exc}") from None


def open_conversation_turn(services: Services, data: AskRequest, identity: Identity) -> ConversationTurn | None:
    """The conversation an /api/ask request continues (None without `conversation_id`); 404 when unknown.

    Its stored turns are the history, so a `history` sent too is refused; a request that names no
    collection searches the conversation's. `regenerate_of` must name a turn of its last question
    (404 `turn_not_found`, 409 `turn_not_last`: later turns were answered from an earlier one).
    """
    if data.conversation_id is None:
        if data.regenerate_of is not None:
            raise ValidationException("`regenerate_of` needs the `conversation_id` of its turn")
        return None
    if data.history:
        raise ValidationException("give either `history` or `conversation_id`: a conversation's history is its stored turns")
    require_own_conversation(services, identity, data.conversation_id)
    try:
        turn = ConversationTurn.open(
            services.store.engine, data.conversation_id, history_turns=services.settings.conversations.history_turns,
            regenerate_of=data.regenerate_of,
        )
    except UnknownConversation as exc:
        raise NotFoundException(str(exc)) from None
    except UnknownTurn as exc:
        raise coded(NotFoundException(str(exc)), exc.code) from None
    except NotLastQuestion as exc:
        raise coded(ClientException(str(exc), status_code=409), exc.code) from None
    if not data.scope():
        data.collections = turn.collections
    return turn


@post("/api/ask", tags=["ask"], status_code=200, opt=scoped("ask"), responses=EVENT_STREAM)
async def ask(services: Services, telemetry: Telemetry, identity: Identity, data: AskRequest) -> ServerSentEvent:
    conversation = open_conversation_turn(services, data, identity)
    document = ask_document(services, data, identity)
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
            document=document,
        )
    except BackendBusy as exc:
        telemetry.busy_rejections.inc()
        raise HTTPException(
            status_code=429, detail=str(exc), headers={"Retry-After": str(exc.retry_after)}
        ) from None

    async def stream() -> AsyncIterator[ServerSentEventMessage]:
        services.in_flight += 1
        events = prepared.events()
        if conversation is not None:
            events = conversation.record(events)
        observed = telemetry.observe(events)
        try:
            async for event in observed:
                yield to_message(event)
        finally:
            services.in_flight -= 1
            await observed.aclose()  # closed at once, not when collected: a stopped turn is stored now
            await prepared.aclose()  # client gone or stream done: the backend request is aborted

    # Returned before the engine's first token: the response starts while the engine works, so that
    # token then goes out as one more body chunk.
    return ServerSentEvent(stream())
