"""The long-lived objects built from Settings: the store, the embedder, the retriever and the backend.

Built once by the app's lifespan (or by a CLI command) and passed to the plain functions that need them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from indexes.embed import Embedder
from indexes.retrieve import Retriever
from indexes.store import Store

from assistant.backends.base import Backend, create_backend
from assistant.query_batching import BatchingEmbedder
from assistant.settings import Settings

log = logging.getLogger(__name__)


def make_embedder(settings: Settings) -> Embedder:
    e = settings.embedder
    return Embedder(
        e.model_path, batch_size=e.batch_size, max_seq_length=e.max_seq_length, dtype=e.dtype, threads=e.threads,
        query_runtime=e.query_runtime, query_threads=e.query_threads,
    )


def make_retriever(settings: Settings, store: Store, embedder: Embedder) -> Retriever:
    """The retriever with every retrieval setting; also sets how the store builds and searches vectors."""
    from indexes.rerank import CrossEncoderReranker
    from indexes.vectors import VectorOptions

    r = settings.retrieval
    store.configure_vectors(
        VectorOptions(ann_threshold=r.ann_threshold, nlist=r.ann_nlist, nprobe=r.ann_nprobe, mmap=r.ann_mmap)
    )
    return Retriever(
        store,
        embedder,
        candidates=r.candidates,
        rrf_k=r.rrf_k,
        fusion=r.fusion,
        dense_weight=r.dense_weight,
        normalisation=r.normalisation,
        title_weight=r.title_weight,
        heading_weight=r.heading_weight,
        path_weight=r.path_weight,
        lexical_budget=r.lexical_budget,
        drop_stopwords=r.drop_stopwords,
        reranker=CrossEncoderReranker(r.reranker_model) if r.reranker_model else None,
        rerank_candidates=r.rerank_candidates,
    )


@dataclass
class Services:
    settings: Settings
    store: Store
    embedder: Embedder
    retriever: Retriever
    backend: Backend | None
    in_flight: int = 0  # answers being streamed right now

    @classmethod
    def build(cls, settings: Settings, *, with_backend: bool = True) -> "Services":
        backend = create_backend(settings) if with_backend else None
        return cls.assemble(settings, Store(settings.data_dir), make_embedder(settings), backend)

    @classmethod
    def assemble(cls, settings: Settings, store: Store, embedder: Embedder, backend: Backend | None) -> "Services":
        """The services around a store, embedder and backend already made (tests share a loaded embedder)."""
        # Concurrent questions share one embedding forward pass (query_batching.py).
        return cls(settings, store, embedder, make_retriever(settings, store, BatchingEmbedder(embedder)), backend)

    def check_indexes(self) -> list[str]:
        """Load every collection's FAISS index, rebuilding (and saving) those that are stale or missing."""
        rebuilt = []
        for info in self.store.list_collections():
            coll = self.store.get_collection(info["name"])
            if coll is None or not coll.dim:
                continue
            before = self.store.vectors.rebuilds
            self.store.save_vectors(coll)
            if self.store.vectors.rebuilds != before:
                rebuilt.append(coll.name)
                log.info("rebuilt the vector index of %r from the store", coll.name)
        return rebuilt

    async def aclose(self) -> None:
        if self.backend is not None:
            await self.backend.aclose()
        self.store.close()
