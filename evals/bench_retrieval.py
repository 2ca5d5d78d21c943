"""`assistant bench retrieval`: build synthetic collections of N chunks and time the full hybrid search.

For each size: write the chunks through the store (SQLite + FTS5, bulk transactions), build and save
the vector index the way `save_vectors` does after an ingestion, then measure
- p50 / p99 of `Retriever.search` (query embedding + FAISS + FTS5 + fusion + records), k = 10;
- FAISS recall@10 of the approximate index against exact search, and its own latency, per nprobe;
- cold start in a fresh process: open the store and load the saved index (no rebuild allowed);
- with `--bursts`, searches that arrive together (b at once), as a server sees a burst of questions (with
  `retrieval.search_processes`, those without a turn here go to that many worker processes).
Data goes to a temporary directory that is removed afterwards (unless `--keep DIR`, where a collection
of the right size left by an earlier run is reused instead of rebuilt).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from indexes.embedding.embedder import Embedder
from indexes.factory import embedder_from, retriever_from, vector_options_from
from indexes.settings import RetrievalSettings
from indexes.location import Location
from indexes.retrieval.retriever import Retriever
from indexes.retrieval.search_processes import SearchProcesses
from indexes.store import DocumentWrite, NewChunk, SourceInfo, Store
from indexes.vectors import VectorOptions

from assistant.settings import Settings
from evals.metrics import percentile
from evals.synthetic import SyntheticCorpus

COLLECTION = "bench"
KINDS = ("md", "py", "txt", "pdf", "html")
CHUNKS_PER_DOC = 10


class QueryEmbedder:
    """Runs the real embedder on each query (its cost is part of the timing) but returns the synthetic
    query vector prepared for that text, so FAISS sees a query that belongs to the synthetic corpus."""

    def __init__(self, embedder: Embedder, vectors: dict[str, np.ndarray]) -> None:
        self.embedder, self.vectors = embedder, vectors
        self.name, self.dim = embedder.name, embedder.dim

    def embed_query(self, query: str) -> np.ndarray:
        self.embedder.embed_query(query)
        return self.vectors[query]


def worker_retriever(data_dir: Path, config: RetrievalSettings, embedder_config: Any,
                     vectors: dict[str, np.ndarray]) -> Retriever:
    """A search process's retriever over the synthetic collection: the real embedder runs on each query, the
    query's synthetic vector is searched (QueryEmbedder), as in this process."""
    embedder = embedder_from(embedder_config)
    embedder.embed_query("warm up")
    return retriever_from(config, Store(data_dir), QueryEmbedder(embedder, vectors))


