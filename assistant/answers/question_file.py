"""Batch answers: a JSONL file of questions in, one JSON line per answer (with sources) out, resumable.

Each answer goes through the ask use case (answers/ask.py), the same path as `/api/ask`, with N questions in flight at once
so a batching engine serves them together. Every answer is appended to the output file and flushed as
soon as it is complete, so a killed run loses at most the answers that were in flight; the next run
reads the output, keeps what was answered (a cut-off last line is dropped, failed answers are tried
again) and asks only the rest.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import anyio

from assistant.answers import ask
from assistant.answers.ask import Asking
from assistant.backends.base import Backend, Message
from assistant.security.access import LOCAL_USER

BUSY_RETRIES = 60  # a full backend queue is waited out: the batch fills it on purpose


@dataclass
class Question:
    id: str
    question: str
    line: int


@dataclass
class BadLine:
    line: int
    message: str


def question_id(question: str) -> str:
    """The id of a question given without one: stable across runs and edits of other lines."""
    return "q-" + hashlib.sha256(" ".join(question.split()).encode()).hexdigest()[:12]


def parse_line(raw: str, max_chars: int) -> tuple[str | None, str]:
    """(id or None, question) of one input line; ValueError says what is wrong with it."""
    text = raw.strip()
    if text[:1] in "{[\"":
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON: {exc.msg} (column {exc.colno})") from None
    else:
        value = text  # a plain-text question
    qid: Any = None
    if isinstance(value, dict):
        unknown = set(value) - {"id", "question"}
        if unknown:
            raise ValueError(f"unknown fields: {', '.join(sorted(unknown))} (expected id, question)")
        qid, value = value.get("id"), value.get("question")
        if qid is not None and (isinstance(qid, bool) or not isinstance(qid, (str, int)) or str(qid).strip() == ""):
            raise ValueError("`id` must be a non-empty string or an integer")
    if not isinstance(value, str):
        raise ValueError('expected {"id"?: ..., "question": "..."} or a question string')
    question = value.strip()
    if not question:
        raise ValueError("the question is empty")
    if len(question) > max_chars:
        raise ValueError(f"the question is too long: {len(question)} characters, at most {max_chars}")
    return (None if qid is None else str(qid).strip()), question


def read_questions(path: Path, max_chars: int) -> tuple[list[Question], list[BadLine]]:
    """Every valid question of the file, and each bad line with its number and what is wrong."""
    questions: list[Question] = []
    bad: list[BadLine] = []
    seen: dict[str, int] = {}
    for n, raw in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            qid, question = parse_line(raw, max_chars)
        except ValueError as exc:
            bad.append(BadLine(n, str(exc)))
            continue
        qid = qid or question_id(question)
        if qid in seen:
            bad.append(BadLine(n, f"id {qid!r} was already used on line {seen[qid]} (answered once)"))
            continue
        seen[qid] = n
        questions.append(Question(qid, question, n))
    return questions, bad


def read_answered(out: Path) -> dict[str, dict]:
    """The answers already in `out`, by id; rewrites the file without a cut-off last line or failures.

    A run killed mid-write leaves a last line without its newline; failed answers are asked again.
    Either is removed first (atomically: temporary file, rename) so that each question ends up once.
    """
    if not out.exists():
        return {}
    data = out.read_bytes()
    lines = data.split(b"\n")
    dropped = lines.pop() != b""  # text after the last newline: a write cut off by the kill
    answered: dict[str, dict] = {}
    keep: list[bytes] = []
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            dropped = True
            continue
        if not isinstance(record, dict) or "id" not in record or record.get("error") or str(record["id"]) in answered:
            dropped = True
            continue
        answered[str(record["id"])] = record
        keep.append(line)
    if dropped:
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_bytes(b"".join(line + b"\n" for line in keep))
        os.replace(tmp, out)
    return answered


@dataclass
class BatchReport:
    total: int  # valid questions in the input
    skipped: int  # already answered by an earlier run
    answered: int = 0
    failed: int = 0
    bad_lines: list[BadLine] = field(default_factory=list)
    seconds: float = 0.0
    completion_tokens: int = 0

    @property
    def questions_per_s(self) -> float:
        return (self.answered + self.failed) / self.seconds if self.seconds > 0 else 0.0

    @property
    def tokens_per_s(self) -> float:
        """Aggregate generation speed: every answer's tokens over the batch's wall-clock time."""
        return self.completion_tokens / self.seconds if self.seconds > 0 else 0.0

    def closing_line(self) -> str:
        return (
            f"{self.answered} answered, {self.failed} failed, {self.skipped} already answered, "
            f"{len(self.bad_lines)} bad lines; {self.seconds:.1f} s: {self.questions_per_s:.2f} questions/s, "
            f"{self.tokens_per_s:.1f} tokens/s aggregate ({self.completion_tokens} tokens)"
        )


def answer_tokens(backend: Backend, text: str) -> int:
    """Tokens of an answer by the backend's own tokenizer (when its stream does not report them)."""
    if not text:
        return 0
    with_text = backend.count_tokens([Message(role="user", content=text)])
    return max(0, with_text - backend.count_tokens([Message(role="user", content="")]))


