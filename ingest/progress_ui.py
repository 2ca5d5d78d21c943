"""Live progress bars on the terminal: one fed by a run's events, one that follows a job in the store."""

from __future__ import annotations

import time
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

from indexes.jobs import Jobs
from indexes.terminal_text import terminal_safe
from ingest.pipeline import IngestReport, ProgressEvent

FINAL_JOB_STATES = ("done", "failed", "cancelled")


class _RateColumn(ProgressColumn):
    """Files per second."""

    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:.1f} files/s" if speed else "– files/s", style="progress.data.speed")


def _short(path: str, width: int = 32) -> str:
    """The end of a file name for the progress line, safe to print there (the column reads markup)."""
    return terminal_safe(path if len(path) <= width else "…" + path[-(width - 1):], markup=True)


def _progress(console: Console, enabled: bool, *extra: ProgressColumn) -> Progress:
    return Progress(
        SpinnerColumn(), TextColumn("[bold]{task.fields[current]}", table_column=None), BarColumn(),
        MofNCompleteColumn(), TaskProgressColumn(), *extra, console=console, transient=True, disable=not enabled,
    )


class RunProgressBar:
    """A rich progress bar fed by the pipeline's progress events (an in-process run)."""

    def __init__(self, console: Console, enabled: bool = True) -> None:
        self.progress = _progress(console, enabled, _RateColumn(), TimeRemainingColumn())
        self.task = None

    def __enter__(self) -> "RunProgressBar":
        self.progress.__enter__()
        self.task = self.progress.add_task("ingest", total=None, current="scanning…")
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def update(self, event: ProgressEvent) -> None:
        if event.stage == "start":
            self.progress.update(self.task, total=event.total, completed=event.completed, current="")
        elif event.stage == "begin":
            self.progress.update(self.task, current=_short(event.path))
        elif event.stage == "ocr":
            self.progress.update(self.task, current=_short(event.path) + " (reading text in images: OCR)")
        elif event.stage == "file":
            self.progress.update(self.task, completed=event.completed)
        else:
            self.progress.update(self.task, completed=event.completed, current="done")


class _JobStats(ProgressColumn):
    """Chunks written, rate and ETA as the job row reports them."""

    def render(self, task) -> Text:
        f = task.fields
        eta = f.get("eta")
        eta_text = "–" if eta is None else time.strftime("%H:%M:%S", time.gmtime(eta))
        return Text(f"{f.get('chunks', 0)} chunks · {f.get('rate', 0):.1f} files/s · ETA {eta_text}",
                    style="progress.data.speed")


def follow_job(jobs: Jobs, job_id: int, console: Console, *, poll_s: float = 0.5, enabled: bool = True,
               timeout_s: float | None = None) -> dict[str, Any] | None:
    """Show a job's progress until it ends (or timeout); returns its last progress record."""
    started = time.monotonic()
    info = jobs.progress(job_id)
    if info is None:
        return None
    with _progress(console, enabled, _JobStats()) as bar:
        task = bar.add_task("job", total=None, current=f"job {job_id}", chunks=0, rate=0.0, eta=None)
        while True:
            info = jobs.progress(job_id)
            waiting = info["status"] == "pending"
            current = "waiting for a worker…" if waiting else (_short(info["current"][0]) if info["current"] else info["status"])
            bar.update(task, total=info["files_total"] or None, completed=info["files_done"], current=current,
                       chunks=info["chunks"], rate=info["rate_files_per_s"], eta=info["eta_s"])
            if info["status"] in FINAL_JOB_STATES:
                break
            if timeout_s is not None and time.monotonic() - started > timeout_s:
                break
            time.sleep(poll_s)
    return info


def print_summary(console: Console, report: IngestReport) -> None:
    table = Table(title=f"Ingested into {report.collection!r} in {report.seconds:.1f} s", show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for label, value in (
        ("files seen", report.files_seen),
        ("ingested", report.files_ingested),
        ("unchanged (skipped)", report.files_skipped),
        ("left out (binary, empty, generated, type)", report.files_ignored),
        ("failed", report.files_failed),
        ("removed (gone from disk)", report.files_removed),
        ("chunks written", report.chunks_written),
        ("chunks embedded", report.chunks_embedded),
    ):
        table.add_row(label, str(value))
    console.print(table)
    for root, git in report.git.items():
        line = f"git: {root} at {git.get('commit', '')[:12]}" + (f" ({git['branch']})" if git.get("branch") else "")
        console.print(Text(terminal_safe(line)))
    for title, issues, style in (("Files not ingested", report.failures, "bold red"),
                                 ("Files left out", report.ignored, "bold yellow"),
                                 ("Notes", report.notes, "bold")):
        if issues:
            t = Table("file", "reason", title=title, title_style=style)
            for issue in issues:  # names and reasons come from the files: shown, never obeyed
                t.add_row(Text(terminal_safe(issue.path)), Text(terminal_safe(issue.reason, multiline=True)))
            console.print(t)


def print_job(console: Console, info: dict[str, Any]) -> None:
    """A job's final state in a few lines, with its failed files."""
    console.print(Text(terminal_safe(
        f"job {info['id']} ({info['kind']}) for {info['collection']!r}: {info['status']} — "
        f"{info['files_done']}/{info['files_total']} files, {info['chunks']} chunks, "
        f"{info['files_failed']} failed, {info['files_skipped']} skipped"
        + (f"; error: {info['error']}" if info.get("error") else ""), multiline=True,
    )))
    if info["errors"]:
        t = Table("file", "reason", title="Files not ingested", title_style="bold red")
        for e in info["errors"]:
            t.add_row(Text(terminal_safe(e["path"])), Text(terminal_safe(e["reason"] or "", multiline=True)))
        console.print(t)