def build(store: Store, corpus: SyntheticCorpus, n: int, log: Callable[[str], None], batch_docs: int = 500) -> dict:
    """Write n chunks (10 per document) and save the vector index; returns timings and the vectors' sample."""
    coll = store.ensure_collection(COLLECTION, "synthetic", corpus.dim)
    t0 = time.perf_counter()
    n_docs = (n + CHUNKS_PER_DOC - 1) // CHUNKS_PER_DOC
    now = time.time()
    written = 0
    for start in range(0, n_docs, batch_docs):
        docs = range(start, min(n_docs, start + batch_docs))
        topics = corpus.topics(len(docs))
        per_doc = [min(CHUNKS_PER_DOC, n - d * CHUNKS_PER_DOC) for d in docs]
        chunk_topics = np.repeat(topics, per_doc)
        texts = corpus.texts(chunk_topics)
        vecs = corpus.vectors(chunk_topics)
        items, pos = [], 0
        for d, topic, count in zip(docs, topics, per_doc):
            kind = KINDS[d % len(KINDS)]
            src = SourceInfo(
                path=f"area{d % 97:02d}/doc{d:07d}.{kind}", title=corpus.title(int(topic)), kind=kind,
                mtime=now - (d % 3650) * 86400.0, size=sum(len(t) for t in texts[pos : pos + count]),
            )
            chunks = [NewChunk(text=t, location=Location(heading_path=src.title)) for t in texts[pos : pos + count]]
            items.append(DocumentWrite(src, chunks, vecs[pos : pos + count]))
            pos += count
        store.write_documents(coll, items)
        written += pos
        if (start // batch_docs) % 20 == 0:
            log(f"  {written:,} / {n:,} chunks written ({time.perf_counter() - t0:.0f} s)")
    write_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    store.save_vectors(store.require_collection(COLLECTION))
    index_s = time.perf_counter() - t1
    return {"write_s": round(write_s, 1), "index_s": round(index_s, 1)}


def exact_top(ids: np.ndarray, vectors: np.ndarray, queries: np.ndarray, k: int) -> list[list[int]]:
    """Exact top-k ids by inner product, in blocks (the ground truth for ANN recall)."""
    best_s = np.full((len(queries), k), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(queries), k), dtype=np.int64)
    for start in range(0, len(ids), 200_000):
        sims = queries @ vectors[start : start + 200_000].T
        s = np.concatenate([best_s, sims], axis=1)
        i = np.concatenate([best_i, np.broadcast_to(ids[start : start + 200_000], sims.shape)], axis=1)
        top = np.argpartition(-s, k - 1, axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(s, top, 1), np.take_along_axis(i, top, 1)
    order = np.argsort(-best_s, axis=1)
    return np.take_along_axis(best_i, order, 1).tolist()


def ann_recall(store: Store, queries: np.ndarray, nprobes: list[int]) -> dict:
    """Recall@10 and FAISS latency of the collection's index against exact search, per nprobe."""
    coll = store.require_collection(COLLECTION)
    index = store.vector_index(coll)
    ids, vecs = index.vectors()
    truth = exact_top(ids, vecs, queries, 10)
    del vecs
    out: dict = {"index": index.kind, "vectors": len(index)}
    if index.ivf is None:
        out["recall@10"] = 1.0
        return out
    out["nlist"] = index.ivf.nlist
    table = {}
    for nprobe in nprobes:
        found, times = [], []
        for q, t in zip(queries, truth):
            t0 = time.perf_counter()
            res = index.search(q, 10, nprobe=nprobe)
            times.append((time.perf_counter() - t0) * 1000)
            found.append(len({i for i, _ in res} & set(t)) / 10)
        table[str(nprobe)] = {"recall@10": round(float(np.mean(found)), 4), "faiss_ms_p50": round(percentile(times, 50), 2)}
    out["by_nprobe"] = table
    out["nprobe"] = index.nprobe
    out["recall@10"] = table.get(str(index.nprobe), {}).get("recall@10")
    return out


def latency(retriever: Retriever, texts: list[str], k: int = 10, warmup: int = 20) -> dict:
    for q in texts[:warmup]:
        retriever.search(q, COLLECTION, k)
    times, cpu = [], []
    for q in texts[warmup:]:
        t0, c0 = time.perf_counter(), time.process_time()
        retriever.search(q, COLLECTION, k)
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    # CPU time (all threads of this process) barely depends on what else runs on the machine; wall time
    # does. On an idle machine a query's wall time lies between half its CPU time (both halves in
    # parallel) and its CPU time.
    return {"queries": len(times), "p50_ms": round(percentile(times, 50), 2), "p99_ms": round(percentile(times, 99), 2),
            "mean_ms": round(float(np.mean(times)), 2),
            "cpu_p50_ms": round(percentile(cpu, 50), 2), "cpu_p99_ms": round(percentile(cpu, 99), 2)}


def burst_latency(retriever: Retriever, texts: list[str], bursts: list[int], rounds: int = 3, k: int = 10) -> list[dict]:
    """Searches that arrive together, as a server sees a burst of questions: b threads, one search each,
    released at once; p50 and max of each search's time, its wait for a turn included
    (`retrieval.searches_at_once`), and how many the search processes took, if any."""
    out = []
    for b in bursts:
        before = retriever.processes.searched if retriever.processes is not None else 0
        times: list[float] = []
        for r in range(rounds):
            gate = threading.Barrier(b)

            def one(q: str) -> float:
                gate.wait()
                t0 = time.perf_counter()
                retriever.search(q, COLLECTION, k)
                return (time.perf_counter() - t0) * 1000

            with ThreadPoolExecutor(b) as pool:
                times += list(pool.map(one, [texts[(r * b + i) % len(texts)] for i in range(b)]))
        out.append({"searches": b, "rounds": rounds, "p50_ms": round(percentile(times, 50), 2),
                    "max_ms": round(max(times), 2),
                    "by_processes": (retriever.processes.searched - before) if retriever.processes is not None else 0})
    return out


COLD_START = """
import json, sys, time
t0 = time.perf_counter()
from indexes.store import Store
from indexes.vectors import VectorOptions
t1 = time.perf_counter()
store = Store(sys.argv[1], vector_options=VectorOptions(**json.loads(sys.argv[2])))
coll = store.require_collection("bench")
index = store.vector_index(coll)
t2 = time.perf_counter()
import numpy as np
q = np.ones(index.dim, dtype=np.float32) / index.dim ** 0.5
index.search(q, 10)
t3 = time.perf_counter()
print(json.dumps({"import_s": round(t1 - t0, 3), "open_and_load_s": round(t2 - t1, 3),
                  "first_faiss_search_s": round(t3 - t2, 3), "rebuilds": store.vectors.rebuilds,
                  "index": index.kind, "mapped": index.mapped}))
"""


def cold_start(data_dir: Path, options: VectorOptions) -> dict:
    """Open the store and load the saved index in a new process; it must not rebuild anything."""
    opts = {"ann_threshold": options.ann_threshold, "nlist": options.nlist, "nprobe": options.nprobe, "mmap": options.mmap}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", COLD_START, str(data_dir), json.dumps(opts)],
                          capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[1])
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = round(time.perf_counter() - t0, 3)
    return out


