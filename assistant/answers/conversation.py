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

A follow-up question ("and what about its timeout?") turned into a standalone search query.

Retrieval sees one query, with no memory of the conversation: "it" finds nothing useful. Two ways out:
- by the model: one short extra call (a few-shot prompt, a small token budget, a timeout), its result
  checked (one line, not empty, not absurdly long, about the conversation's words); a failed or
  refused call falls back to the next way;
- the deterministic fallback: the previous question's content words (stop words dropped) added to
  the follow-up.
The prompt given to the model for the answer still carries the question as the user asked it.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Literal

import anyio
from sqlalchemy.engine import Engine

from indexes.conversations import add_turn, get_conversation, latest_variants, name_untitled
from indexes.lexical.fts5 import STOPWORDS
from indexes.models import Conversation, Turn

from assistant.backends.base import Backend, BackendError, GenParams, Message
from assistant.answers.events import Done, Event, Failed, Retrieved, Sources
from assistant.answers.quotes import without_quotes
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
        if t.answer:  # without the sources' words quoted under it: the model is not to copy that block
            out.append({"role": "assistant", "content": without_quotes(t.answer)})
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
    # The collections the conversation was started with (the default scope of its questions), read once.
    collections: list[str] = field(default_factory=list)
    conversation_id: int = 0  # the stored conversation's id (`conversation.id`)
    document: dict | None = None  # the one document asked about ({id, collection, path, title}), kept with the turn

    @classmethod
    def open(
        cls, engine: Engine, conversation_id: int, *, history_turns: int = 10, regenerate_of: int | None = None
    ) -> "ConversationTurn":
        """UnknownConversation; with `regenerate_of`, UnknownTurn or NotLastQuestion (variants.py)."""
        conv = require_conversation(engine, conversation_id)
        group = None if regenerate_of is None else replaced_group(engine, conversation_id, regenerate_of)
        history = history_for(engine, conversation_id, turns=history_turns, without_group=group)
        return cls(engine, conv, history, variant_of=group, collections=collections_of(conv),
                   conversation_id=conversation_id)

    async def standalone_query(self, backend: Backend, question: str, settings: ConversationSettings) -> str:
        """The search query for question: itself on the first turn, else a rewrite (`standalone_query` below)."""
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
                model_answer=done.extra.get("model_answer"), document=self.document,
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


log = logging.getLogger(__name__)

RewriteMode = Literal["auto", "model", "fallback"]
# Backends that cannot write a rewrite: echo repeats the prompt back.
NON_GENERATIVE = frozenset({"echo"})
WORD = re.compile(r"\w+", re.UNICODE)
MAX_REWRITE_CHARS = 500
ANSWER_EXCERPT_CHARS = 300

REWRITE_PROMPT = """\
Rewrite the follow-up question so that it can be understood without the conversation: replace words \
like "it", "its", "they" and "that" with what they refer to. Write only the rewritten question.

Previous question: How do I reset my password?
Previous answer: Use the self-service portal and follow the link sent to your email.
Follow-up question: How long is it valid?
Rewritten question: How long is a password reset link valid?

Previous question: What does the ingest worker do?
Previous answer: It parses queued files, splits them into chunks and embeds them.
Follow-up question: Can I run two of them?
Rewritten question: Can I run two ingest workers at once?

Previous question: {previous_question}
Previous answer: {previous_answer}
Follow-up question: {question}
Rewritten question:"""


@dataclass
class Rewrite:
    query: str  # what retrieval searches for
    method: Literal["none", "model", "fallback"]  # none: no history, the question as it is


def content_words(text: str) -> list[str]:
    """Distinct lower-case words of text that carry meaning (stop words and single letters dropped), in order."""
    out: list[str] = []
    for word in WORD.findall(text.lower()):
        if word not in STOPWORDS and (len(word) > 1 or not word.isascii()) and word not in out:
            out.append(word)
    return out


def fallback_query(question: str, previous_question: str) -> str:
    """The follow-up with the previous question's content words it lacks added to it."""
    have = set(content_words(question))
    extra = [w for w in content_words(previous_question) if w not in have]
    return f"{question} {' '.join(extra)}".strip() if extra else question


def use_model(backend: Backend, mode: RewriteMode) -> bool:
    """Whether this backend is asked to rewrite: `auto` asks those with a chat template (instruct models)."""
    if backend.name in NON_GENERATIVE or mode == "fallback":
        return False
    return mode == "model" or backend.prompt_style == "chat"


def rewrite_prompt(question: str, previous_question: str, previous_answer: str) -> list[Message]:
    answer = " ".join(previous_answer.split())
    if len(answer) > ANSWER_EXCERPT_CHARS:
        answer = answer[:ANSWER_EXCERPT_CHARS].rsplit(" ", 1)[0] + " …"
    text = REWRITE_PROMPT.format(
        previous_question=" ".join(previous_question.split()), previous_answer=answer or "(none)",
        question=" ".join(question.split()),
    )
    return [Message(role="user", content=text)]


def checked_rewrite(text: str, question: str, previous_question: str) -> str | None:
    """The model's rewrite when it looks like one: one line, not empty, not absurdly long, sharing a
    content word with the conversation (a rewrite about something else would retrieve the wrong sources)
    and adding one to the follow-up (a small base model tends to copy the follow-up as it is, which
    would search for "it")."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return None
    line = lines[0]
    for label in ("Rewritten question:", "Follow-up question:", "Question:"):
        if line.lower().startswith(label.lower()):
            line = line[len(label):].strip()
    line = line.strip("\"'` ")
    limit = min(MAX_REWRITE_CHARS, 2 * (len(question) + len(previous_question)) + 40)
    if not line or len(line) > limit:
        return None
    words = set(content_words(line))
    if not words & set(content_words(f"{question} {previous_question}")) or words <= set(content_words(question)):
        return None
    return line


async def model_rewrite(
    backend: Backend, question: str, previous_question: str, previous_answer: str, *, max_tokens: int, timeout_s: float
) -> str | None:
    """The model's standalone version of question, or None (refused, failed, too slow, or not a rewrite)."""
    messages = rewrite_prompt(question, previous_question, previous_answer)
    params = GenParams(max_tokens=max_tokens, temperature=0.0, stop=["\n"], aside=True)
    pieces: list[str] = []
    try:
        stream = backend.stream(messages, params)  # takes a place in the backend's queue, like an answer
    except BackendError as exc:
        log.info("follow-up rewrite not available (%s); using the fallback", exc)
        return None
    try:
        with anyio.fail_after(timeout_s):
            async for piece in stream:
                pieces.append(piece)
    except TimeoutError:
        log.info("follow-up rewrite took over %.1f s; using the fallback", timeout_s)
        return None
    except BackendError as exc:
        log.info("follow-up rewrite failed (%s); using the fallback", exc)
        return None
    except Exception:  # the answer may still work: the rewrite never fails a question
        log.warning("follow-up rewrite failed; using the fallback", exc_info=True)
        return None
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
    return checked_rewrite("".join(pieces), question, previous_question)


async def standalone_query(
    backend: Backend,
    question: str,
    history: list[dict],
    *,
    mode: RewriteMode = "auto",
    max_tokens: int = 48,
    timeout_s: float = 10.0,
) -> Rewrite:
    """The search query for question asked after history (role/content messages, oldest first)."""
    previous_questions = [m["content"] for m in history if m.get("role") == "user"]
    if not previous_questions:
        return Rewrite(question, "none")
    previous_question = previous_questions[-1]
    if use_model(backend, mode):
        answers = [m["content"] for m in history if m.get("role") == "assistant"]
        rewritten = await model_rewrite(
            backend, question, previous_question, answers[-1] if answers else "", max_tokens=max_tokens,
            timeout_s=timeout_s,
        )
        if rewritten:
            return Rewrite(rewritten, "model")
    return Rewrite(fallback_query(question, previous_question), "fallback")
