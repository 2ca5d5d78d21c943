"""`assistant ingest PATH... --collection NAME`: index folders or files into a collection.

Loaded through the `assistant.commands` entry point; the settings object comes from the caller
and is only read through its attributes, so this package stays independent of the server package.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from indexes.store import COLLECTION_NAME, Store, StoreError
from ingest import offline
from ingest.pipeline import IngestReport, ProgressEvent, ingest_paths

# Libraries that log per-file notices ("No languages specified", pdfminer colour warnings) which
# would tear through the progress bar; failures reach the user through the report instead.
NOISY_LOGGERS = ("unstructured", "unstructured_inference", "pdfminer", "pypdf", "transformers", "sentence_transformers")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="index files and folders into a collection (re-runs skip unchanged files)")
    p.add_argument("--data-dir", help="data directory (store, indexes); env ASSISTANT_DATA_DIR")
    p.add_argument("--config", help="TOML config file; env ASSISTANT_CONFIG")
    p.add_argument("paths", nargs="+", metavar="PATH", help="folders or files to ingest")
    p.add_argument("--collection", "-c", required=True, help="collection to add them to (created if new)")
    p.add_argument("--chunk-tokens", type=int, help="chunk size in embedder tokens")
    p.add_argument("--overlap-tokens", type=int, help="tokens repeated between consecutive chunks")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object on stdout")
    p.set_defaults(func=run, overrides=overrides)


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    ingest = {k: v for k, v in (("chunk_tokens", args.chunk_tokens), ("overlap_tokens", args.overlap_tokens)) if v is not None}
    return {"ingest": ingest} if ingest else {}


def fail(message: str) -> int:
    print(f"assistant ingest: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace, settings: Any) -> int:
    """Ingest, showing progress on stderr; 0 when the run completed, even if some files failed."""
    missing = [p for p in args.paths if not Path(p).expanduser().exists()]
    if missing:
        return fail("no such file or folder: " + ", ".join(missing))
    if not COLLECTION_NAME.match(args.collection):
        return fail(f"invalid collection name {args.collection!r}: use 1-64 letters, digits, '.', '_' or '-', "
                    "starting with a letter or digit")
    from indexes.embed import Embedder

    emb_cfg, ing = settings.embedder, settings.ingest
    try:
        embedder = Embedder(emb_cfg.model_path, batch_size=emb_cfg.batch_size,
                            max_seq_length=emb_cfg.max_seq_length, dtype=emb_cfg.dtype)
    except FileNotFoundError as exc:
        return fail(str(exc))
    embedder.dim  # load the model now: its libraries set their log levels on import, ours come after
    offline.prepare()
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    store = Store(settings.data_dir)
    err = Console(stderr=True)
    try:
        with _ProgressBar(err, enabled=err.is_terminal) as bar:
            report = ingest_paths(
                store, embedder, args.paths, args.collection,
                chunk_tokens=ing.chunk_tokens, overlap_tokens=ing.overlap_tokens,
                max_file_bytes=int(ing.max_file_mb * 1024 * 1024), progress=bar.update,
            )
    except StoreError as exc:
        return fail(str(exc))
    finally:
        store.close()
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        print_summary(Console(), report)
    return 0


class _RateColumn(ProgressColumn):
    """Files per second."""

    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:.1f} files/s" if speed else "– files/s", style="progress.data.speed")


class _ProgressBar:
    """A rich progress bar fed by the pipeline's progress events."""

    def __init__(self, console: Console, enabled: bool = True) -> None:
        self.enabled = enabled
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.fields[current]}", table_column=None),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            _RateColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            disable=not enabled,
        )
        self.task = None

    def __enter__(self) -> "_ProgressBar":
        self.progress.__enter__()
        self.task = self.progress.add_task("ingest", total=None, current="scanning…")
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def update(self, event: ProgressEvent) -> None:
        if event.stage == "start":
            self.progress.update(self.task, total=event.total, current="")
        elif event.stage == "begin":
            name = event.path if len(event.path) <= 32 else "…" + event.path[-31:]
            self.progress.update(self.task, current=name)
        elif event.stage == "file":
            self.progress.update(self.task, completed=event.completed)
        else:
            self.progress.update(self.task, completed=event.completed, current="done")


def print_summary(console: Console, report: IngestReport) -> None:
    table = Table(title=f"Ingested into {report.collection!r} in {report.seconds:.1f} s", show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for label, value in (
        ("files seen", report.files_seen),
        ("ingested", report.files_ingested),
        ("unchanged (skipped)", report.files_skipped),
        ("failed", report.files_failed),
        ("removed (gone from disk)", report.files_removed),
        ("chunks written", report.chunks_written),
        ("chunks embedded", report.chunks_embedded),
    ):
        table.add_row(label, str(value))
    console.print(table)
    if report.failures:
        failed = Table("file", "reason", title="Files not ingested", title_style="bold red")
        for issue in report.failures:
            failed.add_row(issue.path, issue.reason)
        console.print(failed)
