"""Parsing and splitting in a child process, so the embedder keeps the interpreter to itself.

Parsing is pure Python (unstructured, docutils, tree-sitter glue) and holds the GIL. In a thread of
the embedding process it took the GIL from the embedder, whose forward pass needs it for every
operator it dispatches: the two could not overlap. In a child process they do. The child is started
once per process (spawned: no inherited model or thread state), reused for every run, and rebuilt if
a parser ever crashes it; that file then fails with a reason and the others go on. A file may take at
most `ingest.parse_timeout_s` (the child is then killed and replaced) and `ingest.parse_memory_mb` more
memory than the child had when it started parsing. A file read through OCR (`ingest.formats.ocr`) gets
`ingest.ocr_page_timeout_s` more for each page it reads that way; the child says how many through a shared
counter, which is also how the caller learns that a file's text is being read from images.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable

try:
    import resource  # POSIX only: the parser's memory limit
except ImportError:  # pragma: no cover
    resource = None  # type: ignore[assignment]

from indexes.records import NewChunk
from ingest.chunking import TokenCounter, parse_and_split
from ingest.elements import Parsed, ParseError
from ingest.formats.ocr import OcrOptions, listening
from ingest.sources import SourceFile

_counters: dict[str, Any] = {}  # in the child: model path -> its token counter
_ocr_pages: Any = None  # in the child: the shared counter of pages the file in hand is having read by OCR
POLL_S = 0.2  # how often the caller looks at that counter while it waits


def _exit_with_parent(parent: int) -> None:
    """A child whose parent was killed (SIGKILL leaves no time to stop it) ends itself within a second."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def warm_parser() -> None:
    """Offline settings for unstructured, and its language model loaded (the first parse's cost)."""
    from ingest import offline
    from ingest.parse import _markdown

    offline.prepare()
    _markdown("# Warm up\n\nThe parser loads its language model on first use.\n", "warm")


def _warm(parent: int, ocr_pages: Any = None) -> None:
    """Runs in the child when it starts. parent is the pid of the process that started it, which may
    already be gone by now; ocr_pages, the counter shared with it."""
    global _ocr_pages
    _ocr_pages = ocr_pages
    threading.Thread(target=_exit_with_parent, args=(parent,), name="exit-with-parent", daemon=True).start()
    warm_parser()


def _limit_memory(memory_mb: int) -> None:
    """Cap the child's address space at its size now plus memory_mb (once: the first file's call, after
    the parser and the tokenizer are loaded). A file that needs more raises MemoryError in here."""
    if _counters.get("memory limit") is not None or resource is None:
        return
    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = size + memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    _counters["memory limit"] = limit


def _count_ocr_pages(pages: int) -> None:
    if _ocr_pages is not None:
        _ocr_pages.value = max(pages, 1)


def _parse_in_child(source: SourceFile, data: bytes, chunk_tokens: int, overlap_tokens: int, model_path: str,
                    max_seq: int, memory_mb: int | None = None,
                    ocr: OcrOptions | None = None) -> tuple[Parsed, list[NewChunk], list[str]]:
    counter = _counters.get(model_path)
    if counter is None:
        counter = _counters[model_path] = TokenCounter.for_model(model_path)
    if memory_mb is not None and os.path.exists("/proc/self/statm"):
        _limit_memory(memory_mb)
    if _ocr_pages is not None:
        _ocr_pages.value = 0
    try:
        with listening(_count_ocr_pages):
            return parse_and_split(source, data, chunk_tokens, overlap_tokens, counter, max_seq, ocr)
    except MemoryError:
        raise ParseError(f"the parser needed more than its memory limit ({memory_mb} MB) for this file") from None


