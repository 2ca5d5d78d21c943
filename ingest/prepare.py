"""One file, from bytes to chunks ready to embed: the work that runs beside the embedder.

`Preparer.prepare()` reads a file, hashes it, and decides: unchanged (skipped without parsing),
left out on purpose (binary, empty, generated, a type the settings exclude), failed with a reason,
or parsed and split into chunks, with the vectors of unchanged chunks taken from the store so only
new text is embedded. It never raises for anything a file contains.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from sqlmodel import select

from indexes.models import Chunk, Collection, Document
from indexes.ocr_tools import DEFAULT_LANGUAGES
from indexes.records import NewChunk, SourceInfo
from indexes.store import Store
from ingest.chunking import EmbedderLike, TokenCounter, parse_and_split
from ingest.formats.ocr import OcrOptions, listening
from ingest.parse import ParseError, file_type
from ingest.parse_pool import ParsePool
from ingest.sources import OutsideRoot, SourceFile, read_inside_root


@dataclass(frozen=True)
class IngestOptions:
    """How files are chosen and chunked. exclude None = the default vendored/generated patterns."""

    chunk_tokens: int = 200
    overlap_tokens: int = 32
    max_file_bytes: int = 50 * 1024 * 1024
    file_types: frozenset[str] = frozenset()  # accepted types ('.md', 'makefile'); empty = all
    exclude: tuple[str, ...] | None = None
    use_git: bool = True
    embed_pool: int = 1024  # chunk texts gathered (across files) before one embedding call
    parse_process: bool = True  # parse in a child process (parse_pool.py), not in the embedder's process
    parse_timeout_s: float = 120.0  # per file, in the child process (it is stopped beyond)
    parse_memory_mb: int = 2048  # the child's address space may grow by this much
    ocr_languages: str = DEFAULT_LANGUAGES  # tesseract's, joined by '+': scanned PDF pages and images
    ocr_command: str = "tesseract"
    ocr_page_timeout_s: float = 60.0  # more time for the parser per page it reads through OCR

    @property
    def ocr(self) -> OcrOptions:
        return OcrOptions(self.ocr_languages, self.ocr_command)

    def params(self, embedder_name: str, version: int) -> dict[str, Any]:
        """What decides a file's chunks: a file ingested under other params is redone."""
        return {"chunk_tokens": self.chunk_tokens, "overlap_tokens": self.overlap_tokens,
                "embedder": embedder_name, "version": version}


@dataclass
class Outcome:
    """What became of one file. status: ready | unchanged | done-before | ignored | failed."""

    source: SourceFile
    status: str
    reason: str | None = None
    sha: str = ""
    info: SourceInfo | None = None
    chunks: list[NewChunk] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # what is embedded for each chunk
    vectors: list[np.ndarray | None] = field(default_factory=list)  # reused vectors; None = to embed
    n_chunks: int = 0
    note: str | None = None

    @property
    def to_embed(self) -> int:
        return sum(v is None for v in self.vectors)


def source_info(source: SourceFile, sha: str, title: str, kind: str, meta: dict[str, Any]) -> SourceInfo:
    return SourceInfo(path=source.rel_path, root=str(source.root), title=title, kind=kind, sha256=sha,
                      size=source.size, mtime=source.mtime, meta=meta)


