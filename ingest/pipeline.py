"""Ingesting folders into a collection: hash check -> parse -> split -> embed -> one transaction per file.

Files whose bytes (sha256), root and chunking settings are unchanged since their last successful
ingest are skipped without parsing. A changed file is re-split and only its new or changed chunks
are embedded (the others keep their stored vectors). A file that fails is recorded with its reason
and the run goes on. Documents of a walked folder that are no longer on disk are deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol

import numpy as np
from sqlmodel import select

from indexes.models import Chunk, Collection, Document
from indexes.store import NewChunk, SourceInfo, Store
from ingest.parse import ParseError, parse
from ingest.sources import SourceFile, resolve_root, walk
from ingest.split import HEADING_SEP, split

# Bump when parsing or splitting changes what chunks a file gives, so unchanged files are redone.
PIPELINE_VERSION = 1
EMBED_BATCH_TEXTS = 256  # chunks gathered across small files before one embedding call


class EmbedderLike(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def count_tokens(self, text: str) -> int: ...


@dataclass
class FileIssue:
    path: str
    reason: str


@dataclass
class IngestReport:
    """What a run did. skipped = unchanged since the last successful ingest."""

    collection: str
    files_seen: int = 0
    files_ingested: int = 0
    files_skipped: int = 0
    files_failed: int = 0
    files_removed: int = 0
    chunks_written: int = 0
    chunks_embedded: int = 0
    seconds: float = 0.0
    failures: list[FileIssue] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ProgressEvent:
    """stage: 'start' (total known), 'begin' (a file is being read), 'file' (one file finished, with
    its status) or 'done'."""

    stage: str
    total: int
    completed: int
    path: str = ""
    status: str = ""  # ingested | skipped | failed


Progress = Callable[[ProgressEvent], None]


@dataclass
class _Ready:
    """A parsed and split file waiting for its embeddings."""

    info: SourceInfo
    chunks: list[NewChunk]
    texts: list[str]  # what is embedded for each chunk
    vectors: list[np.ndarray | None]  # reused vectors, None where one must be computed


class _Run:
    """One call of ingest_paths: the state shared by its steps."""

    def __init__(self, store: Store, embedder: EmbedderLike, collection: Collection, params: dict[str, Any],
                 max_file_bytes: int, progress: Progress | None) -> None:
        self.store, self.embedder, self.coll = store, embedder, collection
        self.params, self.max_file_bytes, self.progress = params, max_file_bytes, progress
        self.report = IngestReport(collection.name)
        self.existing = {d.path: d for d in store.list_documents(collection)}
        self.pending: list[_Ready] = []
        self.total = 0
        self.completed = 0
        self.max_seq = int(getattr(embedder, "max_seq_length", 256))

    def finished(self, path: str, status: str) -> None:
        self.completed += 1
        if self.progress:
            self.progress(ProgressEvent("file", self.total, self.completed, path, status))

    def fail(self, source: SourceFile, reason: str, sha: str = "") -> None:
        info = _info(source, sha, source.abs_path.name, source.suffix.lstrip("."), {})
        self.store.write_document(self.coll, info, [], np.zeros((0, self.coll.dim), np.float32),
                                  status="failed", error=reason)
        self.report.files_failed += 1
        self.report.failures.append(FileIssue(source.rel_path, reason))
        self.finished(source.rel_path, "failed")

    def handle(self, source: SourceFile) -> None:
        if self.progress:
            self.progress(ProgressEvent("begin", self.total, self.completed, source.rel_path))
        if source.size > self.max_file_bytes:
            mb = 1024 * 1024
            return self.fail(source, f"file too large ({source.size / mb:.1f} MB; the limit is "
                                     f"{self.max_file_bytes / mb:.1f} MB)")
        try:
            data = source.abs_path.read_bytes()
        except OSError as exc:
            return self.fail(source, f"cannot read the file ({exc.strerror or exc})")
        sha = hashlib.sha256(data).hexdigest()
        doc = self.existing.get(source.rel_path)
        if doc is not None and self.unchanged(doc, source, sha):
            self.report.files_skipped += 1
            return self.finished(source.rel_path, "skipped")
        try:
            parsed = parse(source, data)
        except ParseError as exc:
            return self.fail(source, exc.reason, sha)
        chunks = split(parsed.elements, self.embedder.count_tokens, chunk_tokens=self.params["chunk_tokens"],
                       overlap_tokens=self.params["overlap_tokens"], anchors=parsed.anchors)
        if not chunks:
            return self.fail(source, "no text found in the file", sha)
        meta = {**parsed.meta, "ingest": self.params}
        info = _info(source, sha, parsed.title, parsed.kind, meta)
        old = self.old_vectors(doc)
        texts = [self.embed_text(parsed.title, c) for c in chunks]
        vectors = [old.get((parsed.title, c.heading_path, c.text)) for c in chunks]
        self.pending.append(_Ready(info, chunks, texts, vectors))
        if sum(v is None for r in self.pending for v in r.vectors) >= EMBED_BATCH_TEXTS:
            self.flush()

    def unchanged(self, doc: Document, source: SourceFile, sha: str) -> bool:
        if doc.status != "ok" or doc.sha256 != sha or doc.root != str(source.root):
            return False
        try:
            return json.loads(doc.meta or "{}").get("ingest") == self.params
        except ValueError:
            return False

    def old_vectors(self, doc: Document | None) -> dict[tuple[str, str, str], np.ndarray]:
        """Stored vectors of the document's current chunks, keyed by what was embedded."""
        if doc is None or doc.status != "ok" or self.coll.embedder != self.embedder.name:
            return {}
        with self.store.session() as s:
            rows = s.exec(select(Chunk.heading_path, Chunk.text, Chunk.embedding).where(Chunk.document_id == doc.id)).all()
        return {(doc.title, h, t): np.frombuffer(e, dtype=np.float32) for h, t, e in rows}

    def embed_text(self, title: str, chunk: NewChunk) -> str:
        """The chunk as embedded: title and heading path first, when they fit the model's window."""
        context = HEADING_SEP.join(x for x in (title, chunk.heading_path) if x)
        room = self.max_seq - 2 - chunk.n_tokens
        if context and self.embedder.count_tokens(context) + 2 > room:
            context = title if title and self.embedder.count_tokens(title) + 2 <= room else ""
        return f"{context}\n\n{chunk.text}" if context else chunk.text

    def flush(self) -> None:
        """Embed what the pending files need in one call, then write each file in its own transaction."""
        if not self.pending:
            return
        batch, self.pending = self.pending, []
        todo = [t for r in batch for t, v in zip(r.texts, r.vectors) if v is None]
        fresh = iter(self.embedder.embed(todo)) if todo else iter(())
        self.report.chunks_embedded += len(todo)
        for ready in batch:
            vectors = np.stack([v if v is not None else next(fresh) for v in ready.vectors]).astype(np.float32)
            self.store.write_document(self.coll, ready.info, ready.chunks, vectors)
            self.report.files_ingested += 1
            self.report.chunks_written += len(ready.chunks)
            self.finished(ready.info.path, "ingested")

    def remove_vanished(self, root: Path, seen: set[str], written: set[str]) -> None:
        for doc in self.existing.values():
            if doc.root == str(root) and doc.path not in seen and doc.path not in written:
                if self.store.delete_document(self.coll, doc.id):
                    self.report.files_removed += 1


