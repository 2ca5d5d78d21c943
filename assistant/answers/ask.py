"""Asking: the one use case behind every door that answers a question (/api/ask, /v1 `rag:` models, the
MCP `ask` tool, `assistant ask` and `assistant chat`, batch answers and the answer evaluations).

A door turns its protocol into a `Question` and the caller's Identity, calls `Asking.open()`, and turns the
events (answers/events.py) and the `AskError` back into its own protocol. Everything else happens here, once:
the question's bounds, the collections and the caller's right to them, the document asked about, the
conversation (its owner, its history, the follow-up rewritten to stand alone), the answer's preparation
(a full backend queue is `busy` before any event), the turn recorded, the answers counted in flight and
observed by the metrics. Errors carry one vocabulary of codes on every door (docs/usage.md lists them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Iterable, Protocol

import anyio

from indexes.reading import DocumentRef
from indexes.retrieval.filters import SearchFilters
from indexes.retrieval.retriever import Retriever
from indexes.store import Store

from assistant.answers.conversation import ConversationTurn, UnknownConversation
from assistant.answers.document_question import DocumentNotAnswerable, UnknownDocument, find_document
from assistant.answers.events import Done, Event, Failed, Progress, Retrieved, Sources, Token
from assistant.answers.rag import AnswerPolicy, PreparedAnswer, prepare
from assistant.answers.variants import NotLastQuestion, UnknownTurn
from assistant.backends.base import Backend, BackendBusy
from assistant.security.access import AccessDenied, Identity
from assistant.security.error_codes import STATUS
from assistant.settings import ConversationSettings


class AskError(Exception):
    """A question that cannot be asked: `code` (STATUS's vocabulary), a message written for the caller."""

    def __init__(self, code: str, message: str, *, retry_after: int | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = STATUS[code]
        self.retry_after = retry_after
        self.extra = extra


@dataclass(frozen=True)
class Question:
    """A question as every door hands it over. `collections` may be empty when a conversation or a document
    names its own; `history` is the client's (a saved conversation's comes from `conversation_id`)."""

    text: str
    collections: tuple[str, ...] = ()
    k: int | None = None
    filters: SearchFilters | None = None
    document: int | str | None = None
    conversation_id: int | None = None
    regenerate_of: int | None = None
    history: tuple[dict, ...] = ()
    max_tokens: int | None = None  # the answer's budget, at most generation.max_tokens (a /v1 request's)
    temperature: float | None = None
    progress: bool = False  # `Progress` events while the prompt is read (the page's stream; /v1 and MCP take none)


@dataclass
class Outcome:
    """What an answer's events said, gathered: for the doors that show the whole answer at its end."""

    text: str = ""  # the token texts, as streamed
    sources: list[dict] = field(default_factory=list)
    done: Done | None = None
    failed: Failed | None = None
    prompt_cached: int | None = None  # prompt tokens the engine kept from before (asked with `progress`)

    def take(self, event: Event) -> None:
        match event:
            case Token(text=text):
                self.text += text
            case Progress(cached=cached) if self.prompt_cached is None:
                self.prompt_cached = cached
            case Sources(sources=sources):
                self.sources = sources
            case Done():
                self.done = event
            case Failed():
                self.failed = event

    @property
    def answer(self) -> str:
        """The answer as shown: `done`'s (checked, or the statement that replaced it), else what streamed."""
        return self.done.answer if self.done is not None else self.text.strip()

    @property
    def fields(self) -> dict:
        """`done`'s wire form ({} when the answer did not finish)."""
        return self.done.data if self.done is not None else {}


class AnswerMetrics(Protocol):
    """Where answers are counted (the server's Prometheus series: telemetry.py)."""

    def answer_started(self) -> None: ...
    def answer_ended(self, end: Done | Failed, pieces: int) -> None: ...
    def answer_left(self) -> None: ...


class Uncounted:
    def answer_started(self) -> None:
        pass

    def answer_ended(self, end: Done | Failed, pieces: int) -> None:
        pass

    def answer_left(self) -> None:
        pass


async def passed(events: AsyncIterator[Event], turn: ConversationTurn | None, metrics: AnswerMetrics,
                 in_flight: "InFlight") -> AsyncIterator[Event]:
    """An answer's events, unchanged but for `done` in a conversation (it says where the turn was stored), in
    one loop that keeps the turn (an `error` stores it as "error" before passing on; events closed before
    `done` or `error` store it as "stopped") and counts the answer."""
    in_flight.now += 1
    metrics.answer_started()
    pieces, ended = 0, False
    try:
        if turn is not None:
            await turn.begin()
        async for event in events:
            if isinstance(event, Token):
                pieces += 1
                if turn is not None:
                    turn.streamed.append(event.text)
            elif isinstance(event, (Retrieved, Sources)):
                if turn is not None:
                    turn.take(event)
            elif isinstance(event, (Done, Failed)):
                ended = True
                gone = False
                if turn is not None and isinstance(event, Failed):
                    await turn.keep_unfinished("error", turn.query)
                elif turn is not None:
                    event = await turn.finish(event)
                    gone = isinstance(event, Failed)  # the conversation was deleted during the answer
                metrics.answer_ended(event, pieces)
                if gone:
                    yield event
                    return
            yield event
    finally:
        in_flight.now -= 1
        metrics.answer_left()
        if turn is not None and not ended:
            await turn.stopped()
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


@dataclass
class Answering:
    """A question on its way: the prepared answer, and what its events pass through (the conversation's
    record, the metrics, the count of answers in flight). Iterate `events()` once; `aclose()` aborts."""

    prepared: PreparedAnswer
    turn: ConversationTurn | None
    metrics: AnswerMetrics
    counter: "InFlight"
    query: str
    collections: list[str]
    document: DocumentRef | None = None
    _events: AsyncIterator[Event] | None = field(default=None, repr=False)

    async def events(self, wire: Callable[[Event], Any] | None = None) -> AsyncIterator[Any]:
        """The events, or each in a door's wire form (`wire`: one loop serves the door, no second stream)."""
        self._events = passed(self.prepared.events(), self.turn, self.metrics, self.counter)
        try:
            async for event in self._events:
                yield event if wire is None else wire(event)
        finally:
            await self.aclose()

    async def outcome(self, on_token: Callable[[str], None] | None = None) -> Outcome:
        """Every event taken, `on_token` told each piece of text as it comes (a terminal prints it)."""
        gathered = Outcome()
        try:
            async for event in self.events():
                if on_token is not None and isinstance(event, Token):
                    on_token(event.text)
                gathered.take(event)
        finally:
            await self.aclose()
        return gathered

    async def aclose(self) -> None:
        """Close the events at once (a stopped turn is stored now, not when collected), then abort the
        backend request or give back its queue place."""
        if self._events is not None:
            close = getattr(self._events, "aclose", None)
            self._events = None
            if close is not None:
                await close()
        await self.prepared.aclose()


@dataclass
class InFlight:
    """Answers being streamed right now (what /api/status shows)."""

    now: int = 0


@dataclass
class Asking:
    """The long-lived parts every question needs, built once by the services."""

    store: Store
    retriever: Retriever
    backend: Backend | None
    policy: AnswerPolicy
    conversations: ConversationSettings
    max_question_chars: int
    metrics: AnswerMetrics = field(default_factory=Uncounted)  # the server's Prometheus series
    on_busy: Callable[[], None] = lambda: None
    in_flight: InFlight = field(default_factory=InFlight)

    async def open(self, identity: Identity, question: Question) -> Answering:
        """The question checked and prepared: retrieval done, the prompt built, the backend's request sent.
        Raises AskError before any event exists (the doors answer it with their own error shape)."""
        text = checked_text(question.text, self.max_question_chars)
        if self.backend is None:
            raise AskError("no_backend", "no backend is configured to answer with")
        turn, collections, document = await anyio.to_thread.run_sync(self._checked, identity, question)
        query = text
        if turn is not None:
            query = await turn.standalone_query(self.backend, text, self.conversations)
        policy = self.policy
        if question.max_tokens is not None or question.temperature is not None:
            gen = policy.generation
            policy = policy.with_generation(
                max_tokens=min(question.max_tokens or gen.max_tokens, gen.max_tokens),
                temperature=gen.temperature if question.temperature is None else question.temperature)
        history = turn.history if turn is not None else [dict(t) for t in question.history]
        try:
            prepared = await prepare(text, collections, retriever=self.retriever, backend=self.backend,
                                     policy=policy, history=history, k=question.k, filters=question.filters,
                                     query=query if turn is not None else None, document=document,
                                     progress=question.progress)
        except BackendBusy as exc:
            self.on_busy()
            raise AskError("busy", str(exc), retry_after=exc.retry_after) from None
        return Answering(prepared, turn, self.metrics, self.in_flight, query, collections, document)

    def _checked(self, identity: Identity, question: Question
                 ) -> tuple[ConversationTurn | None, list[str], DocumentRef | None]:
        """The conversation, the collections and the document of the question, each the caller may use (the
        store read in one trip to a worker thread)."""
        turn = self._turn(identity, question)
        collections = list(dict.fromkeys(question.collections)) or (turn.collections if turn else [])
        document = self._document(identity, question, collections)
        if document is not None and not collections:
            collections = [document.collection]
        if document is not None and turn is not None:  # the scope is kept with the turn: a reload asks there
            turn.document = {"id": document.document_id, "collection": document.collection, "path": document.path,
                             "title": document.title}
        if not collections:
            raise AskError("collection_required", "name a collection to ask (`collection` or `collections`)")
        self._require_collections(identity, collections)
        return turn, collections, document

    def _turn(self, identity: Identity, question: Question) -> ConversationTurn | None:
        """The conversation the question continues, once the caller may: its stored turns are the history,
        so a history sent too is refused; `regenerate_of` names a turn of its last question."""
        if question.conversation_id is None:
            if question.regenerate_of is not None:
                raise AskError("invalid_request", "`regenerate_of` needs the `conversation_id` of its turn")
            return None
        if question.history:
            raise AskError("invalid_request",
                           "give either `history` or `conversation_id`: a conversation's history is its stored turns")
        try:
            turn = ConversationTurn.open(self.store.engine, question.conversation_id,
                                         history_turns=self.conversations.history_turns,
                                         regenerate_of=question.regenerate_of)
        except UnknownConversation as exc:
            raise AskError("conversation_not_found", str(exc)) from None
        except (UnknownTurn, NotLastQuestion) as exc:
            raise AskError(exc.code, str(exc)) from None
        if not identity.owns(turn.conversation.owner_key):
            raise AskError("forbidden", "this conversation belongs to another key")
        allowed(identity, turn.collections)
        return turn

    def _document(self, identity: Identity, question: Question, collections: list[str]) -> DocumentRef | None:
        """The document asked about alone, in its own collection. A document that does not exist and one in
        a collection the caller may not use are the same `document_not_found`."""
        if question.document is None:
            return None
        if question.filters is not None:
            raise AskError("invalid_request",
                           "give either `document` or `filters`: a question about one document searches it alone")
        if len(collections) > 1:
            raise AskError("invalid_request", "a `document` is asked about within its own collection: name that one only")
        if collections:
            self._require_collections(identity, collections)
        try:
            return find_document(self.store, question.document, collections[0] if collections else None,
                                 identity.can_use)
        except UnknownDocument as exc:
            raise AskError("document_not_found", str(exc)) from None
        except DocumentNotAnswerable as exc:
            raise AskError("document_not_answerable", str(exc)) from None

    def _require_collections(self, identity: Identity, names: Iterable[str]) -> None:
        for name in names:
            allowed(identity, [name])
            if self.store.get_collection(name) is None:
                raise AskError("collection_not_found", f"unknown collection: {name!r}", collection=name)


def allowed(identity: Identity, collections: Iterable[str]) -> None:
    """The `ask` scope and every collection usable, else `forbidden` (a refusal names no collection)."""
    try:
        identity.check_scope("ask")
        for name in collections:
            identity.check_collection(name)
    except AccessDenied as exc:
        raise AskError("forbidden", str(exc.detail)) from None


def checked_text(text: str, limit: int) -> str:
    """The question stripped once, here; empty or longer than `server.max_question_chars` is refused."""
    question = text.strip()
    if not question:
        raise AskError("question_empty", "the question is empty")
    if len(question) > limit:
        raise AskError("question_too_long", f"the question is too long: {len(question)} characters, at most {limit}",
                       length=len(question), limit=limit)
    return question
