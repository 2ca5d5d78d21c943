"""One job, many workers: the files of a queued job shared out under leases (indexes/lease.py).

Used when the store is on PostgreSQL, where workers on several hosts serve one queue. Every worker
that takes part in a job scans its folders and registers the files (idempotent: a file already
registered keeps its state), then claims batches of files nobody holds and runs each batch through
the same pipeline as a single worker (parse, embed, one write transaction per pool). Its heartbeat
renews the leases of the files it holds; a killed worker's files are claimed by others when their
leases run out. A file written just before a kill is recognised by the job id its document carries
and counted as done without being embedded again; a document is replaced by path in one
transaction, so no chunk is ever doubled. The worker that finds no unfinished file left removes the
documents whose files are gone and closes the job with counts taken from the file rows.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import update
from sqlalchemy.exc import DBAPIError

from indexes.jobs import FileState, Jobs
from indexes.lease import FileLeases
from indexes.models import IngestJob, utcnow
from indexes.store import Store
from ingest.chunking import EmbedderLike
from ingest.pipeline import IngestRun, open_collection
from ingest.prepare import IngestOptions
from ingest.runstate import JobLink
from ingest.archives import archives_dir, scan_path

log = logging.getLogger("ingest.shared_jobs")


class LeaseLink(JobLink):
    """A run's tie to a shared job: file states buffered as a JobLink's; its heartbeat stops the run
    when the job is no longer running (cancelled). The leases are renewed by `Heartbeat`."""

    def beat(self) -> str:
        """A shared job has no single owner to renew: only read whether it still runs."""
        job = self.jobs.get(self.job_id)
        return job.status if job is not None else "cancelled"


class Heartbeat:
    """Renews this worker's leases from a thread of its own, every third of the lease, whatever the
    pipeline is doing (a long embedding call must not let the leases lapse)."""

    def __init__(self, leases: FileLeases, job_id: int, worker: str) -> None:
        self.leases, self.job_id, self.worker = leases, job_id, worker
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-heartbeat", daemon=True)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.leases.lease_s / 3):
            try:
                self.leases.renew(self.job_id, self.worker)
            except DBAPIError as exc:  # the database is away for a moment: the next beat tries again
                log.warning("could not renew the leases of job %s: %s", self.job_id, exc)


def start(jobs: Jobs, job: IngestJob, worker: str) -> bool:
    """Move a pending job to running (one worker wins; the others join it as it runs)."""
    if job.status == "running":
        return True
    now = utcnow()
    with jobs.session() as s:
        result = s.exec(update(IngestJob).where(IngestJob.id == job.id, IngestJob.status == "pending").values(
            status="running", worker=worker, started_at=now, heartbeat_at=now, attempts=IngestJob.attempts + 1))
        s.commit()
    return result.rowcount == 1 or (jobs.get(job.id) or job).status == "running"


def shared_job(store: Store, jobs: Jobs, leases: FileLeases, embedder: EmbedderLike, job: IngestJob, worker: str,
               options: IngestOptions, stop: threading.Event, *, batch: int, poll_s: float) -> str:
    """Take part in a job until none of its files is left to claim; returns the job's status then
    ('done' when this worker closed it, 'running' when others still hold files, or why it stopped)."""
    if not start(jobs, job, worker):
        return "taken"
    params = json.loads(job.params or "{}")
    paths = [str(Path(p)) for p in params.get("paths", [])]
    coll = open_collection(store, embedder, job.collection)
    archives = archives_dir(store.data_dir, job.collection)
    scans = [scan_path(p, archives, use_git=options.use_git, exclude=options.exclude, root=params.get("root"))
             for p in paths]
    files = {f.rel_path: f for sc in scans for f in sc.files}
    problems = {p.rel_path: p for sc in scans for p in sc.problems}
    jobs.add_files(job.id, [FileState(f.rel_path, "pending", size=f.size) for f in files.values()]
                   + [FileState(p.rel_path, "pending") for p in problems.values()])
    link = LeaseLink(jobs, job.id, worker, stop, heartbeat_s=2.0)
    run = IngestRun(store, embedder, coll, options, None, link)
    for sc in scans:
        run.git_by_root[sc.root] = sc.git
    try:
        with Heartbeat(leases, job.id, worker):
            while not stop.is_set():
                claimed = leases.claim(job.id, worker, batch)
                if not claimed:
                    if leases.unfinished(job.id):
                        stop.wait(poll_s)  # others hold the rest; their leases may still run out
                        link.flush()
                        continue
                    break
                try:
                    _run_batch(run, store, coll, claimed, files, problems)
                except DBAPIError as exc:  # a deadlock, a lost connection: the batch goes back to the queue
                    log.warning("job %s: a batch failed and goes back to the queue: %s", job.id, exc)
                    run.pending, run.failed_writes, link.buffer = [], [], {}
                    leases.release(job.id, worker)
    finally:
        link.flush(force=True)
        if stop.is_set():
            leases.release(job.id, worker)
    if link.status != "running":
        return link.status
    if stop.is_set():
        return "stopped"
    run.existing.clear()
    run.existing.update({d.path: d for d in store.list_documents(coll)})
    keep = set(files) | {p for p, prob in problems.items() if prob.state == "failed"}
    for sc in scans:
        if sc.is_dir:
            run.remove_vanished(sc.root, keep)
    link.flush(force=True)
    current = jobs.get(job.id)
    if current is None or current.status != "running":
        return current.status if current is not None else "cancelled"
    jobs.finish(job.id, current.worker or worker, "done")
    return "done"


def _run_batch(run: IngestRun, store: Store, coll: Any, claimed: list[tuple[str, int]], files: dict, problems: dict) -> None:
    """One claimed batch through the pipeline: problems recorded, files prepared, embedded, written."""
    todo = []
    for path, _size in claimed:
        doc = store.get_document(coll, path)  # another worker may have written it before it died
        if doc is not None:
            run.existing[path] = doc
        else:
            run.existing.pop(path, None)
        if path in files:
            todo.append(files[path])
        elif path in problems:
            prob = problems[path]
            run.ignore(path, prob.reason) if prob.state == "skipped" else run.fail(path, prob.root, prob.reason)
        else:
            run.state(path, "failed", "no longer found in the source")
            run.finished(path, "failed")
    if todo:
        run.process(todo)
    run.flush()
