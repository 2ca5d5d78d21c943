"""The long-lived objects built from Settings: the store, the embedder, the retriever and the backend.

Built once by the app's lifespan (or by a CLI command) and passed to the plain functions that need them.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from indexes.embedding.embedder import Embedder
from indexes.factory import embedder_from, retriever_from, search_processes_from
from indexes.retrieval.retriever import Retriever
from indexes.store import Store

from assistant.answers.ask import Asking
from assistant.answers.rag import AnswerPolicy
from assistant.backends.base import Backend
from assistant.backends.factory import create_backend
from assistant.backends.capped import Gate, capped
from indexes.embedding.batching import BatchingEmbedder
from assistant.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class Services:
    settings: Settings
    store: Store
    embedder: Embedder
    retriever: Retriever
    backend: Backend | None
    asking: Asking  # the one use case behind every door that answers a question
    search_gate: Gate | None = None  # searches at once (server.max_concurrent_searches)

    @classmethod
    def build(cls, settings: Settings, *, with_backend: bool = True) -> "Services":
        backend = create_backend(settings) if with_backend else None
        return cls.assemble(settings, Store(settings.data_dir, database_url=settings.database_url), embedder_from(settings.embedder), backend)

    @classmethod
    def assemble(cls, settings: Settings, store: Store, embedder: Embedder, backend: Backend | None) -> "Services":
        """The services around a store, embedder and backend already made (tests share a loaded embedder)."""
        # Concurrent questions share one embedding forward pass (indexes/embedding/batching.py).
        # Every backend gets the same cap on answers at once (server.max_concurrent_answers), beyond its own queue.
        backend = capped(backend, settings.server.max_concurrent_answers)
        retriever = retriever_from(settings.retrieval, store, BatchingEmbedder(embedder), settings.embedder)
        retriever.processes = search_processes_from(settings.retrieval, store.data_dir, settings.database_url,
                                                    settings.embedder)
        asking = Asking(store, retriever, backend, AnswerPolicy.of(settings), settings.conversations,
                        settings.server.max_question_chars)
        return cls(settings, store, embedder, retriever, backend, asking,
                   search_gate=Gate(settings.server.max_concurrent_searches, "searches"))

    @property
    def in_flight(self) -> int:
        """Answers being streamed right now."""
        return self.asking.in_flight.now

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
        if self.retriever.processes is not None:
            await asyncio.to_thread(self.retriever.processes.close)
        self.store.close()
