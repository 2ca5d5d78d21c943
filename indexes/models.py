"""The tables of the store: the single source of truth.

FAISS files and the FTS5 table are derived from these rows and can be rebuilt at any time.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TypeVar

from sqlalchemy import Column, ForeignKey, Index, Integer, LargeBinary, UniqueConstraint
from sqlmodel import Field, Session, SQLModel

T = TypeVar("T")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def saved(s: Session, row: T) -> T:
    """The row added and committed, then read back (its id and the database's defaults filled in)."""
    s.add(row)
    s.commit()
    s.refresh(row)
    return row


class Collection(SQLModel, table=True):
    """A named set of documents searched together; its own FAISS file."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)  # the API's id: ASCII (indexes/collection_titles.py)
    title: str = ""  # what people read, any language ("" = the name)
    created_at: datetime = Field(default_factory=utcnow)
    # Bumped in the same transaction as every change to this collection's chunks; the FAISS file
    # carries the generation it was built at, so a stale file is detected on load.
    generation: int = 0
    embedder: str = ""
    dim: int = 0


class Document(SQLModel, table=True):
    """One source file of a collection. Identity: collection + path; content: sha256 of the bytes."""

    __table_args__ = (UniqueConstraint("collection_id", "path"),)

    id: int | None = Field(default=None, primary_key=True)
    collection_id: int = Field(
        sa_column=Column(Integer, ForeignKey("collection.id", ondelete="CASCADE"), index=True, nullable=False)
    )
    path: str  # relative to the ingested root, '/'-separated
    root: str = ""  # the absolute root it was ingested from, to open the original
    title: str = ""
    kind: str = ""  # file type: md, pdf, py, ...
    sha256: str = ""
    size: int = 0
    mtime: float = 0.0
    status: str = "ok"  # ok | failed | skipped
    error: str | None = None
    n_chunks: int = 0
    meta: str = "{}"  # JSON: commit, front matter, ...
    ingested_at: datetime = Field(default_factory=utcnow)


class Chunk(SQLModel, table=True):
    """A piece of a document small enough to embed, with where it came from."""

    id: int | None = Field(default=None, primary_key=True)
    document_id: int = Field(
        sa_column=Column(Integer, ForeignKey("document.id", ondelete="CASCADE"), index=True, nullable=False)
    )
    collection_id: int = Field(index=True)
    ordinal: int = 0
    text: str
    heading_path: str = ""  # "Section › Subsection"
    anchor: str = ""  # fragment to link to (a heading slug, or L10-L42 for code)
    page: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    symbol: str = ""
    n_tokens: int = 0
    embedding: bytes = Field(sa_column=Column(LargeBinary, nullable=False))  # float32, normalized


class IngestJob(SQLModel, table=True):
    """One ingestion request and its progress.

    A worker claims a pending job by writing its id into `worker`; a job whose worker died (its process
    is gone, or its heartbeat is stale) is claimed again and resumed: finished files are skipped by
    their sha256, so nothing is lost or written twice.
    """

    id: int | None = Field(default=None, primary_key=True)
    collection_id: int = Field(index=True)
    status: str = "pending"  # pending | running | done | failed | cancelled
    params: str = "{}"  # JSON: paths, options
    files_total: int = 0
    files_done: int = 0
    files_failed: int = 0
    files_skipped: int = 0
    chunks: int = 0
    error: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    collection: str = ""  # the collection's name when the job was made (it outlives a deleted collection)
    kind: str = "sync"  # sync (folders or files) | upload | purge (a deleted collection's rows)
    worker: str | None = None  # "host:pid" of the process running it
    heartbeat_at: datetime | None = None  # refreshed while it runs; stale = its worker is gone
    attempts: int = 0  # how many times a worker started it (more than 1 after a crash)
    files_removed: int = 0
    owner_key: int | None = None  # the API key that queued it (None = no key: the local user or the CLI)


class IngestFile(SQLModel, table=True):
    """The state of one file of a job: pending -> parsing (-> ocr: its text read from images) -> embedding ->
    done | failed | skipped | removed.

    `reason` says why a file failed or was skipped ("unchanged", "binary file", ...), or notes how a
    file that was read needed help ("read as windows-1252").
    """

    __table_args__ = (UniqueConstraint("job_id", "path"), Index("ix_ingestfile_job_state", "job_id", "state"))

    id: int | None = Field(default=None, primary_key=True)
    job_id: int = Field(sa_column=Column(Integer, ForeignKey("ingestjob.id", ondelete="CASCADE"), nullable=False))
    path: str
    state: str = "pending"
    reason: str | None = None
    chunks: int = 0
    size: int = 0
    updated_at: datetime = Field(default_factory=utcnow)
    # Workers sharing a job claim its files under a lease (indexes/lease.py): who holds the file, and
    # until when; a file whose lease ran out while not finished is claimed again by another worker.
    worker: str | None = None
    lease_until: datetime | None = None


class Conversation(SQLModel, table=True):
    """A saved conversation: its turns are the history of each new question asked in it."""

    id: int | None = Field(default=None, primary_key=True)
    title: str = ""
    collections: str = "[]"  # JSON list of collection names its questions search by default
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow, index=True)  # the last turn (lists sort by it)
    owner_key: int | None = None  # the API key that made it and alone may see it (None = keyless use)


class Turn(SQLModel, table=True):
    """One question of a conversation, the standalone search query it became, its answer and sources."""

    id: int | None = Field(default=None, primary_key=True)
    conversation_id: int = Field(
        sa_column=Column(Integer, ForeignKey("conversation.id", ondelete="CASCADE"), index=True, nullable=False)
    )
    question: str
    query: str = ""  # what retrieval searched for (the question rewritten to stand alone)
    answer: str = ""
    sources: str = "[]"  # JSON: the sources event as the client saw it
    # JSON: the answer check of `done` as the client saw it ("" when none: stopped, failed, older turns)
    answer_check: str = ""
    model_answer: str | None = None  # the model's own text when `answer` is not it (replaced, re-cited)
    # JSON: the one document the question was asked about ({id, collection, path, title}), else None
    document_scope: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    # "done", "stopped" (the client stopped it: the answer is what had streamed) or "error"
    status: str = "done"
    # Regenerated or edited-and-resent: the first turn of its group (the history uses each group's latest)
    variant_of: int | None = Field(
        default=None, sa_column=Column(Integer, ForeignKey("turn.id", ondelete="CASCADE"), index=True, nullable=True)
    )


class Feedback(SQLModel, table=True):
    """A user's judgement of one answer (thumbs up or down, an optional comment): one per turn, replaced."""

    id: int | None = Field(default=None, primary_key=True)
    turn_id: int = Field(
        sa_column=Column(Integer, ForeignKey("turn.id", ondelete="CASCADE"), index=True, unique=True, nullable=False)
    )
    rating: int  # +1 or -1
    comment: str = ""
    created_at: datetime = Field(default_factory=utcnow)


class Summary(SQLModel, table=True):
    """A document's summary, kept per content (sha256) + model + prompt version, so an unchanged
    document is never summarised twice by the same model with the same prompts."""

    __table_args__ = (UniqueConstraint("sha256", "model", "prompt_version"),)

    id: int | None = Field(default=None, primary_key=True)
    sha256: str = Field(index=True)
    model: str
    prompt_version: str
    text: str  # the overview, then the labelled parts
    overview: str = ""
    parts: str = "[]"  # JSON: [{"label", "summary", ...}] of the pieces the final summary cites
    pieces: int = 0  # pieces of the document the map step summarised
    created_at: datetime = Field(default_factory=utcnow)


class ApiKey(SQLModel, table=True):
    """A key a client sends as `Authorization: Bearer <key>`. Only its sha256 is kept: the key itself is
    shown once, when it is made. Scopes say what it may do; `collections` which collections it may touch."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True)
    key_hash: str = Field(index=True, unique=True)  # sha256 hex of the whole key
    prefix: str = ""  # the key's first characters, to recognise it in a list
    scopes: str = "read"  # comma-separated: read, ask, ingest, admin, metrics
    collections: str = "[]"  # JSON list of collection names; ["*"] = every collection
    created_at: datetime = Field(default_factory=utcnow)
    revoked_at: datetime | None = None
