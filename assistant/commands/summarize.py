"""`assistant summarize PATH_OR_DOC_ID --collection C`: a long document's summary, with its line/page marks."""

from __future__ import annotations

import argparse
import asyncio
import json

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from indexes.store import Store
from indexes.summaries import find_document
from indexes.terminal_text import terminal_safe

from assistant.backends.base import Backend, BackendError
from assistant.backends.factory import create_backend
from assistant.backends.registry import backend_names
from assistant.settings import Settings
from assistant.commands import fail


def register(sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = add_common(sub.add_parser(
        "summarize", help="summarise one document of a collection (map-reduce, cited by lines or pages)"))
    p.add_argument("document", metavar="PATH_OR_DOC_ID", help="document id, its path in the collection, or the file on disk")
    p.add_argument("--collection", "-c", required=True, help="collection the document belongs to")
    p.add_argument("--refresh", action="store_true", help="summarise again even when a cached summary exists")
    p.add_argument("--backend", choices=backend_names(), help="LLM backend")
    p.add_argument("--concurrency", type=int, help="summary requests sent at once (summary.concurrency)")
    p.add_argument("--json", action="store_true", help="print the summary event (text, parts, requests) as JSON")
    p.set_defaults(func=run_summarize, overrides=overrides)


def overrides(args: argparse.Namespace) -> dict:
    out: dict = {}
    if args.backend:
        out["backend"] = args.backend
    if args.concurrency is not None:
        out["summary"] = {"concurrency": args.concurrency}
    return out



def run_summarize(args: argparse.Namespace, settings: Settings) -> int:
    if not args.document.strip():
        return fail("name a document: its id, its path in the collection, or the file")
    store = Store(settings.data_dir, database_url=settings.database_url)
    try:
        coll = store.get_collection(args.collection)
        if coll is None:
            known = ", ".join(c["name"] for c in store.list_collections()) or "none yet"
            return fail(f"unknown collection {args.collection!r} (known: {known})")
        doc = find_document(store.engine, coll.id, args.document)
        if doc is None:
            return fail(f"no document {args.document!r} in collection {args.collection!r}")
        try:
            backend = create_backend(settings)
        except BackendError as exc:
            return fail(str(exc))
        return asyncio.run(summarize(store, doc, backend, settings, args))
    finally:
        store.close()


async def summarize(store: Store, doc, backend: Backend, settings: Settings, args: argparse.Namespace) -> int:
    from assistant.answers.summarize import summary_events

    console = Console(stderr=True)
    summary: dict | None = None
    error: str | None = None
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=True, disable=not console.is_terminal) as bar:  # fmt: skip
            tasks: dict[str, int] = {}
            async for event in summary_events(store.engine, doc, backend, settings.summary,
                                              settings.generation.margin_tokens, refresh=args.refresh):  # fmt: skip
                if event.type == "progress":
                    p = event.data
                    name = "map" if p["stage"] == "map" else f"reduce {p['level']}"
                    if name not in tasks:
                        label = "summarising pieces" if p["stage"] == "map" else f"combining (level {p['level']})"
                        tasks[name] = bar.add_task(label, total=p["total"])
                    bar.update(tasks[name], completed=p["done"])
                elif event.type == "summary":
                    summary = event.data
                elif event.type == "error":
                    error = event.data.get("message", "the summary failed")
    finally:
        await backend.aclose()
    if error or summary is None:
        return fail(error or "the summary failed")
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
        return 0
    print(terminal_safe(summary["text"], multiline=True))
    note = "cached" if summary["cached"] else f"{summary['pieces']} pieces, {len(summary['requests'])} requests, {summary['seconds']:.1f} s"
    console.print(Text(terminal_safe(f"{doc.path} — {summary['model']}, {note}"), style="dim"))
    return 0
