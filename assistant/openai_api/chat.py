"""Chat completions over the ask use case and the backend: OpenAI messages in, an answer's events out as a
`chat.completion` or `chat.completion.chunk` objects (no HTTP in here).

`rag:<collection>` answers through the ask use case (answers/ask.py), its refusals OpenAI-shaped with the
same codes as every door: the last user message is the question, the earlier
user and assistant turns the history; system messages are left out, the prompt keeps its own stable
instructions. The backend's own model gets the conversation as it is, budgeted like a question:
`max_tokens` capped by the generation settings, the prompt counted with the backend's tokenizer and
refused when it cannot fit. Both paths give an answer's events (answers/events.py).

A rag answer carries, beside `choices`, its `sources` (each with its `support`), the `check` of its
citations and, when the check replaced the answer, `model_answer` (the model's own text; the content
is then the replacement). An answer kept may end with the sources' words its claims stand on (answers/quotes.py),
sent after the model's text in a stream and left out of the history when it comes back in a later request.
A question about one document (the `document` field, or the model
`rag:<collection>/<path>`) also carries `document_mode` and `document` (answers/document_question.py). With `append_sources` (the request's field, the model suffix `+sources`, or
`v1.append_sources`) the content ends with the cited sources, numbered as the answer cites them:
"\n\nSources:\n[1] docs/usage.md:10-24", the last content chunk of a stream. Such a list in an earlier
assistant message of the request is dropped from the history.
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import anyio

from assistant.backends.base import Backend, BackendBusy, BackendError, GenParams, Message
from indexes.location import Location

from assistant.answers.ask import AskError, Answering, Question
from assistant.answers.events import Done, Event, Failed, Sources, Token
from assistant.answers.prompts import prompt_location
from assistant.answers.quotes import quote_tail, without_quotes
from assistant.openai_api.protocol import (
    CHAT_ROLES,
    ChatCompletionRequest,
    ChatMessage,
    OpenAIError,
    backend_model,
    busy,
    invalid,
    model_not_found,
    rag_collections,
    rag_document,
    sources_suffix,
)
from assistant.answers.rag import error_event
from assistant.security.access import Identity
from assistant.security.redaction import redact_text
from assistant.services import Services
from assistant.settings import Settings

MAX_HISTORY_TURNS = 20
SOURCES_HEADING = "Sources:"
# The list `append_sources` ends an answer with, as it comes back in a later request's history.
APPENDED_SOURCES = re.compile(r"\n\n" + SOURCES_HEADING + r"\n(?:\[\d+\] [^\n]*(?:\n|\Z))+\Z")


def message_text(message: ChatMessage, i: int) -> str:
    """The text of a message: a string, or the text parts of a list (other parts are refused)."""
    content = message.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        if part.type != "text" or part.text is None:
            raise invalid(f"messages[{i}]: only text content is supported, not {part.type!r} parts", f"messages[{i}].content")
        texts.append(part.text)
    return "".join(texts)


def conversation(messages: list[ChatMessage]) -> list[Message]:
    """The messages as the backend takes them ('developer' is OpenAI's newer name for 'system')."""
    out: list[Message] = []
    for i, m in enumerate(messages):
        if m.role not in CHAT_ROLES:
            raise invalid(
                f"messages[{i}]: unsupported role {m.role!r}; use one of {', '.join(CHAT_ROLES)}", f"messages[{i}].role"
            )
        role = "system" if m.role == "developer" else m.role
        out.append(Message(role=role, content=message_text(m, i)))  # type: ignore[typeddict-item]
    if out[-1]["role"] != "user":
        raise invalid("the last message must be the user's (the question to answer)", "messages")
    if not out[-1]["content"].strip():
        raise invalid("the last user message is empty", "messages")
    return out


def question_and_history(messages: list[Message], max_chars: int) -> tuple[str, list[dict]]:
    """The last user message is the question; the earlier user/assistant turns are the history."""
    question = messages[-1]["content"].strip()
    if len(question) > max_chars:
        raise invalid(f"the question is too long: {len(question)} characters, at most {max_chars}", "messages")
    turns = [dict(m, content=without_quotes(APPENDED_SOURCES.sub("", m["content"])) if m["role"] == "assistant"
                  else m["content"])
             for m in messages[:-1] if m["role"] in ("user", "assistant") and m["content"].strip()]
    return question, turns[-MAX_HISTORY_TURNS:]


def source_place(source: dict) -> str:
    """A source as the appended list names it: path:lines, path:p.page, else path (its headings)."""
    where = Location.from_dict(source)
    place = prompt_location(source.get("path", ""), where)
    if place == source.get("path", "") and where.heading_path:
        place += f" ({where.heading_path})"
    return place


def sources_text(sources: list[dict]) -> str:
    """The cited sources as the lines appended to an answer, numbered as the answer cites them ('' for none)."""
    lines = [f"[{s['n']}] {source_place(s)}" for s in sources if s.get("cited")]
    return f"\n\n{SOURCES_HEADING}\n" + "\n".join(lines) if lines else ""


def stop_list(stop: str | list[str] | None) -> list[str]:
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    if len(stops) > 4 or any(not s for s in stops):
        raise invalid("`stop` takes up to 4 non-empty strings", "stop")
    return stops


def answer_token_budget(req: ChatCompletionRequest, settings: Settings) -> int:
    """The answer's token budget: what the client asks for, at most the server's `generation.max_tokens`."""
    cap = settings.generation.max_tokens
    asked = req.max_completion_tokens or req.max_tokens
    return min(asked, cap) if asked else cap


@dataclass
class ChatRun:
    """A chat completion ready to stream: rag's events (or the backend's, shaped the same way)."""

    model: str
    events: AsyncIterator[Event]
    answering: Answering | None  # the rag path's answer, closed when the client goes away
    max_tokens: int
    stop: list[str] = field(default_factory=list)
    rag: bool = False
    append_sources: bool = False  # end the text with the cited sources (rag answers)

    async def aclose(self) -> None:
        if self.answering is not None:
            await self.answering.aclose()
        close = getattr(self.events, "aclose", None)
        if close is not None:
            await close()


async def start_chat(req: ChatCompletionRequest, services: Services, identity: Identity) -> ChatRun:
    """Validate the request, then open the answer: the ask use case for `rag:` models, the budget check
    + the queue place for the backend's model. Raises OpenAIError (4xx, 429)."""
    if req.n != 1:
        raise invalid("only n=1 is supported", "n")
    messages = conversation(req.messages)
    stops = stop_list(req.stop)
    settings = services.settings
    max_tokens = answer_token_budget(req, settings)
    if services.backend is None:
        raise OpenAIError(503, "no backend is configured", "server_error", "no_backend")
    names = rag_collections(req.model)
    if names is not None:
        document = rag_document(req.model)
        if document is not None and req.document is not None:
            raise invalid("name the document either in the model (rag:<collection>/<path>) or in `document`", "document")
        run = await _start_rag(req, names, messages, services, identity, stops,
                               req.document if document is None else document, max_tokens)
        suffixed = sources_suffix(req.model)[1]
        run.append_sources = req.append_sources if req.append_sources is not None else (
            suffixed or settings.v1.append_sources)
        return run
    if req.append_sources:
        raise invalid("append_sources goes with a rag:<collection> model", "append_sources")
    if req.conversation_id is not None:
        raise invalid("conversation_id goes with a rag:<collection> model", "conversation_id")
    if req.document is not None:
        raise invalid("document goes with a rag:<collection> model", "document")
    try:
        model = await anyio.to_thread.run_sync(backend_model, services)
    except BackendError as exc:
        raise OpenAIError(502, redact_text(str(exc)), "server_error", "backend_error") from None
    if req.model != model:
        raise model_not_found(req.model)
    temperature = settings.generation.temperature if req.temperature is None else req.temperature
    params = GenParams(max_tokens=max_tokens, temperature=temperature, stop=stops)
    return await _start_direct(req.model, messages, services.backend, params, settings.generation.margin_tokens)


async def _start_rag(req: ChatCompletionRequest, names: list[str], messages: list[Message], services: Services,
                     identity: Identity, stops: list[str], document: int | str | None, max_tokens: int) -> ChatRun:
    """A `rag:` model's answer through the ask use case: the last user message is the question, the earlier
    turns the history (a saved conversation's stored turns instead, with `conversation_id`)."""
    if not names:
        raise model_not_found(req.model, "name a collection after 'rag:'")
    if document is not None and len(names) != 1:
        raise invalid("a document is asked about within one collection: name only its own after 'rag:'", "model")
    text, history = question_and_history(messages, services.settings.server.max_question_chars)
    question = Question(text, tuple(names), document=document, conversation_id=req.conversation_id,
                        history=() if req.conversation_id is not None else tuple(history),
                        max_tokens=max_tokens, temperature=req.temperature)
    try:
        answering = await services.asking.open(identity, question)
    except AskError as exc:
        raise ask_error(exc) from None
    return ChatRun(req.model, answering.events(), answering, max_tokens, stops, rag=True)


# The parameter of the request that an ask refusal is about.
ASK_PARAMS = {"collection_not_found": "model", "collection_required": "model", "document_not_found": "document",
              "document_not_answerable": "document", "conversation_not_found": "conversation_id",
              "question_empty": "messages", "question_too_long": "messages"}
OPENAI_TYPES = {403: "permission_error", 429: "rate_limit_error", 503: "server_error"}


def ask_error(exc: AskError) -> OpenAIError:
    """The ask use case's refusal as OpenAI says it: its status and code, OpenAI's type for the status."""
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
    return OpenAIError(exc.status, exc.message, OPENAI_TYPES.get(exc.status, "invalid_request_error"), exc.code,
                       ASK_PARAMS.get(exc.code), headers=headers)


async def _start_direct(model: str, messages: list[Message], backend: Backend, params: GenParams, margin: int) -> ChatRun:
    prompt_tokens = await anyio.to_thread.run_sync(backend.count_tokens, messages)
    budget = backend.context_window - params.max_tokens - margin
    if prompt_tokens > budget:
        raise invalid(
            f"the messages take {prompt_tokens} tokens but only {max(budget, 0)} fit (context window "
            f"{backend.context_window} - answer {params.max_tokens} - margin {margin}); send fewer or shorter messages",
            "messages", "context_length_exceeded",
        )
    try:
        stream = backend.stream(messages, params)
    except BackendBusy as exc:
        raise busy(exc) from None
    return ChatRun(model, direct_events(backend, stream, prompt_tokens), None, params.max_tokens)


async def direct_events(backend: Backend, stream: Any, prompt_tokens: int) -> AsyncIterator[Event]:
    """The backend's text pieces as rag's events (`token`..., `done` | `error`), timed the same way."""
    started = time.perf_counter()
    first: float | None = None
    pieces: list[str] = []
    try:
        async for piece in stream:
            if not piece:
                continue
            if first is None:
                first = (time.perf_counter() - started) * 1000
            pieces.append(piece)
            yield Token(piece)
    except Exception as exc:
        yield error_event(exc)
        return
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
    completion_tokens = getattr(stream, "completion_tokens", None)
    timings = {"first_token_ms": round(first, 1) if first is not None else None,
               "total_ms": round((time.perf_counter() - started) * 1000, 1)}
    yield Done("".join(pieces), backend.model, prompt_tokens, timings,
               completion_tokens=completion_tokens if isinstance(completion_tokens, int) else None)


class StopCut:
    """Ends the answer at the first of the client's stop strings (the rag path's prompt has its own stops).

    Text that might be the start of a stop string is held back until the next piece decides it.
    """

    def __init__(self, stops: list[str]) -> None:
        self.stops = stops
        self.hold = max((len(s) for s in stops), default=1) - 1
        self.buffer = ""
        self.stopped = False

    def feed(self, text: str) -> str:
        if not self.stops:
            return text
        self.buffer += text
        hits = [i for i in (self.buffer.find(s) for s in self.stops) if i >= 0]
        if hits:
            out, self.buffer, self.stopped = self.buffer[: min(hits)], "", True
            return out
        keep = min(self.hold, len(self.buffer))
        out, self.buffer = self.buffer[: len(self.buffer) - keep], self.buffer[len(self.buffer) - keep:]
        return out

    def flush(self) -> str:
        out, self.buffer = self.buffer, ""
        return out


@dataclass
class Outcome:
    """What the events said, gathered: for the final chunk and the non-streamed completion."""

    text: str = ""
    pieces: int = 0
    sources: list[dict] | None = None
    done: Done | None = None
    stopped: bool = False

    def finish_reason(self, max_tokens: int) -> str:
        if self.stopped:
            return "stop"
        return "length" if self.completion_tokens() >= max_tokens else "stop"

    def completion_tokens(self) -> int:
        """The backend's count, or the pieces streamed when it reports none (most pieces are one token)."""
        counted = self.done.completion_tokens if self.done else None
        return counted if counted is not None else self.pieces

    @property
    def replaced(self) -> bool:
        """Whether the check replaced the model's answer (`done.answer` is then the replacement)."""
        return bool(self.done and (self.done.check or {}).get("replaced"))

    def answer(self) -> str:
        """The whole answer: `done.answer` (the model's text with its citations checked, or the statement
        that replaced it), unless a stop string of the request cut the model's text short."""
        if self.done is not None and (self.replaced or not self.stopped):
            return self.done.answer
        return self.text.strip()

    def usage(self) -> dict:
        prompt = self.done.prompt_tokens if self.done else 0
        completion = self.completion_tokens()
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def event_error(failed: Failed) -> OpenAIError:
    """The OpenAIError for an answer's `Failed` event (the message of an internal error is not shown)."""
    if failed.code == "busy":
        return OpenAIError(429, failed.message, "rate_limit_error", "busy",
                           headers={"Retry-After": str(failed.retry_after or 5)})
    if failed.code == "prompt_too_long":
        return invalid(failed.message, "messages", "context_length_exceeded")
    if failed.code == "backend_error":
        return OpenAIError(502, failed.message, "server_error", "backend_error")
    if failed.code == "conversation_not_found":
        return OpenAIError(404, failed.message, "invalid_request_error", failed.code, "conversation_id")
    return OpenAIError(500, "internal server error (see the server's log)", "server_error", "internal_error")


async def texts(run: ChatRun, outcome: Outcome) -> AsyncIterator[str]:
    """The answer's text as it arrives, filling `outcome`; an `error` event raises OpenAIError."""
    cut = StopCut(run.stop)
    try:
        async for event in run.events:
            match event:
                case Token(text=piece) if not cut.stopped:
                    text = cut.feed(piece)
                    outcome.pieces += 1
                    if text:
                        outcome.text += text
                        yield text
                    if cut.stopped:
                        outcome.stopped = True
                case Sources(sources=sources):
                    outcome.sources = sources
                case Done():
                    outcome.done = event
                case Failed():
                    raise event_error(event)
        tail = cut.flush()
        if tail:
            outcome.text += tail
            yield tail
    finally:
        await run.aclose()


def completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


async def completion(run: ChatRun) -> dict:
    """The whole answer as one `chat.completion` (with `sources` for rag models)."""
    outcome = Outcome()
    async for _ in texts(run, outcome):
        pass
    content = outcome.answer()
    if run.append_sources and not outcome.replaced:
        content += sources_text(outcome.sources or [])
    body: dict[str, Any] = {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": run.model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": outcome.finish_reason(run.max_tokens), "logprobs": None}],
        "usage": outcome.usage(),
    }
    if run.rag:
        body.update(rag_fields(outcome))
    return body


