"""A collection re-embedded with another embedder: every chunk's stored text embedded again (nothing is
re-parsed), then the vectors, the collection's embedder and its dimension replaced in one transaction.

The new vectors wait in a file of the data directory until all are made, so a crash or Ctrl-C at any
point before the switch leaves the collection as it was, searchable with its old embedder; the FAISS
index is rebuilt from the new rows after it.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from indexes.jobs import Jobs
from indexes.location import Location
from indexes.records import NewChunk
from indexes.store import Store, StoreError
from ingest.chunking import EmbedderLike, TokenCounter, embed_text

BATCH = 256  # chunks read and embedded at a time


@dataclass
class ReembedReport:
    collection: str
    embedder_before: str
    embedder: str
    dim: int
    chunks: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        rate = self.chunks / self.embed_seconds if self.embed_seconds else None
        return {"collection": self.collection, "embedder_before": self.embedder_before, "embedder": self.embedder,
                "dim": self.dim, "chunks": self.chunks, "seconds": round(self.seconds, 3),
                "embed_seconds": round(self.embed_seconds, 3), "chunks_per_s": round(rate, 1) if rate else None}


def reembed(store: Store, embedder: EmbedderLike, name: str, *, batch: int = BATCH,
            progress: Callable[[int, int], None] | None = None) -> ReembedReport:
    """Re-embed every chunk of the collection with embedder; progress(done, total) after each batch.
    Refused while an ingestion job of the collection runs (it would write vectors of the old model)."""
    started = time.perf_counter()
    coll = store.require_collection(name)
    running = Jobs(store.engine).list(collection=name, status="running", limit=1)
    if running:
        raise StoreError(f"ingestion job {running[0].id} is writing to {name!r}: re-embed it when the job has ended")
    report = ReembedReport(name, coll.embedder, embedder.name, 0)
    generation = coll.generation
    total = store.counts(coll)[0]
    count_tokens = TokenCounter(embedder) if hasattr(embedder, "model_path") else embedder.count_tokens
    max_seq = int(getattr(embedder, "max_seq_length", 256))
    if progress:
        progress(0, total)
    with tempfile.TemporaryDirectory(prefix="reembed-", dir=store.data_dir) as staging:
        ids = np.zeros(total, np.int64)
        vectors: np.ndarray | None = None
        done = 0
        for rows in store.chunk_texts(coll, batch=batch):
            if done + len(rows) > total:
                raise StoreError(f"collection {name!r} changed while it was re-embedded (an ingest ran): "
                                 "nothing was replaced; run it again")
            texts = [embed_text(title or "", NewChunk(text=text, location=Location(heading_path=heading or "",
                                                                               symbol=symbol or ""),
                                                      n_tokens=int(n_tokens or 0)), count_tokens, max_seq)
                     for _, title, heading, symbol, text, n_tokens in rows]
            t0 = time.perf_counter()
            vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
            report.embed_seconds += time.perf_counter() - t0
            if vectors is None:  # on disk, not in memory: a million chunks are 1.5 GB of vectors
                vectors = np.lib.format.open_memmap(f"{staging}/vectors.npy", mode="w+", dtype=np.float32,
                                                    shape=(total, vecs.shape[1]))
            ids[done:done + len(rows)] = [r[0] for r in rows]
            vectors[done:done + len(rows)] = vecs
            done += len(rows)
            if progress:
                progress(done, total)
        if vectors is None:
            vectors = np.zeros((0, coll.dim or embedder.dim), np.float32)
        coll = store.replace_embeddings(coll, generation, ids[:done], vectors[:done], embedder.name)
        del vectors
    store.save_vectors(coll)
    report.chunks, report.dim = done, coll.dim
    report.seconds = time.perf_counter() - started
    return report
