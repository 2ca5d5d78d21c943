"""`assistant bench ...`: performance measurements. Each measurement is its own subcommand.

Subcommands come from the modules in BENCH_MODULES (each has `register_bench(bench_subparsers)`) and
from the `assistant.bench` entry-point group (each entry point is a callable taking the bench
subparsers), so other packages add `bench serve` or `bench ingest` without editing this file.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from importlib.metadata import entry_points
from pathlib import Path

from assistant.settings import Settings

BENCH_MODULES = ["assistant.commands.bench", "assistant.bench_serve"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="measure performance (retrieval at scale, ...)")
    bench_sub = p.add_subparsers(dest="bench_command", metavar="WHAT", required=True)
    for name in BENCH_MODULES:
        importlib.import_module(name).register_bench(bench_sub)
    for ep in sorted(entry_points(group="assistant.bench"), key=lambda e: e.name):
        ep.load()(bench_sub)


def register_bench(bench_sub: argparse._SubParsersAction) -> None:
    from assistant.cli import add_common

    p = bench_sub.add_parser("retrieval", help="hybrid search latency, ANN recall and cold start on synthetic collections")
    add_common(p)
    p.add_argument("--chunks", default="100000,1000000", help="comma-separated collection sizes (default 100000,1000000)")
    p.add_argument("--queries", type=int, default=300, help="timed queries per size (after 20 warm-up queries)")
    p.add_argument("--nprobe", default="", help="comma-separated IVF nprobe values for the recall table (default 16,32,setting,64)")
    p.add_argument("--keep", type=Path, help="write the collections here and keep them; a collection of the right size found there is reused "
                   "(default: a temporary directory, removed)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run_retrieval)


def _sizes(text: str) -> list[int]:
    sizes = [int(s.replace("_", "")) for s in text.split(",") if s.strip()]
    if not sizes or min(sizes) < 1000:
        raise ValueError("--chunks needs sizes of at least 1000")
    return sizes


def run_retrieval(args: argparse.Namespace, settings: Settings) -> int:
    from indexes.vectors import VectorOptions

    from assistant.bench_retrieval import run_bench
    from assistant.services import make_embedder

    try:
        sizes = _sizes(args.chunks)
        nprobes = [int(x) for x in args.nprobe.split(",") if x.strip()] or None
    except ValueError as exc:
        print(f"assistant bench: {exc}", file=sys.stderr)
        return 2
    r = settings.retrieval
    options = VectorOptions(ann_threshold=r.ann_threshold, nlist=r.ann_nlist, nprobe=r.ann_nprobe, mmap=r.ann_mmap)
    retriever_kwargs = dict(
        candidates=r.candidates, rrf_k=r.rrf_k, fusion=r.fusion, dense_weight=r.dense_weight,
        normalisation=r.normalisation, title_weight=r.title_weight, heading_weight=r.heading_weight,
        path_weight=r.path_weight, lexical_budget=r.lexical_budget, drop_stopwords=r.drop_stopwords,
    )
    log = (lambda m: print(m, file=sys.stderr, flush=True))
    result = run_bench(sizes, make_embedder(settings), retriever_kwargs, options, keep=args.keep, log=log, nprobes=nprobes,
                       queries=args.queries)
    result["settings"] = {"ann_threshold": r.ann_threshold, "ann_nprobe": r.ann_nprobe, "lexical_budget": r.lexical_budget,
                          "fusion": r.fusion, "candidates": r.candidates}
    if args.json:
        print(json.dumps(result))
        return 0
    for s in result["sizes"]:
        ann, search, cold = s["ann"], s["search"], s["cold_start"]
        print(f"{s['chunks']:>9,} chunks: search p50 {search['p50_ms']} ms, p99 {search['p99_ms']} ms; "
              f"{ann['index']} recall@10 {ann['recall@10']}; cold start {cold['open_and_load_s']} s "
              f"(rebuilds {cold['rebuilds']}); build {s['build']['write_s']} s + index {s['build']['index_s']} s; "
              f"{s['disk_mb']} MiB")
    return 0
