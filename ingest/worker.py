"""`assistant worker`: the process that runs queued ingestion jobs.

It claims the oldest job that needs a worker (pending, or running under a process that died), runs
it with its file states recorded in the store, and closes it. Killed at any moment, it leaves a job
that the next worker resumes. On start it checks that every collection's FAISS and FTS5 indexes agree
with SQLite and repairs them when they do not. SIGTERM and SIGINT stop it cleanly: the running job is
handed back to the queue after the files being written are committed. A store it cannot write to (a
full disk) does not stop it: it tries again every poll, and a job whose end it could not record is
taken up again once its heartbeat is stale.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
from dataclasses import replace
from typing import Any, Callable

from sqlalchemy.exc import OperationalError

from indexes.factory import Embedders
from indexes.jobs import Jobs, worker_name
from indexes.lease import FileLeases
from indexes.maintenance import check_store, purge_collection
from indexes.models import IngestJob
from indexes.no_space import NO_SPACE_REASON, is_no_space
from indexes.store import Store, StoreError
from ingest.archives import archives_dir, scan_path
from ingest.chunking import EmbedderLike
from ingest.pipeline import JobLink, Progress, collection_embedder, ingest_paths
from ingest.prepare import IngestOptions
from ingest.shared_jobs import shared_job

log = logging.getLogger("ingest.worker")


def options_from(settings: Any, overrides: dict[str, Any] | None = None) -> IngestOptions:
    """Ingest options from the settings object (read by attribute), with a job's own overrides."""
    ing = settings.ingest
    exclude = tuple(ing.exclude) if ing.exclude is not None else None
    options = IngestOptions(
        chunk_tokens=ing.chunk_tokens, overlap_tokens=ing.overlap_tokens,
        max_file_bytes=int(ing.max_file_mb * 1024 * 1024),
        file_types=frozenset(t.lower() for t in ing.file_types), exclude=exclude, use_git=ing.use_git,
        embed_pool=ing.embed_pool, parse_process=ing.parse_process,
        parse_timeout_s=ing.parse_timeout_s, parse_memory_mb=ing.parse_memory_mb,
        ocr_languages=ing.ocr_languages, ocr_command=ing.ocr_command, ocr_page_timeout_s=ing.ocr_page_timeout_s,
    )
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    values: dict[str, Any] = {k: int(v) for k, v in given.items() if k in ("chunk_tokens", "overlap_tokens")}
    if isinstance(given.get("ocr_languages"), str) and given["ocr_languages"].strip():
        values["ocr_languages"] = given["ocr_languages"].strip()
    return replace(options, **values) if values else options


