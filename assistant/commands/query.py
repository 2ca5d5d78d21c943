"""`assistant ask` and `assistant search`: the same retrieval and answers as the server, in the terminal."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from indexes.retrieval.filters import SearchFilters
from indexes.location import Location
from indexes.terminal_text import terminal_safe

from assistant.answers.ask import AskError, Question
from assistant.answers.quotes import quote_tail
from assistant.answers.source_view import hit_sources
from assistant.backends.registry import backend_names
from assistant.security.access import LOCAL_USER
from assistant.services import Services
from assistant.settings import Settings
from assistant.commands import fail


def register(sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = add_common(sub.add_parser("ask", help="ask a question of a collection; streams the answer, then the sources"))
    p.add_argument("question")
    p.add_argument("--collection", "-c", required=True, action="append", help="collection (repeat for several)")
    p.add_argument("-k", type=int, help="sources to give the model")
    add_filter_options(p)
    p.add_argument("--document", "-d", metavar="PATH_OR_ID",
                   help="ask about this one document of the collection (its path there, or its id): given whole when it fits")
    p.add_argument("--backend", choices=backend_names(), help="LLM backend")
    p.add_argument("--json", action="store_true", help='print {"answer": ..., "sources": [...]} only')
    p.set_defaults(func=run_ask, overrides=lambda a: {"backend": a.backend} if a.backend else {})

    p = add_common(sub.add_parser("search", help="show the sources a query retrieves, without generating"))
    p.add_argument("query")
    p.add_argument("--collection", "-c", required=True, action="append", help="collection (repeat for several)")
    p.add_argument("-k", type=int, default=10, help="hits to show")
    add_filter_options(p)
    p.add_argument("--files", action="store_true", help="one hit per file: files ranked by their best chunk")
    p.add_argument("--json", action="store_true", help="print the hits as a JSON list")
    p.set_defaults(func=run_search)


def add_filter_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--path", action="append", default=[], help="only documents whose path matches this glob (repeat)")
    p.add_argument("--kind", action="append", default=[], help="only these file types, e.g. md, py, pdf (repeat)")


def filters_of(args: argparse.Namespace) -> dict | None:
    return {"paths": args.path, "kinds": args.kind} if (args.path or args.kind) else None



def check_scope(services: Services, names: list[str]) -> str | None:
    for name in names:
        if services.store.get_collection(name) is None:
            known = ", ".join(c["name"] for c in services.store.list_collections()) or "none yet"
            return f"unknown collection {name!r} (known: {known})"
    return None


def run_search(args: argparse.Namespace, settings: Settings) -> int:
    if not args.query.strip():
        return fail("the query is empty")
    if args.k < 1:
        return fail("-k must be at least 1")
    services = Services.build(settings, with_backend=False)
    try:
        if err := check_scope(services, args.collection):
            return fail(err)
        found = services.retriever.search(args.query, args.collection, args.k, filters=filters_of(args),
                                          per_document=1 if args.files else None)
        # which model embedded each hit's collection (and this query for it): collections differ
        embedders = {name: services.store.require_collection(name).embedder for name in args.collection}
        hits = [{**s, "embedder": embedders.get(s["collection"], "")} for s in hit_sources(found)]
    finally:
        services.store.close()
    if args.json:
        print(json.dumps(hits, ensure_ascii=False, indent=2))
        return 0
    table = Table("#", "score", "source", "where", "snippet", show_lines=True)
    for i, h in enumerate(hits, 1):  # Text cells: a `[bold]` in a file is shown, never applied
        source = f"{terminal_safe(h['title'])}\n{terminal_safe(h['path'])}"
        table.add_row(str(i), f"{h['score']:.4f}", Text(source), Text(terminal_location(Location.from_dict(h))),
                      Text(terminal_safe(h["snippet"], multiline=True)))
    Console().print(table)
    return 0


def terminal_location(where: Location) -> str:
    """How the terminal shows a source's place: page, lines and heading, one a line, safe to print (the
    heading comes from the file)."""
    parts = []
    if where.page:
        parts.append(f"p. {where.page}")
    if where.line_start:
        parts.append(f"lines {where.line_start}-{where.line_end}")
    if where.heading_path:
        parts.append(terminal_safe(where.heading_path))
    return "\n".join(parts)


def run_ask(args: argparse.Namespace, settings: Settings) -> int:
    if args.k is not None and not 1 <= args.k <= 50:
        return fail("-k must be between 1 and 50")
    if args.document is not None and (len(args.collection) > 1 or filters_of(args)):
        return fail("--document is asked about within its own collection: name that one only, without --path or --kind")
    services = Services.build(settings)
    try:
        return asyncio.run(stream_answer(services, args))
    finally:
        asyncio.run(services.aclose())


def ask_failure(exc: AskError, services: Services) -> str:
    """The ask use case's refusal as the terminal says it: the message (the known collections where that
    helps) and its code, as the server's doors name it."""
    message = exc.message
    if exc.code == "collection_not_found":
        message += f" (known: {', '.join(c['name'] for c in services.store.list_collections()) or 'none yet'})"
    return f"{message} ({exc.code})"


