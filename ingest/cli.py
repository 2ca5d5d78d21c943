"""`assistant ingest`, `assistant worker`, `assistant jobs` and `assistant reembed`: ingestion from the
command line.

Loaded through the `assistant.commands` entry point; the settings object comes from the caller and
is only read through its attributes, so this package stays independent of the server package.

`assistant ingest` runs in this process by default, recorded as a job in the store like any other
(so the API shows it, and a worker resumes it if this process is killed); `--enqueue` leaves it to a
worker; `--watch` keeps the folder in sync afterwards.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from indexes.factory import MODELS, Embedders, embedder_model
from indexes.jobs import Jobs, worker_name
from indexes.store import COLLECTION_NAME, Store, StoreError
from indexes.terminal_text import terminal_safe
from ingest.pipeline import IngestReport, JobLink, ingest_paths
from ingest.prepare import IngestOptions
from ingest.progress_ui import RunProgressBar, follow_job, print_job, print_summary
from ingest.worker import Worker, options_from

# Libraries that log per-file notices ("No languages specified", pdfminer colour warnings) which
# would tear through the progress bar; failures reach the user through the report instead.
NOISY_LOGGERS = ("unstructured", "unstructured_inference", "pdfminer", "pypdf", "transformers", "sentence_transformers")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="index files and folders into a collection (re-runs skip unchanged files)")
    _common(p)
    p.add_argument("paths", nargs="+", metavar="PATH", help="folders or files to ingest")
    p.add_argument("--collection", "-c", required=True, help="collection to add them to (created if new)")
    p.add_argument("--chunk-tokens", type=int, help="chunk size in embedder tokens")
    p.add_argument("--overlap-tokens", type=int, help="tokens repeated between consecutive chunks")
    p.add_argument("--ocr-languages", metavar="LANGS",
                   help="tesseract languages scanned PDF pages and images are read in, joined by '+' (eng+chi_sim); "
                   "the collection keeps them for its later runs")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object on stdout")
    p.add_argument("--watch", action="store_true", help="after ingesting, keep the folder in sync as files change")
    p.add_argument("--enqueue", action="store_true", help="queue a job for `assistant worker` instead of running here")
    p.add_argument("--follow", action="store_true", help="with --enqueue: show the job's progress until it ends")
    p.set_defaults(func=run, overrides=overrides)

    w = sub.add_parser("worker", help="run queued ingestion jobs (resumes jobs of workers that died)")
    _common(w)
    w.add_argument("--once", action="store_true", help="exit when the queue is empty")
    w.add_argument("--exit-with-parent", nargs="?", type=int, const=0, default=None, metavar="PID",
                   help="exit when the process that started this one (or process PID) ends")
    w.set_defaults(func=run_worker)

    r = sub.add_parser("reembed", help="re-embed a collection's chunks with another embedder (no file is re-read)")
    _common(r)
    r.add_argument("collection", help="the collection to re-embed")
    r.add_argument("--embedder", required=True, choices=MODELS, help="the embedder to build it with from now on")
    r.add_argument("--batch", type=int, default=256, help="chunks embedded at a time (default 256)")
    r.add_argument("--json", action="store_true", help="print the report as one JSON object on stdout")
    r.set_defaults(func=run_reembed)

    j = sub.add_parser("jobs", help="list ingestion jobs, or show (--follow) or cancel one")
    _common(j)
    j.add_argument("job", nargs="?", type=int, help="a job id")
    j.add_argument("--follow", action="store_true", help="show a live progress bar until the job ends")
    j.add_argument("--cancel", action="store_true", help="cancel the job")
    j.add_argument("--json", action="store_true", help="print JSON")
    j.set_defaults(func=run_jobs)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", help="data directory (store, indexes); env ASSISTANT_DATA_DIR")
    p.add_argument("--config", help="TOML config file; env ASSISTANT_CONFIG")


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    ingest = {k: v for k, v in (("chunk_tokens", args.chunk_tokens), ("overlap_tokens", args.overlap_tokens)) if v is not None}
    return {"ingest": ingest} if ingest else {}


def fail(message: str, command: str = "ingest") -> int:
    print(f"assistant {command}: {terminal_safe(message, multiline=True)}", file=sys.stderr)
    return 2


def quiet_libraries() -> None:
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def run(args: argparse.Namespace, settings: Any) -> int:
    """Ingest, showing progress on stderr; 0 when the run completed, even if some files failed."""
    missing = [p for p in args.paths if not Path(p).expanduser().exists()]
    if missing:
        return fail("no such file or folder: " + ", ".join(missing))
    if not COLLECTION_NAME.match(args.collection):
        return fail(f"invalid collection name {args.collection!r}: use 1-64 letters, digits, '.', '_' or '-', "
                    "starting with a letter or digit")
    if args.watch and (len(args.paths) != 1 or not Path(args.paths[0]).expanduser().is_dir()):
        return fail("--watch takes exactly one folder")
    quiet_libraries()
    paths = [str(Path(p).expanduser().resolve()) for p in args.paths]
    store = Store(settings.data_dir, database_url=settings.database_url)
    jobs = Jobs(store.engine, stale_after_s=settings.ingest.worker_stale_s)
    err = Console(stderr=True)
    try:
        coll = store.get_collection(args.collection)
        job_options = {k: getattr(args, k) for k in ("chunk_tokens", "overlap_tokens", "ocr_languages")
                       if getattr(args, k) is not None}
        job = jobs.enqueue(coll.id if coll else 0, args.collection, {"paths": paths, "options": job_options})
        if args.enqueue:
            return _enqueued(jobs, job.id, args, err)
        options = options_from(settings, json.loads(job.params).get("options"))  # the collection's kept ones too
        name = worker_name()
        claimed = jobs.claim(name, job_id=job.id)
        link = JobLink(jobs, job.id, name)
        embedder = Embedders(settings.embedder)
        try:
            with RunProgressBar(err, enabled=err.is_terminal) as bar:
                report = ingest_paths(store, embedder, paths, args.collection, options=options,
                                      progress=bar.update, link=link)
        except (StoreError, FileNotFoundError) as exc:
            jobs.finish(job.id, name, "failed", str(exc))
            return fail(str(exc))
        except BaseException as exc:
            jobs.finish(job.id, name, "failed", f"{type(exc).__name__}: {exc}")
            raise
        if claimed is not None:
            jobs.finish(job.id, name, "done")
        _print_report(args, report, job.id, store.require_collection(args.collection).embedder)
        if args.watch:
            return _watch(store, embedder, paths[0], args.collection, settings, err, options)
    finally:
        store.close()
    return 0


def _print_report(args: argparse.Namespace, report: IngestReport, job_id: int, embedder: str) -> None:
    if args.json:
        print(json.dumps({**report.to_dict(), "job": job_id, "embedder": embedder}, ensure_ascii=False), flush=True)
    else:
        print_summary(Console(), report)
        Console().print(Text(terminal_safe(f"embedded with {embedder}")), style="dim")


def _enqueued(jobs: Jobs, job_id: int, args: argparse.Namespace, err: Console) -> int:
    if not args.follow:
        print(json.dumps({"job": job_id}) if args.json else f"queued job {job_id}; `assistant jobs {job_id} --follow` shows it")
        return 0
    info = follow_job(jobs, job_id, err, enabled=err.is_terminal)
    print(json.dumps(info) if args.json else "", end="\n" if args.json else "")
    if not args.json:
        print_job(Console(), info)
    return 0 if info["status"] == "done" else 1


def _watch(store: Store, embedder, folder: str, collection: str, settings: Any, err: Console,
           options: IngestOptions) -> int:
    from ingest.watch import watch_folder

    stop = threading.Event()
    err.print(Text(f"watching {terminal_safe(folder)} (Ctrl-C stops)"))

    def on_batch(report: IngestReport) -> None:
        parts = [f"{report.files_ingested} ingested", f"{report.files_removed} removed"]
        if report.files_failed:
            parts.append(f"{report.files_failed} failed: " + "; ".join(f"{f.path}: {f.reason}" for f in report.failures))
        err.print(Text(terminal_safe(f"[{collection}] " + ", ".join(parts) + f" in {report.seconds:.2f} s")))

    try:
        watch_folder(store, embedder, folder, collection, options=options,
                     debounce_ms=settings.ingest.watch_debounce_ms, on_batch=on_batch, stop=stop)
    except KeyboardInterrupt:
        stop.set()
    return 0


def run_worker(args: argparse.Namespace, settings: Any) -> int:
    quiet_libraries()
    logging.basicConfig(level=getattr(logging, str(settings.log_level).upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet_libraries()
    worker = Worker(settings)
    worker.install_signal_handlers()
    try:
        worker.run(once=args.once, parent=None if args.exit_with_parent is None else args.exit_with_parent or os.getppid())
    finally:
        worker.store.close()
    return 0


def run_reembed(args: argparse.Namespace, settings: Any) -> int:
    """Re-embed a collection with a rich progress bar on stderr; the collection is unchanged on failure."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ingest.reembed import reembed

    if args.batch < 1:
        return fail("--batch must be at least 1", "reembed")
    quiet_libraries()
    store = Store(settings.data_dir, database_url=settings.database_url)
    err = Console(stderr=True)
    try:
        if store.get_collection(args.collection) is None:
            return fail(f"unknown collection {args.collection!r}", "reembed")
        embedder = embedder_model(args.embedder, settings.embedder)
        columns = (TextColumn("[bold]re-embedding"), BarColumn(), MofNCompleteColumn(), TextColumn("chunks"),
                   TimeRemainingColumn())
        with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as bar:
            task = bar.add_task("reembed", total=None)
            report = reembed(store, embedder, args.collection, batch=args.batch,
                             progress=lambda done, total: bar.update(task, completed=done, total=total))
    except StoreError as exc:
        return fail(str(exc), "reembed")
    finally:
        store.close()
    out = report.to_dict()
    if args.json:
        print(json.dumps(out, ensure_ascii=False), flush=True)
    else:
        line = (f"{args.collection}: {out['chunks']} chunks re-embedded with {out['embedder']} "
                f"(was {out['embedder_before'] or 'none'}) in {out['seconds']:.1f} s")
        Console().print(Text(terminal_safe(line)))
    return 0


def run_jobs(args: argparse.Namespace, settings: Any) -> int:
    store = Store(settings.data_dir, database_url=settings.database_url)
    jobs = Jobs(store.engine)
    console = Console()
    try:
        if args.job is None:
            rows = [jobs.progress(j.id, errors=0) for j in jobs.list(limit=50)]
            if args.json:
                print(json.dumps(rows))
            for info in [] if args.json else rows:
                console.print(Text(f"{info['id']:>5}  {info['status']:<9} {terminal_safe(info['collection']):<20} "
                                   f"{info['files_done']}/{info['files_total']} files  {info['chunks']} chunks"))
            return 0
        if jobs.get(args.job) is None:
            print(f"assistant jobs: no job {args.job}", file=sys.stderr)
            return 2
        if args.cancel:
            jobs.cancel(args.job)
        err = Console(stderr=True)
        info = follow_job(jobs, args.job, err, enabled=err.is_terminal) if args.follow else jobs.progress(args.job)
        if args.json:
            print(json.dumps(info))
        else:
            print_job(console, info)
        return 0
    finally:
        store.close()
