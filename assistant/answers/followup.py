"""A follow-up question ("and what about its timeout?") turned into a standalone search query.

Retrieval sees one query, with no memory of the conversation: "it" finds nothing useful. Two ways out:
- by the model: one short extra call (a few-shot prompt, a small token budget, a timeout), its result
  checked (one line, not empty, not absurdly long, about the conversation's words); a failed or
  refused call falls back to the next way;
- the deterministic fallback: the previous question's content words (stop words dropped) added to
  the follow-up.
The prompt given to the model for the answer still carries the question as the user asked it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Literal

import anyio

from indexes.lexical.fts5 import STOPWORDS

from assistant.backends.base import Backend, BackendError, GenParams, Message

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
    params = GenParams(max_tokens=max_tokens, temperature=0.0, stop=["\n"])
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
