"""Questions that arrive together are embedded together: one forward pass instead of one per question.

Sixteen concurrent questions embedded one by one make sixteen small forward passes fight over the CPU
(~5x slower than one batch of sixteen, measured with MiniLM on two cores), which delays every answer's
first token. Here the first caller embeds what is waiting; callers that arrive meanwhile queue, and
the next batch takes them all as soon as the running one ends. A lone question never waits.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np


class _Waiter:
    __slots__ = ("query", "ready", "lead", "vector", "error")

    def __init__(self, query: str) -> None:
        self.query = query
        self.ready = threading.Event()
        self.lead = False
        self.vector: np.ndarray | None = None
        self.error: BaseException | None = None


class BatchingEmbedder:
    """An Embedder whose `embed_query` batches concurrent calls; everything else is the embedder's own."""

    def __init__(self, embedder: Any, max_batch: int = 64) -> None:
        self._embedder = embedder
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._pending: list[_Waiter] = []
        self._busy = False
        self.batches = 0  # forward passes run, for tests and status

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def embed_query(self, query: str) -> np.ndarray:
        me = _Waiter(query)
        with self._lock:
            self._pending.append(me)
            if not self._busy:
                self._busy = me.lead = True
        if not me.lead:
            me.ready.wait()
        if me.lead:
            self._run_batch()
        if me.error is not None:
            raise me.error
        assert me.vector is not None
        return me.vector

    def _run_batch(self) -> None:
        with self._lock:
            batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
        try:
            vectors = self._embedder.embed_queries([w.query for w in batch])
            for w, v in zip(batch, vectors):
                w.vector = v
        except BaseException as exc:  # every caller of this batch sees the failure
            for w in batch:
                w.error = exc
        self.batches += 1
        with self._lock:
            if self._pending:  # the first one waiting leads the next batch
                nxt = self._pending[0]
                nxt.lead = True
                nxt.ready.set()
            else:
                self._busy = False
        for w in batch:
            w.lead = False
            w.ready.set()
