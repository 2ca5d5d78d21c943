"""What `assistant eval retrieval` (BEIR nDCG/recall/MRR) and `assistant eval questions` (hit@k, fact recall)
run; their flags are defined in `evals.cli`."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from assistant.settings import Settings

EVAL_COLLECTION = "eval"


def retrieval_overrides(args: argparse.Namespace) -> dict:
    r = {
        key: value
        for key, value in (
            ("dense_weight", args.dense_weight),
            ("rrf_k", args.rrf_k),
            ("title_weight", args.title_weight),
            ("normalisation", args.normalisation),
        )
        if value is not None
    }
    return {"retrieval": r} if r else {}


def fail(message: str) -> int:
    print(f"assistant eval: {message}", file=sys.stderr)
    return 2


def _methods(arg: str | None, configured: str) -> list[str]:
    from evals.eval_retrieval import METHODS

    if not arg:
        return [configured] + [m for m in METHODS if m != configured]
    chosen = [m.strip() for m in arg.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in (*METHODS, "rerank")]
    if unknown:
        raise ValueError(f"unknown fusion method(s): {', '.join(unknown)}")
    return chosen


def run_retrieval(args: argparse.Namespace, settings: Settings) -> int:
    from indexes.factory import embedder_from, retriever_from
    from indexes.store import Store

    from evals.eval_retrieval import BeirSet, evaluate_retrieval, ingest_corpus

    beir = BeirSet(args.beir.expanduser())
    try:
        beir.check(args.split)
        methods = _methods(args.fusion, settings.retrieval.fusion)
    except (FileNotFoundError, ValueError) as exc:
        return fail(str(exc))
    if "rerank" in methods and not settings.retrieval.reranker_model:
        return fail("'rerank' needs retrieval.reranker_model (ASSISTANT_RETRIEVAL_RERANKER_MODEL)")
    err = Console(stderr=True)
    work = args.store.expanduser() if args.store else Path(tempfile.mkdtemp(prefix="assistant-eval-"))
    store = Store(work, database_url=settings.database_url)  # on PostgreSQL, work holds the derived indexes
    try:
        embedder = embedder_from(settings.embedder)
        retriever = retriever_from(settings.retrieval, store, embedder, settings.embedder)
        collection = "beir-" + "".join(ch if ch.isalnum() else "-" for ch in beir.root.name)[:50]
        t0 = time.perf_counter()
        with err.status("embedding the corpus…") as status:
            written = ingest_corpus(
                store, collection, beir.corpus(), embedder.embed, embedder_name=embedder.name, dim=embedder.dim,
                progress=lambda n: status.update(f"embedding the corpus… {n} documents"),
            )
        ingest_s = time.perf_counter() - t0
        queries, qrels = beir.queries(), beir.qrels(args.split)
        t1 = time.perf_counter()
        report = evaluate_retrieval(retriever, collection, queries, qrels, methods=methods, limit=args.limit)
        eval_s = time.perf_counter() - t1
    finally:
        store.close()
        if not args.store:
            shutil.rmtree(work, ignore_errors=True)
    main = report.methods[methods[0]]
    r = settings.retrieval
    out = {
        **main,
        "fusion": methods[0],
        "split": args.split,
        "queries": report.queries,
        "documents_embedded": written,
        "methods": report.methods,
        "settings": {
            "fusion": r.fusion, "dense_weight": r.dense_weight, "normalisation": r.normalisation, "rrf_k": r.rrf_k,
            "title_weight": r.title_weight, "lexical_budget": r.lexical_budget, "drop_stopwords": r.drop_stopwords,
            "embedder": embedder.name, "embedder_dtype": embedder.dtype, "max_seq_length": embedder.max_seq_length,
        },
        "timings": {"ingest_s": round(ingest_s, 1), "eval_s": round(eval_s, 1), **report.timings},
    }
    if args.json:
        print(json.dumps(out))
        return 0
    table = Table("method", "nDCG@10", "recall@10", "recall@100", "MRR@10", title=f"{beir.root.name} / {args.split} ({report.queries} queries)")
    for method, m in report.methods.items():
        table.add_row(method, *(f"{m[key]:.4f}" for key in ("ndcg@10", "recall@10", "recall@100", "mrr@10")))
    Console().print(table)
    Console().print(f"ingest {ingest_s:.1f} s ({written} documents embedded), evaluation {eval_s:.1f} s, "
                    f"candidates p50 {report.timings['candidates_ms_p50']} ms")
    return 0


def run_questions(args: argparse.Namespace, settings: Settings) -> int:
    from indexes.factory import embedder_from, retriever_from
    from indexes.store import Store, StoreError

    from evals.eval_questions import evaluate_questions, ingest_folder, load_questions

    if not args.file.is_file():
        return fail(f"no such file: {args.file}")
    if not args.collection and not args.root:
        return fail("give --root DIR to ingest, or --collection NAME to use an existing collection")
    if args.root and not args.root.is_dir():
        return fail(f"no such folder: {args.root}")
    try:
        questions = load_questions(args.file)
    except (ValueError, json.JSONDecodeError) as exc:
        return fail(str(exc))
    temp = None
    ingest_report: dict = {}
    if args.collection:
        data_dir, collection = settings.data_dir, args.collection
    else:
        data_dir = args.store.expanduser() if args.store else Path(temp := tempfile.mkdtemp(prefix="assistant-eval-"))
        collection = EVAL_COLLECTION
    settings = settings.model_copy(update={"data_dir": data_dir})
    store = Store(data_dir, database_url=settings.database_url)  # on PostgreSQL, data_dir holds the derived indexes
    embedder = embedder_from(settings.embedder)
    try:
        if args.root and not args.collection:
            try:
                ingest_report = ingest_folder(store, embedder, args.root.resolve(), collection, settings)
            except (StoreError, OSError) as exc:
                return fail(f"ingesting {args.root} failed: {exc}")
        if store.get_collection(collection) is None:
            return fail(f"unknown collection {collection!r} in {data_dir}")
        retriever = retriever_from(settings.retrieval, store, embedder, settings.embedder)
        metrics, details = evaluate_questions(retriever, collection, questions, k=max(args.k, 10),
                                              root=args.root.resolve() if args.root else None)
        out: dict = {**metrics, "questions": len(questions)}
        if args.answers:
            from assistant.backends.factory import create_backend

            backend = create_backend(settings)
            try:
                out.update(asyncio.run(_answers(questions, details, collection, retriever, backend, settings)))
            finally:
                asyncio.run(backend.aclose())
    finally:
        store.close()
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    if ingest_report:
        out["ingest"] = {k: ingest_report.get(k) for k in ("files_ingested", "files_failed", "chunks_written", "seconds") if k in ingest_report}
    out["details"] = details
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
        return 0
    table = Table("#", "rank", "source", "question")
    for i, d in enumerate(details, 1):
        table.add_row(str(i), str(d["rank"] or "-"), d["source"], d["question"])
    console = Console()
    console.print(table)
    console.print("  ".join(f"{k} {v}" for k, v in out.items() if k.startswith("hit@") or k in ("file_mrr@10", "symbol_in_range", "fact_recall", "search_ms_p50")))
    return 0


async def _answers(questions, details, collection, retriever, backend, settings) -> dict:
    from evals.eval_questions import answer_facts

    return await answer_facts(questions, details, collection, retriever=retriever, backend=backend, settings=settings)
