"""`assistant feedback export`: the answers readers judged (thumbs up or down, their comments), with the
question, the answer and its sources, for whoever improves the documents and the prompts. The same list
as `GET /api/feedback`, read from the store directly.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime

from rich.console import Console
from rich.table import Table

from indexes.feedback import RATINGS, judged_answers
from indexes.terminal_text import terminal_safe

from assistant.commands.query import fail
from assistant.settings import Settings

PREVIEW_CHARS = 160  # the table shows the start of long questions, answers and comments


def register(sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = add_common(sub.add_parser("feedback", help="the answers readers judged, with their comments and sources"))
    actions = p.add_subparsers(dest="feedback_command", metavar="ACTION", required=True)
    export = add_common(actions.add_parser("export", help="list the judged answers, latest first (a table, or JSON)"))
    export.add_argument("--json", action="store_true", help="a JSON list, each with its full answer and sources")
    export.add_argument("--rating", type=int, choices=RATINGS, help="only thumbs up (1) or thumbs down (-1)")
    export.add_argument("--since", metavar="ISO", help="only judged at or after this time (UTC without a zone)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from indexes.db import make_store_engine

    try:
        since = datetime.fromisoformat(args.since) if args.since else None
    except ValueError:
        return fail(f"--since is an ISO-8601 date or time (2026-12-01, 2026-12-01T09:30Z), not {args.since!r}")
    engine = make_store_engine(settings.data_dir, settings.database_url)
    try:
        rows = judged_answers(engine, rating=args.rating, since=since)
    finally:
        engine.dispose()
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        print_table(rows)
    return 0


def short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def cited_paths(row: dict) -> str:
    return ", ".join(dict.fromkeys(s["path"] for s in row["sources"] if s["cited"])) or "-"


def print_table(rows: list[dict]) -> None:
    console = Console(highlight=False)
    if not rows:
        console.print("no judged answers")
        return
    table = Table(show_lines=True)
    for name in ("when", "rating", "conv/turn"):
        table.add_column(name, no_wrap=True)
    for name in ("question", "answer", "comment", "cited"):
        table.add_column(name, ratio=1)
    for r in rows:
        table.add_row(
            r["created_at"][:19].replace("T", " "), "👍" if r["rating"] > 0 else "👎",
            f"{r['conversation_id']}/{r['turn_id']}" + ("" if r["status"] == "done" else f" ({r['status']})"),
            *(terminal_safe(short(r[k]), markup=True) for k in ("question", "answer", "comment")),
            terminal_safe(cited_paths(r), markup=True),
        )
    console.print(table)