class ParsePool:
    """One child process that parses files; `parse_and_split()` blocks the calling thread only."""

    _shared: "ParsePool | None" = None
    _shared_lock = threading.Lock()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._ocr_pages: Any = None  # the counter shared with the child of _executor

    @classmethod
    def shared(cls) -> "ParsePool":
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    def _pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                context = multiprocessing.get_context("spawn")
                self._ocr_pages = context.RawValue("i", 0)
                self._executor = ProcessPoolExecutor(
                    max_workers=1, mp_context=context, initializer=_warm, initargs=(os.getpid(), self._ocr_pages),
                )
            return self._executor

    def child_pids(self) -> list[int]:
        """The parser process's pid (none before it starts): for tools and tests that watch it."""
        with self._lock:
            executor = self._executor
        return list(getattr(executor, "_processes", None) or {}) if executor is not None else []

    def warm(self) -> None:
        """Start the child now (a second or two: imports and the parser's language model); a child that
        died since its last file (killed, out of memory) is replaced first, as `parse_and_split` does."""
        pool = self._pool()
        try:
            pool.submit(int).result()
        except BrokenProcessPool:
            self._discard(pool)
            self._pool().submit(int).result()

    def parse_and_split(self, source: SourceFile, data: bytes, chunk_tokens: int, overlap_tokens: int,
                        model_path: str, max_seq: int, *, timeout_s: float | None = None,
                        memory_mb: int | None = None, ocr: OcrOptions | None = None,
                        ocr_page_s: float = 0.0,
                        on_ocr: Callable[[int], None] | None = None) -> tuple[Parsed, list[NewChunk], list[str]]:
        """What `chunking.parse_and_split` returns, computed in the child; raises ParseError as it does.
        A file that takes longer than timeout_s, plus ocr_page_s for each page it has read through OCR, stops
        the child (a new one serves the next file). on_ocr(pages) is called once when that reading starts."""
        # A child found dead may have died between files (killed, out of memory): the file gets one
        # more try in a new child, and only a second death is put down to the file itself.
        for _ in range(2):
            pool = self._pool()
            counter = self._ocr_pages
            if counter is not None:
                counter.value = 0
            try:  # submit() itself raises BrokenProcessPool when the child died since the last file
                future = pool.submit(_parse_in_child, source, data, chunk_tokens, overlap_tokens, model_path, max_seq,
                                     memory_mb, ocr)
                return self._wait(future, pool, counter, timeout_s, ocr_page_s, on_ocr)
            except BrokenProcessPool:
                self._discard(pool)
        raise ParseError("the parser crashed on this file (its process died twice)")

    def _wait(self, future: Future, pool: ProcessPoolExecutor, counter: Any, timeout_s: float | None,
              ocr_page_s: float, on_ocr: Callable[[int], None] | None) -> Any:
        """The future's result, looking at the OCR counter every POLL_S; the child is stopped past the limit."""
        started = time.monotonic()
        told = False
        while True:
            pages = counter.value if counter is not None else 0
            if pages and not told:
                told = True
                if on_ocr is not None:
                    on_ocr(pages)
            limit = None if timeout_s is None else timeout_s + pages * ocr_page_s
            left = None if limit is None else limit - (time.monotonic() - started)
            if left is not None and left <= 0:
                self._kill(pool)
                ocr_part = (f": {timeout_s:g} s and {ocr_page_s:g} s for each of the {pages} pages it was reading "
                            "through OCR" if pages else "")
                raise ParseError(f"the parser took longer than {limit:g} s on this file (stopped){ocr_part}")
            try:
                return future.result(timeout=POLL_S if left is None else min(POLL_S, left))
            except FutureTimeout:
                continue

    def _kill(self, pool: ProcessPoolExecutor) -> None:
        """Stop a child stuck on one file at once (it holds no state worth keeping)."""
        for pid in list(getattr(pool, "_processes", None) or {}):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._discard(pool)

    def _discard(self, pool: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._executor is pool:
                self._executor = None
        pool.shutdown(wait=False, cancel_futures=True)

    def shutdown(self) -> None:
        with self._lock:
            pool, self._executor = self._executor, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
