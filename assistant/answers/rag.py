"""A question answered from the collections: retrieve, build a prompt that fits, stream the backend.

Events (answers/events.py), in order: `Retrieved` (the prompt's sources in prompt order, every `cited`
false), `Progress` while the engine reads the prompt (when asked for), then `Token`..., then `Sources` (cited first, then the others), then `Done` (answer, prompt and
completion tokens, model, timings, check; `extra`: `document_mode` and `document` for a question about one
document, `model_answer`, `absent_words`). `Retrieved` comes before the backend's first token, so that a
client shows what the answer draws on while the model works (and still has it when the answer is
stopped); `Sources` then says which were cited. A failure after the start (the prompt cannot fit, the
backend fails, anything unexpected) becomes one `Failed` event (message, code) that ends the stream
(before `Retrieved` when there is no prompt); no exception escapes it.

Once generated, the answer is checked against the prompt's sources (support.py): each source dict
gains `support` ({"score", "supported", "span": {"char_start", "char_end", "line_start", "line_end",
"page"}}, None when the answer does not cite it) and `done` gains `check` ({"sentences",
"citation_precision", "citation_coverage", "abstained", "unsupported", "replaced", "empty", "attributed", "quotes"}).
With `generation.quote_sources` on, an answer kept ends with the sources' words its claims stand on, when they say
more than the claim does (answers/quotes.py): `done.answer` ends with that block, `done.model_answer` is the
model's text, and `check.quotes` lists them ({"n", "text", "contradicts"}).
Before the check, citations are put where the sources support them (`support.attribute`): a claim
that cites nothing or only sources that do not say it gets the source that does, `done.answer`
carries the corrected markers, `done.model_answer` the model's own text and `check.attributed` lists
each change. When the answer
makes claims that no cited source supports and does not abstain, and `generation.replace_unsupported`
is on, `done.answer` is NOT_IN_DOCUMENTS in the question's language, `done.model_answer` the model's
own text (the one the `token` events streamed) and `check.replaced` true: a client shows `done.answer`
as the final answer. An answer the model ended without a word is replaced the same way, by NO_ANSWER,
with `check.empty` true.

With `generation.absent_words` on (an opt-in), a question with a word that none of the prompt's sources
holds and almost no passage of the collections does (answers/absent_terms.py) is not sent to the model: the answer streamed
is NOT_IN_DOCUMENTS naming the words, and `done` gains `absent_words`.

The one exception is BackendBusy: a backend whose queue is full refuses the request before anything
was sent, so that an HTTP route can answer 429 with Retry-After instead of opening a stream.
`prepare()` does everything up to taking the backend's place in its queue and raises BackendBusy before
any event exists; the ask use case (answers/ask.py) calls it for every door, and an HTTP door starts its
response at once, so the engine's first token leaves as one more chunk of a stream already open. (A remote server that answers 429 while
streaming gives an `error` event, code "busy".)

The backend's request leaves as soon as the prompt is built (answers/early_send.py), before the route
writes anything. Where an exact count is a trip to the engine and the counts so far say that every
source fits with room to spare, the prompt is sent before it is counted and the count runs beside the
engine's prefill: `retrieved` waits for it, and a prompt it finds too long is sent again, built to fit.
`timings.prompt_ms` is the time from retrieval to the request, `timings.early_count_ms` such a count
(None when the prompt was counted before it was sent).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from contextlib import aclosing
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, AsyncIterator

import anyio

from indexes.retrieval.filters import SearchFilters
from indexes.reading import DocumentRef
from indexes.retrieval.retriever import Retriever

from assistant.backends.base import Backend, BackendBusy, BackendError, GenParams, PromptProgress
from assistant.answers.absent_terms import absent_words, not_in_documents
from assistant.backends.model_choice import runs_packaged_model
from assistant.answers.citations import CitationFilter, cited_numbers
from assistant.answers.document_question import document_prompt
from assistant.answers.attribution import attribute
from assistant.answers.support import NO_ANSWER, NOT_IN_DOCUMENTS, AnswerCheck, check_answer, language_of
from assistant.answers.early_send import END, Started, counted_beside
from assistant.answers.prompts import Prompt, PromptTooLong, build_prompt, early_prompt
from assistant.answers.quotes import quote_block, quotes
from assistant.answers.events import Done, Event, Failed, Progress, Retrieved, Sources, Token
from assistant.security.redaction import redact_text
from assistant.settings import GenerationSettings
from assistant.answers.source_view import source_dicts

if TYPE_CHECKING:
    from assistant.settings import Settings

log = logging.getLogger(__name__)


def error_event(exc: BaseException) -> Failed:
    """The `error` event for a failure; the message is safe to show (no traceback)."""
    if isinstance(exc, PromptTooLong):
        return Failed(str(exc), "prompt_too_long")
    if isinstance(exc, BackendBusy):
        return Failed(str(exc), "busy", exc.retry_after)
    if isinstance(exc, BackendError):
        return Failed(redact_text(str(exc)), "backend_error")
    log.error("answer failed", exc_info=exc)
    # The exception's own text may name server paths or settings: it goes to the log only.
    return Failed("internal error (see the server's log)", "internal_error")


def partial_sources(retrieved: list[dict], text: str) -> list[dict]:
    """The `retrieved` sources of an answer that ended early, each `cited` when the text that had
    streamed cites it, cited first as in `sources`; without `support` (a partial answer is not checked)."""
    cited = set(cited_numbers(text))
    out = [dict(s, cited=s["n"] in cited) for s in retrieved]
    return sorted(out, key=lambda s: (not s["cited"], s["n"]))


def _on(mode: str, settings: "Settings") -> bool:
    """A guard's on/off/auto setting, where auto means on for the packaged small models (the llamacpp
    backend without model_path, or a managed llama-server running the same)."""
    if mode == "auto":
        return runs_packaged_model(settings)
    return mode == "on"


def replaces_unsupported(settings: "Settings") -> bool:
    """Whether an unsupported answer is replaced (`generation.replace_unsupported`): the small models
    cite sources that do not say what they claim."""
    return _on(settings.generation.replace_unsupported, settings)


def quotes_sources(settings: "Settings") -> bool:
    """Whether an answer ends with the words of its sources that it stands on (`generation.quote_sources`,
    answers/quotes.py): the small models leave out conditions and exact names."""
    return _on(settings.generation.quote_sources, settings)


def abstains_on_absent_words(settings: "Settings") -> bool:
    """Whether a question with a word that neither the sources shown nor the collections use is answered
    'not in the documents' without the model (`generation.absent_words`, answers/absent_terms.py): an
    opt-in, since one word people use that the documents do not is no evidence of a missing answer."""
    return _on(settings.generation.absent_words, settings)


@dataclass(frozen=True)
class AnswerPolicy:
    """How answers are made, resolved once from the settings (the guards' `auto` decided at start-up)."""

    generation: GenerationSettings
    k: int  # sources retrieved when the question names no k
    replace_unsupported: bool
    absent_words: bool
    quote_sources: bool

    @classmethod
    def of(cls, settings: "Settings") -> "AnswerPolicy":
        return cls(settings.generation, settings.retrieval.k, replaces_unsupported(settings),
                   abstains_on_absent_words(settings), quotes_sources(settings))

    def with_generation(self, **changes: Any) -> "AnswerPolicy":
        """The same policy with some generation settings changed (a /v1 request's max_tokens, temperature)."""
        return dataclasses.replace(self, generation=self.generation.model_copy(update=changes))


class Statement:
    """A fixed answer streamed in the backend's place: one piece, no engine, nothing to give back."""

    completion_tokens = 0

    def __init__(self, text: str) -> None:
        self._pieces = [text]

    def __aiter__(self) -> "Statement":
        return self

    async def __anext__(self) -> str:
        if not self._pieces:
            raise StopAsyncIteration
        return self._pieces.pop()

    async def aclose(self) -> None:
        self._pieces.clear()


def checked_answer(question: str, text: str, texts: dict[int, str], places: dict[int, str],
                   replace: bool, quote: bool = False) -> tuple[AnswerCheck, dict, dict]:
    """The check of an answer against the prompt's sources (number -> text, and the place it was shown
    under), the `check` of `done`, and what `done` gains (`answer`, and `model_answer` when that is not
    the model's text). An empty answer is replaced by NO_ANSWER whatever `replace` says: there is nothing
    of the model's to show. With `quote`, an answer kept ends with the sources' words its claims stand on
    (answers/quotes.py), listed in `check.quotes`."""
    attributed = attribute(text, texts, places, question)
    check = check_answer(attributed.answer, texts, places, question, attributed.sentences)
    empty = not text
    replaced = empty or (replace and (check.unsupported or check.off_topic or bool(check.unknown_names)
                                      or check.no_quantity) and not check.abstained)
    found = quotes(check, texts, places) if quote and not replaced and not check.abstained else []
    if replaced:
        shown = (NO_ANSWER if empty else NOT_IN_DOCUMENTS)[language_of(question)]
    else:  # its markers put where the sources say it, the sources' words under it
        shown = attributed.answer + quote_block(found, language_of(question))
    fields = {"answer": shown} if shown == text else {"answer": shown, "model_answer": text}
    data = dict(check.to_dict(), replaced=replaced, empty=empty, attributed=attributed.changes,
                quotes=[{"n": q.n, "text": q.text, "contradicts": q.contradicts} for q in found])
    return check, data, fields


@dataclass
class Absent:
    """The words of a question that no source shown and almost no passage holds (`generation.absent_words`),
    found while the prompt is built: when there are any, the model is not asked."""

    words: list[str] = field(default_factory=list)


@dataclass
class PreparedAnswer:
    """A question ready to stream: its prompt and its place in the backend's queue (or an error)."""

    backend: Backend
    prompt: Prompt | None
    stream: Any  # the backend's async iterator of text pieces
    started: float  # perf_counter() when the question arrived
    retrieve_ms: float
    sent: float = 0.0  # perf_counter() when the request went to the backend
    prompt_ms: float | None = None  # after retrieval, until sent: the prompt (its counts) and the absent-word check
    error: BaseException | None = None
    params: GenParams | None = None
    rebuild: Any = None  # builds the prompt that fits, should an early prompt (not yet counted) not fit
    early_count_ms: float | None = None  # an early prompt's count, made beside the engine's prefill
    question: str = ""  # its language is the language of a replaced answer
    replace_unsupported: bool = False
    quote_sources: bool = False
    extra: dict = field(default_factory=dict)  # what `done` also says (a question about one document)
    absent: Absent = field(default_factory=lambda: Absent())  # words of the question no document uses
    _closed: bool = field(default=False, repr=False)

    async def events(self) -> AsyncIterator[Event]:
        if self.error is not None or self.prompt is None:
            yield error_event(self.error or RuntimeError("no prompt"))
            return
        if not self.prompt.counted:
            counting = time.perf_counter()
            try:
                self.prompt, self.stream = await counted_beside(
                    self.stream, self.prompt, self.backend.count_tokens, self.rebuild,
                    lambda fitted: opened(self.backend, fitted, self.params, self.question, self.absent))
            except Exception as exc:
                await self.aclose()
                yield error_event(exc)
                return
            self.early_count_ms = (time.perf_counter() - counting) * 1000
        prompt = self.prompt
        citations = CitationFilter(len(prompt.sources_used))
        shown = citations.feeder()  # resumed once a piece, not a call per piece
        pieces: list[str] = []
        first_token_ms: float | None = None
        engine_first_ms: float | None = None  # the backend's own time to its first piece
        try:
            retrieved = source_dicts(prompt.sources_used, [])  # nothing cited yet: in prompt order
            yield Retrieved(retrieved)
            async with aclosing(backend_pieces(self.stream)) as stream:
                async for piece in stream:
                    if isinstance(piece, PromptProgress):  # asked for (params.progress) by the page's door
                        yield Progress(piece.done, piece.total, piece.cached)
                        continue
                    if engine_first_ms is None and piece:
                        engine_first_ms = (time.perf_counter() - self.sent) * 1000
                    text = shown(piece)
                    if text:
                        if first_token_ms is None:
                            first_token_ms = (time.perf_counter() - self.started) * 1000
                        pieces.append(text)
                        yield Token(text)
            tail = citations.flush()
            if tail:
                pieces.append(tail)
                yield Token(tail)
        except Exception as exc:
            yield error_event(exc)
            return
        finally:
            await self.aclose()
        text = "".join(pieces).strip()
        check_started = time.perf_counter()
        try:
            check, check_data, fields = checked_answer(self.question, text, *prompt.shown,
                                                       self.replace_unsupported, self.quote_sources)
        except Exception as exc:
            yield error_event(exc)
            return
        check_ms = (time.perf_counter() - check_started) * 1000
        # A replaced answer cites nothing: its sources are the closest passages, none of them cited.
        cited = [] if check_data["replaced"] else cited_numbers(fields["answer"])
        yield Sources(source_dicts(prompt.sources_used, cited, check, shown=retrieved))
        asked = not isinstance(self.stream, Statement)  # a statement in the model's place read no prompt
        completion_tokens = getattr(self.stream, "completion_tokens", None)
        timings = {
            "retrieve_ms": round(self.retrieve_ms, 1),
            "prompt_ms": round(self.prompt_ms, 1) if self.prompt_ms is not None else None,
            "early_count_ms": round(self.early_count_ms, 1) if self.early_count_ms is not None else None,
            "first_token_ms": round(first_token_ms, 1) if first_token_ms is not None else None,
            "backend_first_token_ms": round(engine_first_ms, 1) if engine_first_ms is not None else None,
            "check_ms": round(check_ms, 1),
            "total_ms": round((time.perf_counter() - self.started) * 1000, 1),
        }
        extra = dict(self.extra)
        if self.absent.words:
            extra["absent_words"] = self.absent.words
        if "model_answer" in fields:
            extra["model_answer"] = fields["model_answer"]
        yield Done(fields["answer"], self.backend.model, prompt.prompt_tokens if asked else 0, timings, check_data,
                   completion_tokens if isinstance(completion_tokens, int) else None, extra)

    async def aclose(self) -> None:
        """Abort the backend request, or give back the queue place of one never streamed."""
        if self._closed or self.stream is None:
            return
        self._closed = True
        close = getattr(self.stream, "aclose", None)
        if close is not None:
            await close()


async def backend_pieces(stream: Any) -> AsyncIterator[Any]:
    """The backend's pieces as they come: a started request's first (awaited since it was sent), then its
    stream's own, read here rather than through the wrapper that held the first."""
    if isinstance(stream, Started):
        first = await stream.first()
        if first is END:
            return
        yield first
        stream = stream.stream
    async for piece in stream:
        yield piece


def opened(backend: Backend, prompt: Prompt, params: GenParams, question: str, absent: Absent) -> Any:
    """The backend's request for this prompt, on its way while the route replies; or, when the documents
    never use a word of the question, the statement made in the model's place (no model is asked)."""
    if absent.words:
        return Statement(not_in_documents(language_of(question), absent.words))
    return Started(backend.stream(prompt.messages, params))


async def prepare(
    question: str,
    collections: str | list[str],
    *,
    retriever: Retriever,
    backend: Backend,
    policy: AnswerPolicy,
    history: list[dict] | None = None,
    k: int | None = None,
    filters: SearchFilters | None = None,
    query: str | None = None,
    document: DocumentRef | None = None,
    progress: bool = False,
) -> PreparedAnswer:
    """Retrieve, build the prompt and open the backend stream (which takes a place in its queue).

    Retrieval searches for `query` when given (a follow-up rewritten to stand alone), else the question.
    With a `document` (of the collections), the question is about it alone: the whole document when it
    fits the window, else retrieval within it (answers/document_question.py); `done` says which.
    With `progress`, a backend that can tell how far it has read the prompt says so (`Progress` events).
    Raises BackendBusy when the backend's queue is full. Every other failure is kept and reported as
    the `error` event of `events()`. Call `events()` (or `aclose()`) so that the place is given back.
    """
    started = time.perf_counter()
    gen = policy.generation
    extra: dict = {}
    absent = Absent()

    def retrieve_and_build() -> tuple[float, float | None, Prompt, Any]:
        # One worker-thread trip for both: under a burst of questions every trip back to the event
        # loop waits behind the others' work. Tokenizing is CPU work, or HTTP for remote servers.
        if document is not None:
            scoped = document_prompt(question, document, retriever=retriever, backend=backend,
                                     max_answer_tokens=gen.max_tokens, margin=gen.margin_tokens,
                                     k=k or policy.k, history=history, query=query)
            extra.update(scoped.done_fields(document, backend))
            return (time.perf_counter() - started) * 1000, None, scoped.prompt, None  # retrieval and prompt in one
        hits = retriever.search(query or question, collections, k or policy.k, filters=filters)
        retrieved = time.perf_counter()

        def checked(prompt: Prompt) -> Prompt:
            if policy.absent_words:
                texts, places = prompt.shown
                absent.words = absent_words(query or question, [*texts.values(), *places.values()],
                                            lambda words, share: retriever.term_counts(words, collections, share))
            return prompt

        fitted = partial(build_prompt, question, hits, backend, gen.max_tokens, gen.margin_tokens, history)
        prompt = checked(early_prompt(question, hits, backend, gen.max_tokens, gen.margin_tokens, history) or fitted())
        # An early prompt the count finds too long is rebuilt with fewer sources, and checked again: a word
        # of the question only a dropped source held is then one the prompt answered lacks.
        return (retrieved - started) * 1000, (time.perf_counter() - retrieved) * 1000, prompt, lambda: checked(fitted())

    try:
        retrieve_ms, prompt_ms, prompt, fitted = await anyio.to_thread.run_sync(retrieve_and_build)
        params = GenParams(max_tokens=gen.max_tokens, temperature=gen.temperature, stop=prompt.stop, progress=progress)
        sent = time.perf_counter()
        stream = opened(backend, prompt, params, question, absent)
    except BackendBusy:
        raise
    except Exception as exc:
        return PreparedAnswer(backend, None, None, started, 0.0, error=exc)
    if not isinstance(stream, Started):
        prompt.counted = True  # no model reads it: the statement needs no count
    return PreparedAnswer(backend, prompt, stream, started, retrieve_ms, sent, prompt_ms, params=params,
                          rebuild=fitted, question=question, replace_unsupported=policy.replace_unsupported,
                          quote_sources=policy.quote_sources, extra=extra, absent=absent)
