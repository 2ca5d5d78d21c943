"""Ingestion jobs and the state of each of their files, kept in the store.

The server only enqueues: it writes a pending `IngestJob` row. A worker process claims it (an
optimistic UPDATE, so two workers never run one job), refreshes a heartbeat while it runs, and records
each file's state as it goes. A worker killed at any moment leaves its job `running` under a process
that no longer exists (or whose heartbeat went stale); the next worker claims it again and resumes.
Progress (files done of total, chunks, rate, ETA, errors) is computed from the file rows, so it is
right after a crash too.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import func, text, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from indexes.db import driver
from indexes.models import IngestFile, IngestJob, saved, utcnow
from indexes.reasons import with_code

JOB_STATES = ("pending", "running", "done", "failed", "cancelled")
FILE_STATES = ("pending", "parsing", "ocr", "embedding", "done", "failed", "skipped", "removed")
FINAL_FILE_STATES = ("done", "failed", "skipped", "removed")
ACTIVE_FILE_STATES = ("parsing", "ocr", "embedding")


UNCHANGED = "unchanged"  # the reason of a file skipped because it is as it was ingested before
# Options a collection keeps: a job that does not name one takes what the collection's last job named.
KEPT_OPTIONS = ("ocr_languages",)
KEPT_LOOKBACK = 200  # jobs of the collection looked at, newest first

# What kind of trouble a file's reason says (the words ingest/ writes), first match wins: the page names
# each kind in its own words.
REASON_KINDS = (
    ("image file", "image"), ("binary file", "binary"), ("file too large", "too_large"), ("empty file", "empty"),
    ("file holds only whitespace", "empty"), ("no text found", "no_text"), ("unsupported file type", "unsupported_type"),
    ("generated file", "generated"), ("link to", "link"), ("not a regular file", "not_a_file"),
    ("damaged", "damaged"), ("cannot read", "unreadable"), ("ocr is not installed", "ocr_missing"),
    ("ocr languages", "ocr_missing"), ("no space left", "no_space"),
)


def reason_kind(reason: str | None) -> str:
    """The kind of a failed or skipped file's reason: image, binary, too_large, empty, ...; else other."""
    text = (reason or "").strip().lower()
    if text == UNCHANGED:
        return UNCHANGED
    if text.endswith("is not in the accepted file types"):
        return "unsupported_type"
    return next((kind for prefix, kind in REASON_KINDS if text.startswith(prefix)), "other")


@dataclass
class FileState:
    """A state change of one file of a job."""

    path: str
    state: str
    reason: str | None = None
    chunks: int = 0
    size: int = 0