class Preparer:
    """Per-file work of one run; safe to call from a thread other than the one that writes."""

    def __init__(self, store: Store, embedder: EmbedderLike, coll: Collection, options: IngestOptions,
                 params: dict[str, Any], existing: dict[str, Document], job_id: int | None,
                 git: Callable[[SourceFile], dict | None] = lambda s: None) -> None:
        self.store, self.embedder, self.coll, self.options = store, embedder, coll, options
        self.params, self.existing, self.job_id, self.git = params, existing, job_id, git
        self.max_seq = int(getattr(embedder, "max_seq_length", 256))
        self.count_tokens = TokenCounter(embedder) if hasattr(embedder, "model_path") else embedder.count_tokens
        model_path = getattr(embedder, "model_path", None)
        self.pool = ParsePool.shared() if options.parse_process and model_path is not None else None
        # a renamed or copied file finds its vectors under its content hash
        self.by_sha = {d.sha256: d for d in existing.values() if d.status == "ok" and d.sha256}
        # told (from the thread that prepares) when a file's text starts being read through OCR, and how many pages
        self.on_ocr: Callable[[SourceFile, int], None] | None = None

    def prepare(self, source: SourceFile) -> Outcome:
        try:
            return self._prepare(source)
        except Exception as exc:  # a bug on one odd file must not stop the others
            return Outcome(source, "failed", f"internal error: {type(exc).__name__}: {str(exc)[:300]}")

    def _prepare(self, source: SourceFile) -> Outcome:
        opts = self.options
        if opts.file_types and file_type(source) not in opts.file_types:
            return Outcome(source, "ignored", f"type {file_type(source)} is not in the accepted file types")
        if source.size > opts.max_file_bytes:
            mb = 1024 * 1024
            return Outcome(source, "failed", f"file too large ({source.size / mb:.1f} MB; the limit is "
                                             f"{opts.max_file_bytes / mb:.1f} MB)")
        try:
            data = read_inside_root(source)
        except OutsideRoot as exc:  # its real path left the folder since the scan: skipped, never read
            return Outcome(source, "ignored", str(exc))
        except OSError as exc:
            return Outcome(source, "failed", f"cannot read the file ({exc.strerror or exc})")
        sha = hashlib.sha256(data).hexdigest()
        doc = self.existing.get(source.rel_path)
        if doc is not None and self.unchanged(doc, source, sha):
            meta = _meta(doc)
            if self.job_id is not None and meta.get("job") == self.job_id:
                # written by this job before its worker stopped: it counts as done, not unchanged
                return Outcome(source, "done-before", sha=sha, n_chunks=doc.n_chunks)
            return Outcome(source, "unchanged", "unchanged", sha=sha)
        tell = (lambda pages: self.on_ocr(source, pages)) if self.on_ocr else (lambda pages: None)
        try:
            if self.pool is not None:
                parsed, chunks, texts = self.pool.parse_and_split(
                    source, data, opts.chunk_tokens, opts.overlap_tokens, str(self.embedder.model_path), self.max_seq,
                    timeout_s=opts.parse_timeout_s, memory_mb=opts.parse_memory_mb, ocr=opts.ocr,
                    ocr_page_s=opts.ocr_page_timeout_s, on_ocr=tell)
            else:
                with listening(tell):
                    parsed, chunks, texts = parse_and_split(
                        source, data, opts.chunk_tokens, opts.overlap_tokens, self.count_tokens, self.max_seq, opts.ocr)
        except ParseError as exc:
            return Outcome(source, "ignored" if exc.skip else "failed", exc.reason, sha=sha)
        if not chunks:
            return Outcome(source, "failed", "no text found in the file", sha=sha)
        meta = {**parsed.meta, "ingest": self.params}
        if self.job_id is not None:
            meta["job"] = self.job_id
        git = self.git(source)
        if git:
            meta["git"] = git
        info = source_info(source, sha, parsed.title, parsed.kind, meta)
        old = self.old_vectors(doc if doc is not None and doc.status == "ok" else self.by_sha.get(sha))
        vectors = [old.get((parsed.title, c.heading_path, c.symbol, c.text)) for c in chunks]
        return Outcome(source, "ready", sha=sha, info=info, chunks=chunks, texts=texts, vectors=vectors,
                       n_chunks=len(chunks), note=parsed.note)

    def unchanged(self, doc: Document, source: SourceFile, sha: str) -> bool:
        """As it was ingested, with the same params; a file read through OCR, in the same OCR languages too (one
        with scanned pages OCR could not read is read again)."""
        if doc.status != "ok" or doc.sha256 != sha or doc.root != str(source.root):
            return False
        meta = _meta(doc)
        ocr = meta.get("ocr")
        if isinstance(ocr, dict) and (ocr.get("unread") or ocr.get("languages") != self.options.ocr_languages):
            return False
        return meta.get("ingest") == self.params

    def old_vectors(self, doc: Document | None) -> dict[tuple[str, str, str, str], np.ndarray]:
        """Stored vectors of the document's current chunks, keyed by what was embedded."""
        if doc is None or doc.status != "ok" or self.coll.embedder != self.embedder.name:
            return {}
        with self.store.session() as s:
            rows = s.exec(select(Chunk.heading_path, Chunk.symbol, Chunk.text, Chunk.embedding)
                          .where(Chunk.document_id == doc.id)).all()
        return {(doc.title, h, y, t): np.frombuffer(e, dtype=np.float32) for h, y, t, e in rows}


def _meta(doc: Document) -> dict[str, Any]:
    try:
        value = json.loads(doc.meta or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
