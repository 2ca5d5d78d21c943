"""Hybrid retrieval: dense (FAISS) and lexical (FTS5 BM25) candidates fused into ranked hits.

The stages are public so the evaluation can time and vary them on the same candidates:
`candidates()` (both retrievers, every candidate scored on both sides) -> `fuse()` (RRF or a
normalised linear mix) -> optional `rerank()` (cross-encoder) -> `hits()` (records and snippets).
Defaults are the ones measured best on SciFact train by `assistant eval retrieval`.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import numpy as np

from indexes.db import read_rows
from indexes.embedding.embedder import Embedder
from indexes.retrieval.filters import SearchFilters
from indexes.retrieval.definitions import definition_by, definition_ids, named_entries
from indexes.retrieval.question_form import expand_terms, identifiers, question_form, subject_identifiers
from indexes.retrieval.ranking import PathPrior, diverse_places, each_kind_by, linear_mix, ranked, rrf
from indexes.lexical.fts5 import LexicalResult, Weights, normalise_query, phrase, query_terms
from indexes.retrieval.hits import LINE_CITED, Candidates, ChunkMeta, Hit, hits_in_order, place_hits, snippet_of
from indexes.retrieval.search_processes import SearchProcesses
from indexes.store import ChunkRecord, Store, StoreError

Fusion = Literal["linear", "rrf", "dense", "bm25"]
__all__ = ["Candidates", "Hit", "Retriever", "fts_query", "rrf", "snippet_of"]


META_COLUMNS = (
    f"c.id, c.document_id, c.ordinal, d.path, c.symbol, {LINE_CITED}, "
    # a workbook's "page" is its sheet: a table of its own, never merged with the next sheet's
    "CASE WHEN d.kind IN ('xlsx', 'xls') THEN c.page END "
    "FROM chunk c JOIN document d ON d.id = c.document_id"
)


def _meta(row) -> ChunkMeta:
    """A ChunkMeta from the META_COLUMNS of one row."""
    return ChunkMeta(int(row[1]), int(row[2]), row[3], row[4] or "", bool(row[5]), row[6])


def fts_query(query: str) -> str:
    """A free-text question as an FTS5 expression: every word quoted, any word may match (OR)."""
    return " OR ".join(phrase(w) for w in query_terms(query, drop_stopwords=False))


class Retriever:
    """`search(query, collections, k, filters=...)`: dense + BM25 candidates, fusion, optional rerank."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        *,
        candidates: int = 50,
        rrf_k: float = 5.0,
        fusion: Fusion = "linear",
        dense_weight: float = 0.5,
        normalisation: Literal["minmax", "zscore"] = "minmax",
        title_weight: float = 3.0,
        heading_weight: float = 1.5,
        path_weight: float = 1.0,
        lexical_budget: int = 2000,
        drop_stopwords: bool = True,
        reranker: Any = None,
        rerank_candidates: int = 20,
        parallel: bool = True,
        embedder_for: Any = None,
        per_document: int = 0,
        merge_adjacent: bool = False,
        code_terms: bool = False,
        prior: PathPrior | None = None,
        searches_at_once: int = 2,
        each_kind: int = 0,
        definitions_by: int = 0,
        subject_definition_by: int = 0,
        named_entries_by: int = 0,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.candidates_n = candidates
        self.rrf_k = rrf_k
        self.fusion: Fusion = fusion
        self.dense_weight = dense_weight
        self.normalisation = normalisation
        self.weights = Weights(title=title_weight, headings=heading_weight, path=path_weight)
        self.lexical_budget = lexical_budget
        self.drop_stopwords = drop_stopwords
        self.reranker = reranker  # anything with .scores(query, passages) -> list[float]
        self.rerank_candidates = rerank_candidates
        self.per_document = per_document  # places a document may take in the results (0 = no cap)
        self.merge_adjacent = merge_adjacent  # adjacent chunks of one document shown as one hit
        self.code_terms = code_terms  # identifiers in a question searched whole and by their parts
        self.prior = prior or PathPrior()
        self.each_kind = each_kind  # in a collection with code, the best page and source file by this place
        self.definitions_by = definitions_by  # where a name the question gives is defined, by this place
        self.subject_definition_by = subject_definition_by  # ... when the name is the subject of its verb
        self.named_entries_by = named_entries_by  # a how-do-I question's setting, named in its words, by this place
        self.parallel = parallel
        # Searches beyond `searches_at_once` wait their turn. Their work is mostly Python, so more at once
        # in one process contend for the interpreter lock and every sqlite3/ONNX/FAISS call waits to get it
        # back: on a 16-core host a burst of 16 searched all at once took 141 ms p50 (3.7 ms alone), and
        # on two cores two at a time halved the p50 of bursts of 16 and 64 (docs/benchmarks.md).
        self._turns = threading.BoundedSemaphore(max(1, searches_at_once))
        # the dense halves (question embedding + FAISS) beside the BM25 halves: one thread per search at once
        self.dense_pool = (ThreadPoolExecutor(max_workers=max(1, searches_at_once), thread_name_prefix="embed-query")
                           if parallel else None)
        # A search with no turn free goes to a worker process instead, when there are some (search_processes.py).
        self.processes: SearchProcesses | None = None
        self.embedder_for = embedder_for  # a collection's recorded embedder name -> that embedder (or None)
        self._embedders: dict[str, Any] = {}

    def embedder_of(self, coll) -> Any:
        """The embedder a collection was built with: the configured one unless the store names another
        that `embedder_for` can build (a multilingual collection beside English ones)."""
        name = getattr(coll, "embedder", "") or ""
        if not name or name == getattr(self.embedder, "name", None) or self.embedder_for is None:
            return self.embedder
        if name not in self._embedders:
            self._embedders[name] = self.embedder_for(name) or self.embedder
        return self._embedders[name]

    # --- the stages ---------------------------------------------------------------------------

    def collections(self, collections: str | list[str]):
        names = [collections] if isinstance(collections, str) else list(collections)
        colls = []
        for name in dict.fromkeys(names):
            coll = self.store.get_collection(name)
            if coll is None:
                raise StoreError(f"unknown collection: {name!r}")
            colls.append(coll)
        return colls

    def term_counts(self, terms: list[str], collections: str | list[str], share: float) -> tuple[int, dict[str, int]]:
        """The chunks of these collections, and how many of them hold each term, counted until the count
        exceeds `share` of the chunks: how rare a word is where a question is asked."""
        ids = [c.id for c in self.collections(collections)]
        marks = ",".join(str(int(c)) for c in ids)
        chunks = int(read_rows(self.store.engine, f"SELECT count(*) FROM chunk WHERE collection_id IN ({marks})")[0][0])
        cap = int(share * chunks)
        return chunks, (self.store.lexical.rows_matching(ids, terms, cap) if terms else {})

    def candidates(
        self,
        query: str,
        collections: str | list[str],
        n: int,
        *,
        filters: SearchFilters | dict | None = None,
        with_meta: bool = False,
    ) -> Candidates:
        """The top n of each retriever, inside the filters, with both scores for every candidate
        (and, `with_meta`, what the prior and the diversity pass need of each, read on the way)."""
        colls = self.collections(collections)
        flt = None if filters is None else SearchFilters.coerce(filters)  # most questions have none
        query = normalise_query(query)
        out = Candidates(query=query)
        if not query or n <= 0:
            return out

        # Two halves run at once: a worker thread embeds the question and searches FAISS while this
        # thread runs BM25 and reads its candidates' vectors. ONNX Runtime (or torch), SQLite and
        # FAISS release the GIL, so on two cores a search takes the longer half, not their sum.
        dense_colls = [c for c in colls if c.dim]
        dense_job = None
        pool = self.dense_pool if dense_colls else None
        if pool is not None:
            dense_job = pool.submit(self._dense, query, dense_colls, n, flt, with_meta)
        lexical = self._lexical(colls, query, n, flt)
        out.lexical = [cid for cid, _ in lexical.top]
        lexical_vecs: dict[int, np.ndarray] = {}
        if dense_colls:
            lexical_vecs, lexical_meta = self._vectors_and_meta(out.lexical, with_meta)
            out.meta.update(lexical_meta)
        elif with_meta:
            out.meta.update(self.chunk_meta(out.lexical))
        qvec, dense, dense_meta = (
            dense_job.result() if dense_job is not None else self._dense(query, dense_colls, n, flt, with_meta)
        )
        out.meta.update(dense_meta)

        out.dense = [cid for cid, _ in dense]
        out.match = lexical.match
        out.dense_scores = dict(dense)
        out.lexical_scores = dict(lexical.top)
        # Every candidate gets both scores: exact cosine from its stored vector, BM25 from FTS5.
        if qvec is not None:
            out.dense_scores.update(
                {cid: float(v @ qvec) for cid, v in lexical_vecs.items() if cid not in out.dense_scores}
            )
        unknown = []
        for cid in out.dense:
            if cid not in out.lexical_scores:
                score = lexical.score_of(cid)
                if score is None:
                    unknown.append(cid)
                else:
                    out.lexical_scores[cid] = score
        if unknown:
            out.lexical_scores.update(self.store.lexical.scores(unknown, out.match, weights=self.weights))
        return out

    def _dense(
        self, query: str, colls: list, n: int, flt: SearchFilters | None, with_meta: bool
    ) -> tuple[np.ndarray | None, list[tuple[int, float]], dict[int, ChunkMeta]]:
        """The question's vector (None when collections of different models were asked: their cosines
        would not compare), the n nearest chunks over the collections, and their metadata if asked."""
        if not colls:
            return None, [], {}
        # Each collection's question vector comes from the model its chunks were embedded with.
        models = {c.id: self.embedder_of(c) for c in colls}
        vectors: dict[str, np.ndarray] = {}
        dense: list[tuple[int, float]] = []
        for coll in colls:
            model = models[coll.id]
            if model.name not in vectors:
                vectors[model.name] = model.embed_query(query)
            allowed = self.store.allowed_chunk_ids(coll.id, flt) if flt else None
            dense.extend(self.store.vector_index(coll).search(vectors[model.name], n, allowed=allowed))
        dense.sort(key=lambda t: (-t[1], t[0]))
        dense = dense[:n]
        qvec = next(iter(vectors.values())) if len(vectors) == 1 else None
        return qvec, dense, self.chunk_meta([cid for cid, _ in dense]) if with_meta else {}

    def _vectors_and_meta(self, chunk_ids: list[int], with_meta: bool) -> tuple[dict[int, np.ndarray], dict[int, ChunkMeta]]:
        """Stored vectors of some chunks and, if asked, their metadata, in one read."""
        if not with_meta:
            return self.store.chunk_vectors(chunk_ids), {}
        if not chunk_ids:
            return {}, {}
        marks = ",".join(str(int(c)) for c in chunk_ids)
        rows = read_rows(self.store.engine, f"SELECT c.embedding, {META_COLUMNS} WHERE c.id IN ({marks})")
        return (
            {int(r[1]): np.frombuffer(r[0], dtype=np.float32) for r in rows},
            {int(r[1]): _meta(r[1:]) for r in rows},
        )

    def _lexical(self, colls, query: str, n: int, flt: SearchFilters | None) -> LexicalResult:
        terms = query_terms(query, drop_stopwords=self.drop_stopwords)
        if self.code_terms:
            terms = expand_terms(terms, query)
        return self.store.lexical.search(
            [c.id for c in colls], terms, n, weights=self.weights, budget=self.lexical_budget, filters=flt
        )

    def fuse(self, cands: Candidates, fusion: Fusion | None = None, **overrides: Any) -> dict[int, float]:
        """Fused scores of all candidates (higher is better) by the configured or given method."""
        method = fusion or self.fusion
        if method == "dense":
            return {cid: cands.dense_scores[cid] for cid in cands.dense}
        if method == "bm25":
            return {cid: cands.lexical_scores[cid] for cid in cands.lexical}
        if method == "rrf":
            return rrf([cands.dense, cands.lexical], overrides.get("rrf_k", self.rrf_k))
        if method == "linear":
            pool = set(cands.dense) | set(cands.lexical)
            dense = {cid: cands.dense_scores[cid] for cid in pool if cid in cands.dense_scores}
            lexical = {cid: cands.lexical_scores.get(cid, 0.0) for cid in pool}
            return linear_mix(
                dense,
                lexical,
                overrides.get("dense_weight", self.dense_weight),
                overrides.get("normalisation", self.normalisation),
            )
        raise ValueError(f"unknown fusion {method!r}: use linear, rrf, dense or bm25")

    def rerank(self, query: str, order: list[int], records: dict[int, ChunkRecord]) -> tuple[list[int], dict[int, float]]:
        """The first `rerank_candidates` ids re-ordered by the cross-encoder; the rest keep their order."""
        head = [cid for cid in order[: self.rerank_candidates] if cid in records]
        passages = [f"{records[c].title}\n{records[c].text}" if records[c].title else records[c].text for c in head]
        scores = dict(zip(head, self.reranker.scores(query, passages)))
        head.sort(key=lambda cid: -scores[cid])
        return head + order[self.rerank_candidates :], scores

    def search(
        self,
        query: str,
        collections: str | list[str],
        k: int = 5,
        *,
        filters: SearchFilters | dict | None = None,
        fusion: Fusion | None = None,
        per_document: int | None = None,
    ) -> list[Hit]:
        """The k best chunks for query across collections, restricted by filters when given.

        `filters` is a SearchFilters or a dict with any of `paths` (globs), `kinds` (file types),
        `modified_after`, `modified_before` (epoch seconds or ISO-8601). `per_document` overrides the
        configured cap of places per document (1 = one hit per file: file-level results).
        Searches beyond `searches_at_once` go to the search processes when there are some, else wait here
        for their turn.
        """
        if not " ".join(query.split()) or k <= 0:
            self.collections(collections)  # still reject unknown collections
            return []
        if not self._turns.acquire(blocking=self.processes is None):
            hits = self.processes.search(query, collections, k, filters, fusion, per_document)
            if hits is not None:
                return hits
            self._turns.acquire()  # none of the processes is up: searched here
        try:
            return self._search(query, collections, k, filters, fusion, per_document)
        finally:
            self._turns.release()

    def _search(self, query: str, collections: str | list[str], k: int, filters: SearchFilters | dict | None,
                fusion: Fusion | None, per_document: int | None) -> list[Hit]:
        cap = self.per_document if per_document is None else per_document
        n = max(self.candidates_n, k)
        want_meta = bool(self.prior.active or cap or self.merge_adjacent)
        cands = self.candidates(query, collections, n, filters=filters, with_meta=want_meta)
        fused = self.fuse(cands, fusion)
        meta = cands.meta
        if want_meta:
            missing = [cid for cid in fused if cid not in meta]
            meta.update(self.chunk_meta(missing))
        if self.prior.active:
            fused = self.prior.apply(cands.query, fused, meta, cands.lexical_scores, self.texts)
        order = ranked(fused)
        if self.prior.active and self.each_kind and question_form(cands.query) != "implementation":
            order = each_kind_by(order, meta, self.prior.is_source, self.each_kind)  # where-is-it: the source
        if self.definitions_by or self.subject_definition_by or self.named_entries_by:
            order = self.with_definition(cands, collections, order, fused, meta, filters)
        scores = fused
        records: dict[int, ChunkRecord] = {}
        if self.reranker is not None:
            records = self.store.chunk_records(order[: max(k, self.rerank_candidates)])
            order, rerank_scores = self.rerank(cands.query, order, records)
            scores = {**fused, **rerank_scores}
        if cap or self.merge_adjacent:
            places = diverse_places(order, meta, k, per_document=cap, merge_adjacent=self.merge_adjacent)
            wanted = [cid for p in places for cid in p.chunk_ids if cid not in records]
            records.update(self.store.chunk_records(wanted))
            return place_hits(cands, places, records, scores)  # one hit per place (hits.py)
        order = order[:k]
        missing = [cid for cid in order if cid not in records]
        if missing:
            records.update(self.store.chunk_records(missing))
        return hits_in_order(cands, order, records, scores)

    def with_definition(self, cands: Candidates, collections: str | list[str], order: list[int],
                        scores: dict[int, float], meta: dict[int, ChunkMeta],
                        filters: SearchFilters | dict | None) -> list[int]:
        """The ranking with the best chunk that defines a name the question gives (definitions.py) among
        the first `definitions_by` documents: the best by fused score among the candidates, else by BM25;
        only a chunk inside the search's filters. A name that is the subject of the question's verb ("which
        one does render_template load") is asked about itself: its definition comes by `subject_definition_by`.
        A how-do-I question that names none gets the reference entry whose name holds its words by
        `named_entries_by` (the setting it asks about: definitions.py)."""
        named = identifiers(cands.query)
        if named:
            subjects = subject_identifiers(cands.query) if self.subject_definition_by else []
            by = self.subject_definition_by if subjects else self.definitions_by
            names = [n.rsplit(".", 1)[-1] for n in (subjects or named)]
            colls = self.collections(collections)
            defs = definition_ids(self.store, [c.id for c in colls], names) if by else []
        elif self.named_entries_by and question_form(cands.query) == "usage":  # read once, cached
            by = self.named_entries_by
            colls = self.collections(collections)
            defs = named_entries(self.store, [c.id for c in colls], query_terms(cands.query, drop_stopwords=True))
        else:
            return order
        if defs and filters and (flt := SearchFilters.coerce(filters)):  # read only when some were given
            allowed = {int(i) for c in colls for i in self.store.allowed_chunk_ids(c.id, flt)}
            defs = [d for d in defs if d in allowed]
        if not defs:
            return order
        # the documents of the ranking and of the definitions (unread when nothing else needed them)
        meta.update(self.chunk_meta([c for c in [*order, *defs] if c not in meta]))
        outside = [d for d in defs if d not in scores]
        bm25 = self.store.lexical.scores(outside, cands.match, weights=self.weights) if outside else {}
        defs.sort(key=lambda d: (d not in scores, -scores.get(d, bm25.get(d, 0.0))))
        scores.setdefault(defs[0], 0.0)  # a definition found outside the candidates has no fused score
        return definition_by(order, meta, defs, by)

    def texts(self, chunk_ids: list[int]) -> dict[int, str]:
        return {cid: rec.text for cid, rec in self.store.chunk_records(chunk_ids).items()}

    def chunk_meta(self, chunk_ids: list[int]) -> dict[int, ChunkMeta]:
        """Document, position, path, symbol and citation style of candidates, in one read."""
        if not chunk_ids:
            return {}
        marks = ",".join(str(int(c)) for c in chunk_ids)
        rows = read_rows(self.store.engine, f"SELECT {META_COLUMNS} WHERE c.id IN ({marks})")
        return {int(r[0]): _meta(r) for r in rows}