def worker_name() -> str:
    """How a worker process names itself in the jobs it claims: host and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


def worker_alive(worker: str | None) -> bool | None:
    """Whether the process that claimed a job still runs: True, False, or None when it is on another host.

    A killed child that its parent has not reaped yet is a zombie: it counts as gone.
    """
    if not worker:
        return False
    host, _, pid_text = worker.rpartition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2] not in "ZX"
    except (OSError, ValueError, IndexError):
        return True


def _utc(dt: datetime | None) -> datetime | None:
    """All our datetimes are UTC; one read back without a zone gets it."""
    if dt is None:
        return None
    return dt.astimezone(timezone.utc) if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _iso(dt: datetime | None) -> str | None:
    return _utc(dt).isoformat() if dt else None


def sql_time(dt: datetime) -> str:
    """A datetime as SQLAlchemy stores it in SQLite (naive UTC with microseconds), for raw inserts."""
    return _utc(dt).strftime("%Y-%m-%d %H:%M:%S.%f")


class Jobs:
    """Job rows and file rows of one store (its SQLAlchemy engine)."""

    def __init__(self, engine: Engine, *, stale_after_s: float = 60.0) -> None:
        self.engine = engine
        self.stale_after_s = stale_after_s

    def session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    # --- the queue ----------------------------------------------------------------------------

    def enqueue(self, collection_id: int, collection: str, params: dict[str, Any], kind: str = "sync",
                owner_key: int | None = None) -> IngestJob:
        """A pending job; its params' options carry the collection's kept options it does not name itself."""
        if kind != "purge":
            params = self.kept_options(collection, params)
        with self.session() as s:
            job = IngestJob(collection_id=collection_id, collection=collection, kind=kind,
                            params=json.dumps(params, default=str), owner_key=owner_key)
            return saved(s, job)

    def kept_options(self, collection: str, params: dict[str, Any]) -> dict[str, Any]:
        """params with the KEPT_OPTIONS it lacks taken from the collection's newest job that named them (none
        from before the collection was last deleted: its purge job ends the search)."""
        options = dict(params.get("options") or {})
        wanted = [k for k in KEPT_OPTIONS if options.get(k) is None]
        for job in self.list(collection=collection, limit=KEPT_LOOKBACK) if wanted else []:
            if job.kind == "purge":
                break
            earlier = json.loads(job.params or "{}").get("options") or {}
            for key in [k for k in wanted if earlier.get(k) is not None]:
                options[key] = earlier[key]
                wanted.remove(key)
            if not wanted:
                break
        return {**params, "options": options} if options else params

    def get(self, job_id: int) -> IngestJob | None:
        with self.session() as s:
            return s.get(IngestJob, job_id)

    def list(self, *, collection: str | None = None, status: str | None = None, limit: int = 50,
             owner_key: int | None | bool = False) -> list[IngestJob]:
        """The newest jobs; only those queued by `owner_key` when it is given (None = without a key)."""
        with self.session() as s:
            q = select(IngestJob).order_by(IngestJob.id.desc()).limit(limit)
            if owner_key is not False:
                q = q.where(IngestJob.owner_key.is_(None) if owner_key is None else IngestJob.owner_key == owner_key)
            if collection is not None:
                q = q.where(IngestJob.collection == collection)
            if status is not None:
                q = q.where(IngestJob.status == status)
            return list(s.exec(q).all())

    def claimable(self, job: IngestJob) -> bool:
        """A pending job, or a running one whose worker is gone or has stopped beating."""
        if job.status == "pending":
            return True
        if job.status != "running":
            return False
        alive = worker_alive(job.worker)
        if alive is False:
            return True
        beat = _utc(job.heartbeat_at)
        return beat is None or beat < utcnow() - timedelta(seconds=self.stale_after_s)

    def claim(self, worker: str, *, kinds: tuple[str, ...] | None = None, job_id: int | None = None) -> IngestJob | None:
        """Take the oldest job that needs a worker (or the given one); None when there is none.

        The UPDATE only succeeds while the row still looks as it was read, so of two workers racing
        for one job exactly one gets it.
        """
        with self.session() as s:
            q = select(IngestJob).where(IngestJob.status.in_(("pending", "running"))).order_by(IngestJob.id)
            if kinds:
                q = q.where(IngestJob.kind.in_(kinds))
            if job_id is not None:
                q = q.where(IngestJob.id == job_id)
            candidates = list(s.exec(q).all())
        now = utcnow()
        for job in candidates:
            if not self.claimable(job):
                continue
            with self.session() as s:
                cond = [IngestJob.id == job.id, IngestJob.status == job.status]
                cond.append(IngestJob.worker == job.worker if job.worker is not None else IngestJob.worker.is_(None))
                result = s.exec(
                    update(IngestJob).where(*cond).values(
                        status="running", worker=worker, heartbeat_at=now, started_at=now,
                        attempts=IngestJob.attempts + 1, finished_at=None,
                    )
                )
                s.commit()
                if result.rowcount == 1:
                    return s.get(IngestJob, job.id)
        return None

    def heartbeat(self, job_id: int, worker: str) -> str:
        """Refresh the heartbeat; returns the job's status, or 'lost' when another worker owns it now.

        A worker stops working on a job that was cancelled or taken over.
        """
        with self.session() as s:
            s.exec(update(IngestJob).where(IngestJob.id == job_id, IngestJob.worker == worker,
                                           IngestJob.status == "running").values(heartbeat_at=utcnow()))
            s.commit()
            job = s.get(IngestJob, job_id)
        if job is None:
            return "cancelled"
        if job.worker != worker:
            return "lost"
        return job.status

    def finish(self, job_id: int, worker: str, status: str, error: str | None = None) -> None:
        """Close a job this worker runs: its counters are frozen from the file rows."""
        if status not in JOB_STATES:
            raise ValueError(f"unknown job status {status!r}")
        counts = self.counts(job_id)
        with self.session() as s:
            s.exec(update(IngestJob).where(IngestJob.id == job_id, IngestJob.worker == worker).values(
                status=status, error=error, finished_at=utcnow(), heartbeat_at=utcnow(),
                files_total=counts["total"], files_done=counts["done"], files_failed=counts["failed"],
                files_skipped=counts["skipped"], files_removed=counts["removed"], chunks=counts["chunks"],
            ))
            s.commit()

    def release(self, job_id: int, worker: str) -> None:
        """Give a running job back to the queue (a worker stopping cleanly mid-job)."""
        with self.session() as s:
            s.exec(update(IngestJob).where(IngestJob.id == job_id, IngestJob.worker == worker,
                                           IngestJob.status == "running").values(status="pending", worker=None))
            s.commit()

    def cancel(self, job_id: int) -> bool:
        """Cancel a job that has not finished; its worker notices at its next heartbeat."""
        with self.session() as s:
            result = s.exec(update(IngestJob).where(IngestJob.id == job_id, IngestJob.status.in_(("pending", "running")))
                            .values(status="cancelled", finished_at=utcnow()))
            s.commit()
            return result.rowcount == 1

    def cancel_collection(self, collection_id: int) -> int:
        """Cancel every unfinished job of a collection (it is being deleted)."""
        with self.session() as s:
            result = s.exec(update(IngestJob).where(IngestJob.collection_id == collection_id, IngestJob.kind != "purge",
                                                    IngestJob.status.in_(("pending", "running")))
                            .values(status="cancelled", finished_at=utcnow()))
            s.commit()
            return result.rowcount

    # --- file states --------------------------------------------------------------------------

    def file_states(self, job_id: int) -> dict[str, str]:
        """path -> state of every file the job knows so far (a resumed job skips the final ones)."""
        with self.engine.connect() as conn:
            rows = conn.execute(text("SELECT path, state FROM ingestfile WHERE job_id = :j"), {"j": job_id}).all()
        return {r[0]: r[1] for r in rows}

    def add_files(self, job_id: int, files: list[FileState]) -> None:
        """Register the files a job will go through (kept as they are when the job resumes)."""
        self._write(job_id, files, keep_existing=True)

    def record(self, job_id: int, states: list[FileState]) -> None:
        """Write state changes of files (inserted when new)."""
        self._write(job_id, states, keep_existing=False)

    def _write(self, job_id: int, states: list[FileState], *, keep_existing: bool) -> None:
        if not states:
            return
        for st in states:
            if st.state not in FILE_STATES:
                raise ValueError(f"unknown file state {st.state!r}")
        now = sql_time(utcnow())
        conflict = (
            "DO NOTHING" if keep_existing else
            "DO UPDATE SET state = excluded.state, reason = excluded.reason, chunks = excluded.chunks, "
            "size = CASE WHEN excluded.size > 0 THEN excluded.size ELSE ingestfile.size END, updated_at = excluded.updated_at"
        )
        rows = [(job_id, st.path, st.state, st.reason, st.chunks, st.size, now) for st in states]
        with self.engine.begin() as conn:
            driver(conn).executemany(
                "INSERT INTO ingestfile (job_id, path, state, reason, chunks, size, updated_at) VALUES (?,?,?,?,?,?,?) "
                f"ON CONFLICT(job_id, path) {conflict}",
                rows,
            )
            total = conn.execute(text("SELECT count(*) FROM ingestfile WHERE job_id = :j"), {"j": job_id}).scalar_one()
            conn.execute(text("UPDATE ingestjob SET files_total = :n WHERE id = :j"), {"n": total, "j": job_id})

    def fail_unfinished(self, job_id: int, reason: str) -> int:
        """Fail every file of the job not yet done, failed, skipped or removed (a full disk stopped the
        job: a retry reads them again); returns how many."""
        with self.engine.begin() as conn:
            result = conn.execute(text(
                "UPDATE ingestfile SET state = 'failed', reason = :r, updated_at = :t WHERE job_id = :j AND state NOT IN "
                "('done', 'failed', 'skipped', 'removed')"), {"r": reason, "t": sql_time(utcnow()), "j": job_id})
            return result.rowcount or 0

    def files(self, job_id: int, *, state: str | None = None, offset: int = 0, limit: int = 100) -> list[IngestFile]:
        with self.session() as s:
            q = select(IngestFile).where(IngestFile.job_id == job_id).order_by(IngestFile.id).offset(offset).limit(limit)
            if state is not None:
                q = q.where(IngestFile.state == state)
            return list(s.exec(q).all())

    def counts(self, job_id: int, since: datetime | None = None) -> dict[str, int]:
        """Files per state, chunks written, and (with since) files and chunks finished since then."""
        out = {st: 0 for st in FILE_STATES}
        out.update(total=0, chunks=0, recent_files=0, recent_chunks=0)
        with self.session() as s:
            rows = s.exec(select(IngestFile.state, func.count(), func.coalesce(func.sum(IngestFile.chunks), 0))
                          .where(IngestFile.job_id == job_id).group_by(IngestFile.state)).all()
            if since is not None:
                files, chunks = s.exec(
                    select(func.count(), func.coalesce(func.sum(IngestFile.chunks), 0)).where(
                        IngestFile.job_id == job_id, IngestFile.state.in_(FINAL_FILE_STATES),
                        IngestFile.updated_at >= _utc(since))
                ).one()
                out["recent_files"], out["recent_chunks"] = int(files), int(chunks)
        for state, n, chunks in rows:
            out[state] = int(n)
            out["total"] += int(n)
            if state == "done":
                out["chunks"] = int(chunks)
        return out

    def progress(self, job_id: int, *, errors: int = 100) -> dict[str, Any] | None:
        """Everything a client shows about a job: counts, rate, ETA, current files, and the first `errors`
        failed files and left-out (skipped, not unchanged) files with their reasons and kinds."""
        job = self.get(job_id)
        if job is None:
            return None
        started = _utc(job.started_at)
        counts = self.counts(job_id, since=started)
        finished = sum(counts[s] for s in FINAL_FILE_STATES if s != "removed")
        end = _utc(job.finished_at) if job.status in ("done", "failed", "cancelled") and job.finished_at else utcnow()
        elapsed = max((end - started).total_seconds(), 1e-3) if started else 0.0
        rate_files = counts["recent_files"] / elapsed if elapsed else 0.0
        rate_chunks = counts["recent_chunks"] / elapsed if elapsed else 0.0
        remaining = max(counts["total"] - counts["removed"] - finished, 0)
        if job.status == "done":
            eta = 0.0
        elif job.status == "running" and rate_files > 0:
            eta = remaining / rate_files
        else:
            eta = None
        with self.session() as s:
            failed = s.exec(select(IngestFile.path, IngestFile.reason).where(
                IngestFile.job_id == job_id, IngestFile.state == "failed").order_by(IngestFile.id).limit(errors)).all()
            left_out = IngestFile.reason.is_(None) | (IngestFile.reason != UNCHANGED)
            skipped = s.exec(select(IngestFile.path, IngestFile.reason).where(
                IngestFile.job_id == job_id, IngestFile.state == "skipped", left_out)
                .order_by(IngestFile.id).limit(errors)).all()
            unchanged = s.exec(select(func.count()).where(
                IngestFile.job_id == job_id, IngestFile.state == "skipped", IngestFile.reason == UNCHANGED)).one()
            current = s.exec(select(IngestFile.path, IngestFile.state).where(
                IngestFile.job_id == job_id, IngestFile.state.in_(ACTIVE_FILE_STATES)).limit(5)).all()
        return {
            "id": job.id,
            "collection": job.collection,
            "kind": job.kind,
            "status": job.status,
            "error": job.error,
            "params": json.loads(job.params or "{}"),
            "files_total": counts["total"] - counts["removed"],
            "files_done": finished,
            "files_ingested": counts["done"],
            "files_failed": counts["failed"],
            "files_skipped": counts["skipped"],
            "files_unchanged": int(unchanged),
            "files_pending": counts["pending"] + counts["parsing"] + counts["ocr"] + counts["embedding"],
            "files_removed": counts["removed"],
            "chunks": counts["chunks"],
            "elapsed_s": round(elapsed, 3),
            "rate_files_per_s": round(rate_files, 3),
            "rate_chunks_per_s": round(rate_chunks, 3),
            "eta_s": round(eta, 1) if eta is not None else None,
            "current": [p for p, _ in current],
            "reading_images": [p for p, st in current if st == "ocr"],  # text read through OCR now
            "errors": [with_code({"path": p, "reason": r, "kind": reason_kind(r)}, r) for p, r in failed],
            "skipped": [with_code({"path": p, "reason": r, "kind": reason_kind(r)}, r) for p, r in skipped],
            "attempts": job.attempts,
            "worker": job.worker,
            "created_at": _iso(job.created_at),
            "started_at": _iso(job.started_at),
            "finished_at": _iso(job.finished_at),
        }
