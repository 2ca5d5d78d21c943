"""What a run reports (counts, failures, progress events) and its tie to a job row in the store."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from indexes.jobs import FileState, Jobs


@dataclass
class FileIssue:
    path: str
    reason: str


@dataclass
class IngestReport:
    """What a run did. skipped = unchanged since the last ingest; ignored = left out on purpose
    (binary, empty, generated, type not accepted); notes = read, but worth knowing (encoding)."""

    collection: str
    files_seen: int = 0
    files_ingested: int = 0
    files_skipped: int = 0
    files_ignored: int = 0
    files_failed: int = 0
    files_removed: int = 0
    chunks_written: int = 0
    chunks_embedded: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    failures: list[FileIssue] = field(default_factory=list)
    ignored: list[FileIssue] = field(default_factory=list)
    notes: list[FileIssue] = field(default_factory=list)
    git: dict[str, dict[str, str]] = field(default_factory=dict)
    stopped: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ProgressEvent:
    """stage: 'start' (total known), 'begin' (a file is being read), 'ocr' (its text is being read from
    images: scanned pages, an image file), 'file' (one file finished, with its status) or 'done'."""

    stage: str
    total: int
    completed: int
    path: str = ""
    status: str = ""  # ingested | skipped | ignored | failed | removed


Progress = Callable[[ProgressEvent], None]


class JobLink:
    """A run's tie to its job row: buffered file states, heartbeat, and whether to stop."""

    def __init__(self, jobs: Jobs, job_id: int, worker: str, stop: threading.Event | None = None,
                 *, flush_s: float = 0.5, heartbeat_s: float = 2.0) -> None:
        self.jobs, self.job_id, self.worker = jobs, job_id, worker
        self.stop = stop or threading.Event()
        self.flush_s, self.heartbeat_s = flush_s, heartbeat_s
        self.buffer: dict[str, FileState] = {}
        self.last_flush = self.last_beat = time.monotonic()
        self.status = "running"

    def set(self, path: str, state: str, reason: str | None = None, chunks: int = 0, size: int = 0) -> None:
        self.buffer[path] = FileState(path, state, reason, chunks, size)

    def flush(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.buffer and (force or now - self.last_flush >= self.flush_s):
            states, self.buffer = list(self.buffer.values()), {}
            self.jobs.record(self.job_id, states)
            self.last_flush = now
        if force or now - self.last_beat >= self.heartbeat_s:
            self.status = self.beat()
            self.last_beat = now
            if self.status != "running":
                self.stop.set()

    def beat(self) -> str:
        """Tell the queue this worker still runs the job; the job's status now."""
        return self.jobs.heartbeat(self.job_id, self.worker)
