"""Retrieval quality on a BEIR data set: ingest the corpus, run every query of a split, score the runs.

The corpus is written straight into a store (one chunk per document: title in the title column, text
as the chunk, embedded as "title. text"); the document id is kept as the document path, so a hit maps
back to the qrels without any lookup table. Every query's candidates are computed once and fused by
each requested method, so dense-only, BM25-only, RRF and the linear mix are compared on the same run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from indexes.retrieval.ranking import ranked
from indexes.retrieval.retriever import Retriever
from indexes.store import DocumentWrite, NewChunk, SourceInfo, Store

from evals.metrics import percentile, retrieval_metrics

METHODS = ("linear", "rrf", "dense", "bm25")


@dataclass
class BeirSet:
    """A BEIR data set directory: corpus.jsonl, queries.jsonl and qrels/<split>.tsv."""

    root: Path

    def check(self, split: str) -> None:
        for part in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
            if not (self.root / part).is_file():
                raise FileNotFoundError(f"{self.root / part} not found (expected the BEIR layout)")

    def corpus(self) -> Iterator[dict]:
        with open(self.root / "corpus.jsonl", encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)

    def queries(self) -> dict[str, str]:
        with open(self.root / "queries.jsonl", encoding="utf-8") as fh:
            rows = (json.loads(line) for line in fh if line.strip())
            return {str(r["_id"]): r["text"] for r in rows}

    def qrels(self, split: str) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        with open(self.root / "qrels" / f"{split}.tsv", encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 3 or (i == 0 and not parts[2].lstrip("-").isdigit()):
                    continue  # header or blank line
                out.setdefault(parts[0], {})[parts[1]] = int(parts[2])
        return out


def document_text(doc: dict) -> str:
    """What the embedder reads for a BEIR document: "title. text"."""
    title, body = (doc.get("title") or "").strip(), (doc.get("text") or "").strip()
    return f"{title}. {body}" if title else body


def ingest_corpus(
    store: Store,
    collection: str,
    docs: Iterable[dict],
    embed: Callable[[list[str]], np.ndarray],
    *,
    embedder_name: str,
    dim: int,
    batch: int = 1024,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write the documents not yet in the collection; returns how many were written.

    Resumable: documents already stored (an earlier, interrupted run) are skipped, so a kept
    evaluation store is embedded once and reused by later runs.
    """
    coll = store.ensure_collection(collection, embedder_name, dim)
    have = {d.path for d in store.list_documents(coll)}
    written = 0
    pending: list[dict] = []

    def flush() -> None:
        nonlocal written
        vecs = embed([document_text(d) for d in pending])
        items = [
            DocumentWrite(
                SourceInfo(path=str(d["_id"]), title=(d.get("title") or "").strip(), kind="txt", size=len(d.get("text") or "")),
                [NewChunk(text=(d.get("text") or "").strip() or (d.get("title") or ""))],
                vecs[i : i + 1],
            )
            for i, d in enumerate(pending)
        ]
        store.write_documents(coll, items)
        written += len(pending)
        pending.clear()
        if progress:
            progress(written)

    for doc in docs:
        if str(doc["_id"]) in have:
            continue
        pending.append(doc)
        if len(pending) >= batch:
            flush()
    if pending:
        flush()
    store.save_vectors(store.require_collection(collection))
    return written


@dataclass
class RetrievalReport:
    """Metrics per fusion method on one run, plus where the time went."""

    methods: dict[str, dict[str, float]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    queries: int = 0


def evaluate_retrieval(
    retriever: Retriever,
    collection: str,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    *,
    methods: Iterable[str] = METHODS,
    depth: int = 100,
    limit: int | None = None,
) -> RetrievalReport:
    """Run every judged query once per method; all methods fuse the same candidates."""
    qids = [q for q in qrels if q in queries]
    if limit:
        qids = qids[:limit]
    qrels = {q: qrels[q] for q in qids}
    methods = list(dict.fromkeys(methods))
    runs: dict[str, dict[str, list[str]]] = {m: {} for m in methods}
    cand_ms: list[float] = []
    fuse_ms: list[float] = []
    rerank_ms: list[float] = []
    for qid in qids:
        t0 = time.perf_counter()
        cands = retriever.candidates(queries[qid], collection, max(depth, retriever.candidates_n))
        cand_ms.append((time.perf_counter() - t0) * 1000)
        for method in methods:
            t1 = time.perf_counter()
            order = ranked(retriever.fuse(cands, retriever.fusion if method == "rerank" else method))[:depth]
            if method == retriever.fusion:
                fuse_ms.append((time.perf_counter() - t1) * 1000)
            records = retriever.store.chunk_records(order)
            if method == "rerank":
                t2 = time.perf_counter()
                order, _ = retriever.rerank(cands.query, order, records)
                rerank_ms.append((time.perf_counter() - t2) * 1000)
            runs[method][qid] = list(dict.fromkeys(records[c].path for c in order if c in records))
    report = RetrievalReport(queries=len(qids))
    for method in methods:
        report.methods[method] = {k: round(v, 4) for k, v in retrieval_metrics(runs[method], qrels).items()}
    report.timings = {
        "candidates_ms_p50": round(percentile(cand_ms, 50), 2),
        "candidates_ms_p99": round(percentile(cand_ms, 99), 2),
        "fusion_ms_p50": round(percentile(fuse_ms, 50), 3),
    }
    if rerank_ms:
        report.timings["rerank_ms_p50"] = round(percentile(rerank_ms, 50), 1)
    return report