async def answer_question(asking: Asking, q: Question, collections: list[str], k: int | None) -> dict:
    """One output record: the answer, its sources and token usage, or the error."""
    started = time.perf_counter()
    record: dict[str, Any] = {"id": q.id, "question": q.question}
    for attempt in range(BUSY_RETRIES):
        try:
            answering = await asking.open(LOCAL_USER, ask.Question(q.question, tuple(collections), k=k))
        except ask.AskError as exc:
            if exc.code == "busy" and attempt < BUSY_RETRIES - 1:  # nothing was asked yet: wait it out
                await asyncio.sleep(min(max(exc.retry_after or 0, 0.2), 2.0))
                continue
            record["error"] = f"{exc.message} ({exc.code})"
            break
        got = await answering.outcome()
        if got.sources:
            record["sources"] = got.sources
        if got.done is not None:
            done = got.done
            tokens = done.completion_tokens
            if tokens is None:
                tokens = await anyio.to_thread.run_sync(answer_tokens, asking.backend, done.answer)
            record.update(answer=done.answer, model=done.model,
                          usage={"prompt_tokens": done.prompt_tokens, "completion_tokens": tokens})
        if got.failed is not None:
            record["error"] = got.failed.message
        record.setdefault("answer", got.answer)
        break
    record.setdefault("answer", "")
    record.setdefault("sources", [])
    record["seconds"] = round(time.perf_counter() - started, 3)
    return record


async def run_batch(
    asking: Asking,
    questions: list[Question],
    out: Path,
    collections: list[str],
    *,
    concurrency: int,
    k: int | None = None,
    on_record: Callable[[dict], None] | None = None,
) -> BatchReport:
    """Answer the questions not yet in `out`, `concurrency` at a time, appending each answer as it ends."""
    answered = read_answered(out)
    todo = [q for q in questions if q.id not in answered]
    report = BatchReport(total=len(questions), skipped=len(questions) - len(todo))
    queue: asyncio.Queue[Question] = asyncio.Queue()
    for q in todo:
        queue.put_nowait(q)
    started = time.perf_counter()
    with out.open("a", encoding="utf-8") as f:

        async def worker() -> None:
            while True:
                try:
                    q = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                record = await answer_question(asking, q, collections, k)
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
                f.flush()  # in the OS now: a killed process loses only the answers still in flight
                if record.get("error"):
                    report.failed += 1
                else:
                    report.answered += 1
                    report.completion_tokens += int((record.get("usage") or {}).get("completion_tokens") or 0)
                if on_record is not None:
                    on_record(record)

        await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(todo) or 1)))))
    report.seconds = time.perf_counter() - started
    return report