def _info(source: SourceFile, sha: str, title: str, kind: str, meta: dict[str, Any]) -> SourceInfo:
    return SourceInfo(path=source.rel_path, root=str(source.root), title=title, kind=kind, sha256=sha,
                      size=source.size, mtime=source.mtime, meta=meta)


def ingest_paths(
    store: Store,
    embedder: EmbedderLike,
    paths: Iterable[str | os.PathLike[str]],
    collection: str,
    *,
    chunk_tokens: int = 200,
    overlap_tokens: int = 32,
    max_file_bytes: int = 50 * 1024 * 1024,
    progress: Progress | None = None,
) -> IngestReport:
    """Bring a collection up to date with the files under paths (folders or single files)."""
    started = time.perf_counter()
    paths = list(paths)
    for p in paths:
        if not Path(p).expanduser().exists():
            raise FileNotFoundError(f"no such file or folder: {p}")
    coll = store.ensure_collection(collection, embedder.name, embedder.dim)
    params = {"chunk_tokens": chunk_tokens, "overlap_tokens": overlap_tokens, "embedder": embedder.name,
              "version": PIPELINE_VERSION}
    run = _Run(store, embedder, coll, params, max_file_bytes, progress)
    walked = [(resolve_root(p), list(walk(p))) for p in paths]
    run.total = run.report.files_seen = sum(len(files) for _, files in walked)
    if progress:
        progress(ProgressEvent("start", run.total, 0))
    written: dict[str, Path] = {}
    try:
        for _, files in walked:
            for source in files:
                if source.rel_path in written and written[source.rel_path] != source.root:
                    # Two roots hold the same relative path: the store keys documents by it.
                    run.report.files_failed += 1
                    run.report.failures.append(FileIssue(
                        source.rel_path, f"same path as a file under {written[source.rel_path]}; ingest "
                                         "the two folders into different collections"))
                    run.finished(source.rel_path, "failed")
                    continue
                written[source.rel_path] = source.root
                run.handle(source)
        run.flush()
        for root, files in walked:
            if root.is_dir():
                run.remove_vanished(root, {f.rel_path for f in files}, set(written))
    finally:
        store.save_vectors(coll)
    run.report.seconds = round(time.perf_counter() - started, 3)
    if progress:
        progress(ProgressEvent("done", run.total, run.completed))
    return run.report