async def stream_answer(services: Services, args: argparse.Namespace) -> int:
    """The answer streamed as it comes (or printed as JSON at the end), then its sources. The command acts
    with the operator's rights: every collection."""
    question = Question(args.question, tuple(args.collection), k=args.k,
                        filters=SearchFilters.coerce(filters_of(args)), document=args.document)
    try:
        answering = await services.asking.open(LOCAL_USER, question)
    except AskError as exc:
        return fail(ask_failure(exc, services))

    def shown(text: str) -> None:
        if not args.json:
            print(terminal_safe(text, multiline=True), end="", flush=True)

    got = await answering.outcome(on_token=shown)
    text, sources, done = got.answer, got.sources, got.fields
    error = f"{got.failed.message} ({got.failed.code})" if got.failed is not None else None
    if args.json:
        out = {"answer": text, "sources": sources}
        for key in ("check", "model_answer", "document_mode", "document"):
            if key in done:
                out[key] = done[key]
        if error:
            out["error"] = error
        print(json.dumps(out, ensure_ascii=False, indent=2))
    else:
        print(terminal_safe(quoted_after(done), multiline=True))
        if error:
            print(f"error: {terminal_safe(error, multiline=True)}", file=sys.stderr)
        console = Console()
        if notice := check_notice(done):
            console.print(Text(terminal_safe(notice, multiline=True), style="yellow"), highlight=False)
        if line := document_line(done):
            console.print(Text(line, style="dim"), highlight=False)
        for s in sources:
            console.print(Text(source_line(s)), highlight=False)
    return 1 if error else 0


def quoted_after(done: dict) -> str:
    """The sources' words quoted under an answer kept (answers/quotes.py): the stream carried the model's text
    only, so the terminal prints them after it ("" when none)."""
    if (done.get("check") or {}).get("replaced"):
        return ""
    return quote_tail(str(done.get("answer") or ""))


def check_notice(done: dict) -> str | None:
    """What the terminal adds after a streamed answer that the citation check found wanting (the page says
    the same): the streamed text cannot be taken back, so the replacement follows it."""
    check = done.get("check") or {}
    if check.get("empty"):
        return done.get("answer")
    if check.get("replaced"):
        return f"The sources shown do not support this answer. {done.get('answer', '')}".strip()
    if check.get("contradicted"):
        return "A source shown says the opposite of this answer."
    if check.get("unsupported"):
        return "The sources shown do not support this answer."
    if check.get("off_topic"):
        return "This answer does not speak of what was asked."
    if check.get("citation_coverage") == 0:
        return "This answer cites no source."
    return None


def document_line(done: dict) -> str | None:
    """How a question about one document was answered: from all of it, or from passages of it."""
    doc = done.get("document")
    if not doc:
        return None
    name = terminal_safe(doc["path"])
    if done.get("document_mode") == "whole":
        return f"Read all of {name} ({doc['prompt_tokens']} prompt tokens of a {doc['context_window']}-token window)."
    return f"{name} does not fit the model's window whole: answered from the passages found in it."


def source_line(s: dict) -> str:
    """`[n] title — path where`, with the support of a cited source: the terminal's source card."""
    mark = f"[{s['n']}]" if s.get("cited") else f"({s['n']})"
    support = s.get("support")
    if support:
        mark += " supported" if support.get("supported") else " not supported"
    where = terminal_location(Location.from_dict(s)).replace("\n", " · ")
    return f"{mark} {terminal_safe(s['title'])} — {terminal_safe(s['path'])} {where}".rstrip()
