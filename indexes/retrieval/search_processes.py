"""Searches in worker processes, for bursts of questions that one interpreter can only take in turns.

A search is mostly Python between its SQLite, FAISS and ONNX Runtime calls, so searches started together
in one process contend for the interpreter lock: on a 16-core host a burst of 16 took 141 ms p50 against
3.7 ms alone, and taking them two at a time only orders the queue. Worker processes each hold their own
retriever (store connections, FAISS indexes, question embedder) built by a picklable `build`; a search the
calling process has no turn for goes to an idle one, and a burst is searched in parallel on as many cores.
`build` loads what a first search would (the embedder's model), so that the first burst is not the slow one.

Each worker is reached by a pipe of its own, which the calling thread writes and reads itself: a
ProcessPoolExecutor's hand-offs between its queue threads cost 2.5 ms a search here (6.2 against 3.7 ms),
a pipe a fraction of it. Each worker reads the same store, so its indexes follow ingestion as the
caller's do (the store's generation). A worker that dies costs no search: it goes to another worker,
or to the caller when none is up, and a new worker takes the dead one's place.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import queue
import threading
import time
from multiprocessing.connection import Connection
from typing import Any, Callable

log = logging.getLogger(__name__)


def _serve(conn: Connection, build: Callable[[], Any]) -> None:
    """A worker: build the retriever, say so, then answer one search at a time until the pipe closes."""
    retriever = build()
    conn.send(os.getpid())
    while True:
        try:
            query, collections, k, filters, fusion, per_document = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply: tuple[bool, Any] = (True, retriever.search(query, collections, k, filters=filters, fusion=fusion,
                                                              per_document=per_document))
        except Exception as exc:  # the caller raises it, as a search of its own would
            reply = (False, exc)
        try:
            conn.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError):
            conn.send((False, RuntimeError(f"search failed: {reply[1]!r}")))


class _Worker:
    def __init__(self, context: Any, build: Callable[[], Any]) -> None:
        self.conn, child = context.Pipe()
        # spawn: the caller runs threads (a server's, ONNX Runtime's), which a fork would copy half-way
        self.process = context.Process(target=_serve, args=(child, build), daemon=True, name="search")
        self.process.start()
        child.close()
        self.pid: int | None = None

    def ready(self, timeout: float) -> bool:
        """Wait for the worker to have built its retriever."""
        if self.pid is None and self.conn.poll(timeout):
            self.pid = self.conn.recv()
        return self.pid is not None

    def stop(self) -> None:
        self.conn.close()
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


class SearchProcesses:
    """`processes` workers, each with the retriever `build()` makes (a picklable callable: it runs there)."""

    def __init__(self, processes: int, build: Callable[[], Any]) -> None:
        if processes < 1:
            raise ValueError("search processes: at least one")
        self.processes = processes
        self.build = build
        self.searched = 0  # searches the workers have answered (for the benches)
        self._context = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False  # closed with the server: a late search stays with the caller

    @property
    def started(self) -> bool:
        return bool(self._workers)

    def status(self) -> dict[str, int]:
        """How many workers there are to be, how many are up, and the searches they have answered."""
        up = sum(1 for w in list(self._workers) if w.pid and w.process.is_alive())
        return {"processes": self.processes, "ready": up, "searched": self.searched}

    def start(self, timeout: float = 300.0) -> list[int]:
        """Start the workers (unless started) and wait up to `timeout` seconds for each to build its
        retriever or fail to; the process ids of those ready."""
        with self._lock:
            if self._closed:
                return []
            if not self._workers:
                self._workers = [_Worker(self._context, self.build) for _ in range(self.processes)]
                for w in self._workers:
                    threading.Thread(target=self._admit, args=(w,), daemon=True, name="search-start").start()
        for w in list(self._workers):
            if w.pid and not w.process.is_alive():
                self._replace(w)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not all(w.pid or not w.process.is_alive() for w in self._workers):
            time.sleep(0.05)
        return sorted(w.pid for w in self._workers if w.pid)

    def _admit(self, worker: _Worker) -> None:
        """Hand a new worker out once it is ready; one that dies loading is left out, with its reason logged."""
        try:
            if worker.ready(timeout=600):
                self._idle.put(worker)
                return
        except (EOFError, OSError):
            pass
        log.error("a search process did not start (exit code %s); searches wait their turn here",
                  worker.process.exitcode)

    def search(self, query: str, collections: Any, k: int, filters: Any = None, fusion: Any = None,
               per_document: Any = None) -> list | None:
        """The hits of a search run by a worker (another one when the one asked dies under it), or None
        when none is up (search it here)."""
        if not self._workers and not self._closed:
            self.start(timeout=0)
        while True:
            worker = self._take()
            if worker is None:
                return None
            try:
                worker.conn.send((query, collections, k, filters, fusion, per_document))
                ok, value = worker.conn.recv()
                break
            except (EOFError, OSError):
                self._replace(worker)
        self._idle.put(worker)
        if not ok:
            raise value
        with self._lock:
            self.searched += 1
        return value

    def _take(self) -> _Worker | None:
        """An idle worker (waiting for one while all are busy), or None when none is up."""
        while True:
            if not any(w.pid and w.process.is_alive() for w in self._workers):
                return None  # none up (yet)
            try:
                worker = self._idle.get(timeout=30)
            except queue.Empty:
                return None
            if worker in self._workers:
                return worker  # else one replaced since it was handed out

    def _replace(self, dead: _Worker) -> None:
        """A new worker in a dead one's place (once, whoever finds it dead first)."""
        dead.stop()
        with self._lock:
            if dead not in self._workers:
                return
            log.warning("search process %s died (exit code %s); a new one takes its place", dead.pid,
                        dead.process.exitcode)
            fresh = _Worker(self._context, self.build)
            self._workers[self._workers.index(dead)] = fresh
        threading.Thread(target=self._admit, args=(fresh,), daemon=True, name="search-start").start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers, self._workers = self._workers, []
        while not self._idle.empty():
            self._idle.get_nowait()
        for w in workers:
            w.stop()