class Worker:
    """Claims and runs jobs from one store until stopped."""

    def __init__(self, settings: Any, store: Store | None = None, *, name: str | None = None,
                 progress: Callable[[IngestJob], Progress | None] | None = None,
                 embedder: EmbedderLike | None = None) -> None:
        self.settings = settings
        self.store = store or Store(settings.data_dir, database_url=settings.database_url)
        self.jobs = Jobs(self.store.engine, stale_after_s=settings.ingest.worker_stale_s)
        # On PostgreSQL the workers of every host share each job's files (ingest/shared_jobs.py).
        self.leases = FileLeases(self.store.engine, lease_s=settings.ingest.file_lease_s) if self.store.postgres else None
        self.name = name or worker_name()
        self.stop = threading.Event()
        self._once = False  # run(once=True): a full disk ends the run rather than being waited out
        self.progress = progress
        # Given one, every job uses it; else the embedders of the settings, each built (and its model
        # loaded) on the first job of a collection that needs it: a worker with no job loads no model.
        self.embedder: EmbedderLike | Embedders = embedder if embedder is not None else Embedders(settings.embedder)

    def job_embedder(self, job: IngestJob, options: IngestOptions) -> EmbedderLike:
        """The one embedder of a shared job: the collection's, or settled now from its files' language."""
        paths = json.loads(job.params or "{}").get("paths", [])
        archives = archives_dir(self.store.data_dir, job.collection)
        scans = [scan_path(p, archives, use_git=options.use_git, exclude=options.exclude) for p in paths]
        return collection_embedder(self.store, self.embedder, job.collection, scans)[0]

    def check(self) -> list[str]:
        """Repair derived indexes that disagree with SQLite (after a crash); returns what was repaired."""
        repairs = check_store(self.store)
        for line in repairs:
            log.warning("repaired: %s", line)
        return repairs

    def run(self, *, once: bool = False, parent: int | None = None) -> int:
        """Run jobs until stopped (or, with once, until the queue is empty); returns jobs run."""
        self._once = once
        self.check()
        poll = self.settings.ingest.worker_poll_s
        ran = 0
        while not self.stop.is_set():
            if parent is not None and os.getppid() != parent:
                log.info("the parent process is gone: stopping")
                break
            try:
                job = self.next_job()
                if job is not None:
                    self.run_job(job)
            except OperationalError:  # the store cannot be written now (a full disk, a lost database)
                if once:
                    raise
                log.exception("the store cannot be written to: trying again in %g s", poll)
                self.stop.wait(poll)
                continue
            if job is None:
                if once:
                    break
                self.stop.wait(poll)
                continue
            ran += 1
        return ran

    def next_job(self) -> IngestJob | None:
        """The job to work on: claimed alone, or on PostgreSQL the oldest unfinished one (shared)."""
        if self.leases is None:
            return self.jobs.claim(self.name)
        purge = self.jobs.claim(self.name, kinds=("purge",))
        if purge is not None:
            return purge
        from sqlmodel import select

        with self.jobs.session() as s:
            return s.exec(select(IngestJob).where(IngestJob.status.in_(("pending", "running")),
                                                  IngestJob.kind != "purge").order_by(IngestJob.id).limit(1)).first()

    def run_shared(self, job: IngestJob) -> str:
        """Take part in a job shared with other workers; a job that cannot run is closed with the reason."""
        params = json.loads(job.params or "{}")
        try:
            options = options_from(self.settings, params.get("options"))
            return shared_job(self.store, self.jobs, self.leases, self.job_embedder(job, options), job, self.name,
                              options, self.stop,
                              batch=self.settings.ingest.claim_files, poll_s=min(self.settings.ingest.worker_poll_s, 1.0))
        except Exception as exc:  # noqa: BLE001  (the job fails with the reason, the worker goes on)
            if not isinstance(exc, (FileNotFoundError, NotADirectoryError, StoreError, ValueError)):
                log.exception("job %s failed", job.id)
            current = self.jobs.get(job.id)
            if current is not None and current.status in ("pending", "running"):
                self.jobs.finish(job.id, current.worker, "failed", f"{type(exc).__name__}: {exc}")
            return "failed"

    def run_job(self, job: IngestJob) -> str:
        """Run one claimed job to its end; returns the status it was closed with."""
        if self.leases is not None and job.kind != "purge":
            return self.run_shared(job)
        params = json.loads(job.params or "{}")
        log.info("job %s (%s) for %r: attempt %s", job.id, job.kind, job.collection, job.attempts)
        link = JobLink(self.jobs, job.id, self.name, self.stop)
        try:
            if job.kind == "purge":
                if not purge_collection(self.store, int(params["collection_id"]), stop=self.stop):
                    self.jobs.release(job.id, self.name)
                    return "pending"
                report = None
            else:
                options = options_from(self.settings, params.get("options"))
                progress = self.progress(job) if self.progress else None
                report = ingest_paths(self.store, self.embedder, params.get("paths", []), job.collection,
                                      options=options, link=link, progress=progress, root=params.get("root"))
        except Exception as exc:
            if is_no_space(exc):
                return self._out_of_space(job, link)
            if isinstance(exc, (FileNotFoundError, NotADirectoryError, StoreError, ValueError)):
                return self._close(job, link, "failed", str(exc))
            # unexpected: the job fails with the reason, the worker goes on
            log.exception("job %s failed", job.id)
            return self._close(job, link, "failed", f"{type(exc).__name__}: {exc}")
        if link.status == "lost":
            return "lost"
        if link.status == "cancelled":
            return self._close(job, link, "cancelled")
        if (report is not None and report.stopped) or self.stop.is_set():
            self.jobs.release(job.id, self.name)
            return "pending"
        return self._close(job, link, "done")

    def _out_of_space(self, job: IngestJob, link: JobLink) -> str:
        """A full disk stopped the job: its unfinished files fail with a reason of kind `no_space` (a retry
        reads them again) and the job fails saying so. Recording that needs a little room too: until it
        can be written, the worker waits and tries again (nothing else can be written meanwhile)."""
        log.error("job %s: %s", job.id, NO_SPACE_REASON)
        while True:
            try:
                self.jobs.fail_unfinished(job.id, NO_SPACE_REASON)
                return self._close(job, link, "failed", NO_SPACE_REASON)
            except Exception as exc:
                if not is_no_space(exc) or self.stop.is_set() or self._once:
                    raise  # run(once=True) ends saying the store cannot be written; the job resumes later
                self.stop.wait(self.settings.ingest.worker_poll_s)

    def _close(self, job: IngestJob, link: JobLink, status: str, error: str | None = None) -> str:
        current = self.jobs.get(job.id)
        if current is not None and current.status == "cancelled":
            status = "cancelled"
        self.jobs.finish(job.id, self.name, status, error)
        return status

    def install_signal_handlers(self) -> None:
        def handler(signum, _frame) -> None:
            log.info("signal %s: finishing the files being written, then stopping", signum)
            self.stop.set()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