def postgres_latency(store: Store, data_dir: Path, database_url: str, config: RetrievalSettings, query_embedder,
                     texts: list[str], options: VectorOptions, log: Callable[[str], None]) -> dict:
    """The same collection copied into PostgreSQL (an empty database, or one holding this copy) and
    searched through a replica's own derived indexes, built on its first search."""
    from indexes.store_copy import copy_store, table_counts

    pg = Store(data_dir.with_name(data_dir.name + "-pg"), vector_options=options, database_url=database_url)
    try:
        if table_counts(pg.engine)["chunk"] != store.counts(store.require_collection(COLLECTION))[0]:
            log("  copying it into PostgreSQL")
            t0 = time.perf_counter()
            copy_store(store.engine, pg.engine)
            copy_s = round(time.perf_counter() - t0, 1)
        else:
            copy_s = 0.0
        retriever = retriever_from(config, pg, query_embedder)
        t0 = time.perf_counter()
        retriever.search(texts[0], COLLECTION, 10)
        first_s = round(time.perf_counter() - t0, 1)
        log("  measuring hybrid search latency on PostgreSQL")
        return {"copy_s": copy_s, "first_search_s": first_s, "search": latency(retriever, texts)}
    finally:
        pg.close()


def disk_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)


def bench_size(n: int, embedder: Embedder, config: RetrievalSettings, *, queries: int = 300,
               work: Path, log: Callable[[str], None], nprobes: list[int], database_url: str = "",
               bursts: list[int] | None = None, embedder_config: Any = None) -> dict:
    data_dir = work / f"n{n}"
    options = vector_options_from(config)
    corpus = SyntheticCorpus(n, embedder.dim, seed=n)
    store = Store(data_dir, vector_options=options)
    try:
        coll = store.get_collection(COLLECTION)
        if coll is not None and store.counts(coll)[0] == n and list(store.vectors.directory.glob("*.faiss")):
            log(f"reusing the {n:,}-chunk collection in {data_dir}")
            result: dict = {"chunks": n, "build": "reused"}
        else:
            if coll is not None:
                store.delete_collection(COLLECTION)
            log(f"building {n:,} chunks in {data_dir}")
            result = {"chunks": n, "build": build(store, corpus, n, log)}
        result["disk_mb"] = disk_mb(data_dir)
        # Queries: words of a random chunk, and a vector near that chunk's vector.
        rng = np.random.default_rng(1)
        picks = sorted(rng.choice(n, size=queries + 20, replace=False).tolist())
        recs = store.chunk_records([int(p) + 1 for p in picks])  # chunk ids start at 1 in a fresh store
        src_vecs = store.chunk_vectors(list(recs))
        ids = [cid for cid in recs if cid in src_vecs]
        texts = [corpus.query_text(recs[cid].text) for cid in ids]
        qvecs = corpus.query_vectors(np.stack([src_vecs[cid] for cid in ids]))
        log("  measuring ANN recall against exact search")
        result["ann"] = ann_recall(store, qvecs, nprobes)
        # The SQLite store searches its own FTS5 tables whichever lexical search PostgreSQL's side uses.
        sqlite_config = config
        if config.lexical == "postgres":
            sqlite_config = config.model_copy(update={"lexical": "auto"})
        retriever = retriever_from(sqlite_config, store, QueryEmbedder(embedder, dict(zip(texts, qvecs))))
        log("  measuring hybrid search latency")
        result["load_average_before"] = [round(x, 2) for x in os.getloadavg()]
        result["search"] = latency(retriever, texts)
        if bursts:
            processes = config.search_processes
            if processes and embedder_config is not None:
                log(f"  starting {processes} search processes")
                build_one = partial(worker_retriever, data_dir, sqlite_config, embedder_config, dict(zip(texts, qvecs)))
                retriever.processes = SearchProcesses(processes, build_one)
                retriever.processes.start()
            log("  measuring bursts of searches at once")
            try:
                result["bursts"] = burst_latency(retriever, texts, bursts)
            finally:
                if retriever.processes is not None:
                    retriever.processes.close()
        result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        if database_url:
            result["postgres"] = postgres_latency(store, data_dir, database_url, config,
                                                  QueryEmbedder(embedder, dict(zip(texts, qvecs))), texts, options, log)
    finally:
        store.close()
    result["cold_start"] = cold_start(data_dir, options)
    return result


