"""`assistant batch questions.jsonl --collection C --out answers.jsonl`: many answers, resumable."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from indexes.store import Store
from indexes.terminal_text import terminal_safe

from assistant.backends.base import BackendError
from assistant.backends.registry import backend_names
from assistant.services import Services
from assistant.settings import Settings
from assistant.commands import fail


def register(sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = add_common(sub.add_parser(
        "batch", help="answer a JSONL file of questions into a JSONL file of answers (resumable)"))
    p.add_argument("questions", type=Path, help='JSONL: {"id"?: ..., "question": "..."} or a question per line')
    p.add_argument("--collection", "-c", required=True, action="append", help="collection (repeat for several)")
    p.add_argument("--out", "-o", required=True, type=Path, help="JSONL answers, appended; a re-run skips the ids in it")
    p.add_argument("--concurrency", "-j", type=int, default=4, help="questions in flight at once (default 4)")
    p.add_argument("-k", type=int, help="sources to give the model")
    p.add_argument("--backend", choices=backend_names(), help="LLM backend")
    p.set_defaults(func=run_batch_command, overrides=lambda a: {"backend": a.backend} if a.backend else {})



def run_batch_command(args: argparse.Namespace, settings: Settings) -> int:
    from assistant.answers.question_file import read_questions

    if not args.questions.is_file():
        return fail(f"{args.questions} is not a file")
    if args.out.exists() and args.out.resolve() == args.questions.resolve():
        return fail("--out must not be the questions file")
    if not 1 <= args.concurrency <= 256:
        return fail("--concurrency must be between 1 and 256")
    if args.k is not None and not 1 <= args.k <= 50:
        return fail("-k must be between 1 and 50")
    questions, bad = read_questions(args.questions, settings.server.max_question_chars)
    for b in bad:
        print(terminal_safe(f"{args.questions}:{b.line}: {b.message}"), file=sys.stderr)
    if err := check_collections(settings, args.collection):  # before a backend is started for nothing
        return fail(err)
    try:
        services = Services.build(settings)
    except BackendError as exc:
        return fail(str(exc))
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        report = asyncio.run(answer_all(services, questions, args))
    finally:
        asyncio.run(services.aclose())
    report.bad_lines = bad
    print(report.closing_line(), flush=True)
    return 1 if report.failed or bad else 0


def check_collections(settings: Settings, names: list[str]) -> str | None:
    store = Store(settings.data_dir, database_url=settings.database_url)
    try:
        for name in names:
            if store.get_collection(name) is None:
                known = ", ".join(c["name"] for c in store.list_collections()) or "none yet"
                return f"unknown collection {name!r} (known: {known})"
        return None
    finally:
        store.close()


async def answer_all(services: Services, questions, args: argparse.Namespace):
    from assistant.answers.question_file import read_answered, run_batch

    console = Console(stderr=True)
    already = read_answered(args.out)
    todo = sum(1 for q in questions if q.id not in already)
    with Progress(TextColumn("answering"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[failed]} failed"),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=console, disable=not console.is_terminal) as bar:  # fmt: skip
        task = bar.add_task("answering", total=todo, failed=0)
        failed = 0

        def advance(record: dict) -> None:
            nonlocal failed
            failed += bool(record.get("error"))
            bar.update(task, advance=1, failed=failed)

        return await run_batch(services.asking, questions, args.out, args.collection, concurrency=args.concurrency, k=args.k,
                               on_record=advance)  # fmt: skip
