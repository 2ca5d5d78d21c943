"""Parsing and splitting in a child process, so the embedder keeps the interpreter to itself.

Parsing is pure Python (unstructured, docutils, tree-sitter glue) and holds the GIL. In a thread of
the embedding process it took the GIL from the embedder, whose forward pass needs it for every
operator it dispatches: the two could not overlap. In a child process they do. The child is started
once per process (spawned: no inherited model or thread state), reused for every run, and rebuilt if
a parser ever crashes it; that file then fails with a reason and the others go on. A file may take at
most `ingest.parse_timeout_s` (the child is then killed and replaced) and `ingest.parse_memory_mb` more
memory than the child had when it started parsing.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any

try:
    import resource  # POSIX only: the parser's memory limit
except ImportError:  # pragma: no cover
    resource = None  # type: ignore[assignment]

from indexes.records import NewChunk
from ingest.chunking import TokenCounter, parse_and_split
from ingest.elements import Parsed, ParseError
from ingest.sources import SourceFile

_counters: dict[str, Any] = {}  # in the child: model path -> its token counter


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


def _warm(parent: int) -> None:
    """Runs in the child when it starts. parent is the pid of the process that started it, which may
    already be gone by now."""
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


def _parse_in_child(source: SourceFile, data: bytes, chunk_tokens: int, overlap_tokens: int, model_path: str,
                    max_seq: int, memory_mb: int | None = None) -> tuple[Parsed, list[NewChunk], list[str]]:
    counter = _counters.get(model_path)
    if counter is None:
        counter = _counters[model_path] = TokenCounter.for_model(model_path)
    if memory_mb is not None and os.path.exists("/proc/self/statm"):
        _limit_memory(memory_mb)
    try:
        return parse_and_split(source, data, chunk_tokens, overlap_tokens, counter, max_seq)
    except MemoryError:
        raise ParseError(f"the parser needed more than its memory limit ({memory_mb} MB) for this file") from None


class ParsePool:
    """One child process that parses files; `parse_and_split()` blocks the calling thread only."""

    _shared: "ParsePool | None" = None
    _shared_lock = threading.Lock()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None

    @classmethod
    def shared(cls) -> "ParsePool":
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    def _pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ProcessPoolExecutor(
                    max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_warm,
                    initargs=(os.getpid(),),
                )
            return self._executor

    def child_pids(self) -> list[int]:
        """The parser process's pid (none before it starts): for tools and tests that watch it."""
        with self._lock:
            executor = self._executor
        return list(getattr(executor, "_processes", None) or {}) if executor is not None else []

    def warm(self) -> None:
        """Start the child now (a second or two: imports and the parser's language model)."""
        self._pool().submit(int).result()

    def parse_and_split(self, source: SourceFile, data: bytes, chunk_tokens: int, overlap_tokens: int,
                        model_path: str, max_seq: int, *, timeout_s: float | None = None,
                        memory_mb: int | None = None) -> tuple[Parsed, list[NewChunk], list[str]]:
        """What `chunking.parse_and_split` returns, computed in the child; raises ParseError as it does.
        A file that takes longer than timeout_s stops the child (a new one serves the next file)."""
        # A child found dead may have died between files (killed, out of memory): the file gets one
        # more try in a new child, and only a second death is put down to the file itself.
        for _ in range(2):
            pool = self._pool()
            try:  # submit() itself raises BrokenProcessPool when the child died since the last file
                future = pool.submit(_parse_in_child, source, data, chunk_tokens, overlap_tokens, model_path, max_seq,
                                     memory_mb)
                return future.result(timeout=timeout_s)
            except FutureTimeout:
                self._kill(pool)
                raise ParseError(f"the parser took longer than {timeout_s:g} s on this file (stopped)") from None
            except BrokenProcessPool:
                self._discard(pool)
        raise ParseError("the parser crashed on this file (its process died twice)")

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