def run_bench(sizes: list[int], embedder: Embedder, config: RetrievalSettings, *,
              keep: Path | None = None, log: Callable[[str], None] = lambda m: None, nprobes: list[int] | None = None,
              queries: int = 300, database_url: str = "", bursts: list[int] | None = None,
              embedder_config: Any = None) -> dict:
    work = keep or Path(tempfile.mkdtemp(prefix="assistant-bench-", dir=os.environ.get("TMPDIR", "/tmp")))
    embedder.embed_query("warm up")
    out = {
        "data": "synthetic: Zipf pseudo-word prose (10% topic words) for BM25; 384-d vectors from a mixture "
                "(mean direction + super-topic + topic + groups of ~5 + noise) calibrated on MiniLM/SciFact "
                "neighbour statistics, not uniform random vectors; query embedding time is the real model's",
        "cpu_threads": os.cpu_count(),
        "sizes": [],
    }
    try:
        for n in sizes:
            out["sizes"].append(bench_size(n, embedder, config, work=work, log=log, queries=queries,
                                           nprobes=nprobes or sorted({16, 32, config.ann_nprobe, 64}),
                                           database_url=database_url, bursts=bursts, embedder_config=embedder_config))
            if keep is None:
                shutil.rmtree(work / f"n{n}", ignore_errors=True)
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return out


def _sizes(text: str) -> list[int]:
    sizes = [int(s.replace("_", "")) for s in text.split(",") if s.strip()]
    if not sizes or min(sizes) < 1000:
        raise ValueError("--chunks needs sizes of at least 1000")
    return sizes


def run(args: argparse.Namespace, settings: Settings) -> int:
    try:
        sizes = _sizes(args.chunks)
        nprobes = [int(x) for x in args.nprobe.split(",") if x.strip()] or None
        bursts = [int(x) for x in args.bursts.split(",") if x.strip()]
        if any(b < 1 or b > 256 for b in bursts):
            raise ValueError("--bursts takes numbers of searches from 1 to 256")
    except ValueError as exc:
        print(f"assistant bench: {exc}", file=sys.stderr)
        return 2
    r = settings.retrieval
    log = (lambda m: print(m, file=sys.stderr, flush=True))
    result = run_bench(sizes, embedder_from(settings.embedder), r, keep=args.keep, log=log, nprobes=nprobes,
                       queries=args.queries, database_url=settings.database_url, bursts=bursts,
                       embedder_config=settings.embedder)
    result["settings"] = {"ann_threshold": r.ann_threshold, "ann_nprobe": r.ann_nprobe, "lexical_budget": r.lexical_budget,
                          "fusion": r.fusion, "candidates": r.candidates, "lexical": r.lexical,
                          "searches_at_once": r.searches_at_once, "search_processes": r.search_processes}
    if args.json:
        print(json.dumps(result))
        return 0
    for s in result["sizes"]:
        ann, search, cold = s["ann"], s["search"], s["cold_start"]
        print(f"{s['chunks']:>9,} chunks: search p50 {search['p50_ms']} ms, p99 {search['p99_ms']} ms; "
              f"{ann['index']} recall@10 {ann['recall@10']}; cold start {cold['open_and_load_s']} s "
              f"(rebuilds {cold['rebuilds']}); build {s['build']['write_s']} s + index {s['build']['index_s']} s; "
              f"{s['disk_mb']} MiB")
        if s.get("bursts"):
            print(f"{'':>9}  bursts of {' / '.join(str(b['searches']) for b in s['bursts'])} searches at once: p50 "
                  f"{' / '.join(str(b['p50_ms']) for b in s['bursts'])} ms ({r.searches_at_once} at a time"
                  f"{f', the rest in {r.search_processes} search processes' if r.search_processes else ''})")
        if "postgres" in s:
            pg = s["postgres"]["search"]
            print(f"{'':>9}  on PostgreSQL: search p50 {pg['p50_ms']} ms, p99 {pg['p99_ms']} ms "
                  f"(first search, building this replica's indexes: {s['postgres']['first_search_s']} s)")
    return 0
