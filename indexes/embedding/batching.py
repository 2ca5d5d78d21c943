"""Questions that arrive together are embedded together, on as many cores as help.

Sixteen concurrent questions embedded with torch one by one make sixteen small forward passes fight over
the CPU (~5x slower than one batch of sixteen, measured with MiniLM on two cores): there one batch runs
at a time, and the questions that arrive meanwhile make the next. ONNX Runtime's one-thread runs gain
nothing from batching (2 ms a question either way, one or sixteen) but release the GIL, so there a
batch runs on each of several lanes at once (the embedder's `query_lanes`: half its cores per
question's threads). With one lane (and four search threads) a burst of 16 searches took ~200 ms p50 on a
16-core machine, about 10 ms a question one after another (docs/benchmarks.md, runs 12-14). A lone
question never waits.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np


class _Waiter:
    __slots__ = ("query", "done", "vector", "error")

    def __init__(self, query: str) -> None:
        self.query = query
        self.done = False
        self.vector: np.ndarray | None = None
        self.error: BaseException | None = None


class BatchingEmbedder:
    """An Embedder whose `embed_query` batches concurrent calls over `lanes` batches at a time (None: the
    embedder's `query_lanes()`, asked at the first question); everything else is the embedder's own."""

    def __init__(self, embedder: Any, max_batch: int = 64, lanes: int | None = None) -> None:
        self._embedder = embedder
        if hasattr(embedder, "name"):  # read once: the retriever asks for it per collection of every question
            self.name = embedder.name
        self.max_batch = max_batch
        self._lanes = lanes
        self._cond = threading.Condition()
        self._pending: list[_Waiter] = []
        self._running = 0
        self.batches = 0  # forward passes run, for tests and status

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    @property
    def lanes(self) -> int:
        if self._lanes is None:
            ask = getattr(self._embedder, "query_lanes", None)
            self._lanes = max(1, int(ask())) if callable(ask) else 1
        return self._lanes

    def embed_query(self, query: str) -> np.ndarray:
        me = _Waiter(query)
        with self._cond:
            lanes = self.lanes  # asked under the lock: the first question builds the encoder once
            self._pending.append(me)
            # Whoever waits runs the oldest questions' batch when a lane is free: its own is among them,
            # unless a batch already running holds it.
            while not me.done:
                if self._running < lanes and self._pending:
                    batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
                    self._running += 1
                    self._cond.release()
                    try:
                        self._run_batch(batch)
                    finally:
                        self._cond.acquire()
                        self._running -= 1
                        self.batches += 1
                        for w in batch:
                            w.done = True
                        self._cond.notify_all()
                else:
                    self._cond.wait()
        if me.error is not None:
            raise me.error
        assert me.vector is not None
        return me.vector

    def _run_batch(self, batch: list[_Waiter]) -> None:
        try:
            vectors = self._embedder.embed_queries([w.query for w in batch])
            for w, v in zip(batch, vectors):
                w.vector = v
        except BaseException as exc:  # every caller of this batch sees the failure
            for w in batch:
                w.error = exc