def rag_fields(outcome: Outcome) -> dict:
    """What a rag answer carries beside `choices`: `sources`, the citations' `check`, `model_answer` when
    the content is not the model's own text (replaced, its markers corrected, the sources' words quoted
    under it), `absent_words` when no model was asked (a word of the question is in no document), and
    `conversation_id` and `turn_id` in a saved conversation."""
    done = outcome.done.data if outcome.done else {}
    out: dict[str, Any] = {"sources": outcome.sources or []}
    out.update({key: done[key] for key in ("check", "model_answer", "conversation_id", "turn_id", "document_mode",
                                           "document", "absent_words") if key in done})
    return out


async def chunks(run: ChatRun, include_usage: bool = False) -> AsyncIterator[dict]:
    """`chat.completion.chunk` objects: the role, the text pieces (then the replacement of a replaced answer,
    or the appended sources), then the finish reason (with `rag_fields` for rag models), then the usage
    when asked for; a failure midway is one `{"error": ...}` object."""
    cid, created = completion_id(), int(time.time())

    def chunk(delta: dict, finish_reason: str | None = None, **extra: Any) -> dict:
        return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": run.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}], **extra}

    outcome = Outcome()
    yield chunk({"role": "assistant", "content": ""})
    try:
        async for text in texts(run, outcome):
            yield chunk({"content": text})
    except OpenAIError as exc:
        yield exc.body()
        return
    if outcome.replaced:  # the model's text is out already: the replacement follows it (alone after none)
        done = outcome.done
        assert done is not None and done.check is not None  # replaced: the check said so
        yield chunk({"content": ("" if done.check.get("empty") else "\n\n") + done.answer})
    else:  # the sources' words quoted under the answer, then the cited sources when asked for
        quoted = quote_tail(outcome.answer())
        listed = sources_text(outcome.sources or []) if run.append_sources else ""
        if quoted or listed:
            yield chunk({"content": quoted + listed})
    extra = rag_fields(outcome) if run.rag else {}
    yield chunk({}, outcome.finish_reason(run.max_tokens), **extra)
    if include_usage:
        yield {"id": cid, "object": "chat.completion.chunk", "created": created, "model": run.model, "choices": [],
               "usage": outcome.usage()}
