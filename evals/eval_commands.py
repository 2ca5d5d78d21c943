"""What `assistant eval retrieval` (BEIR nDCG/recall/MRR) and `assistant eval questions` (hit@k, fact recall)
run; their flags are defined in `evals.cli`."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from functools import partial
from pathlib import Path

from rich.console import Console
from rich.table import Table

from assistant.settings import Settings
from assistant.commands import fail as failed

fail = partial(failed, command="assistant eval")

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



def eval_place(args: argparse.Namespace, settings: Settings) -> tuple[Path, str, str | None]:
    """Where an evaluation reads: the configured data dir and --collection, else --store (kept) or a
    temporary folder (returned third, for the caller to remove) holding the collection it ingests."""
    if args.collection:
        return settings.data_dir, args.collection, None
    if args.store:
        return args.store.expanduser(), EVAL_COLLECTION, None
    temp = tempfile.mkdtemp(prefix="assistant-eval-")
    return Path(temp), EVAL_COLLECTION, temp


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

    from evals.eval_questions import by_package, choose_split, evaluate_questions, ingest_folder, load_questions

    if not args.file.is_file():
        return fail(f"no such file: {args.file}")
    roots: list[Path] = [r.resolve() for r in args.root or []]
    if not args.collection and not roots:
        return fail("give --root DIR to ingest, or --collection NAME to use an existing collection")
    for root in roots:
        if not root.is_dir():
            return fail(f"no such folder: {root}")
    try:
        loaded = load_questions(args.file)
        questions = choose_split(loaded, args.split)
    except (ValueError, json.JSONDecodeError) as exc:
        return fail(f"{args.file}: {exc}")
    if not questions:
        return fail(f"no questions in split {args.split!r} of {args.file}")
    sets = sorted({q.set for q in questions if q.set})
    set_name = ",".join(sets) if sets else args.file.stem
    ingest_report: dict = {}
    data_dir, collection, temp = eval_place(args, settings)
    settings = settings.model_copy(update={"data_dir": data_dir})
    store = Store(data_dir, database_url=settings.database_url)  # on PostgreSQL, data_dir holds the derived indexes
    embedder = embedder_from(settings.embedder)
    try:
        if roots and not args.collection:
            try:
                ingest_report = ingest_folder(store, embedder, roots, collection, settings)
            except (StoreError, OSError) as exc:
                return fail(f"ingesting {', '.join(map(str, roots))} failed: {exc}")
        if store.get_collection(collection) is None:
            return fail(f"unknown collection {collection!r} in {data_dir}")
        retriever = retriever_from(settings.retrieval, store, embedder, settings.embedder)
        metrics, details = evaluate_questions(retriever, collection, questions, k=max(args.k, 10),
                                              root=roots or None)
        out: dict = {**metrics, "set": set_name, "split": args.split, "questions": len(questions)}
        if packages := by_package(questions, details):
            out["by_package"] = packages
        if args.answers:
            from assistant.backends.factory import create_backend

            backend = create_backend(settings)
            try:
                out.update(asyncio.run(_answers(questions, details, collection, store, retriever, backend, settings)))
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
    console.print(f"set {set_name}, split {args.split}, {len(questions)} questions")
    console.print("  ".join(f"{k} {v}" for k, v in out.items() if k.startswith("hit@") or k in ("file_mrr@10", "symbol_in_range", "chunk_fact_recall", "chunk_row_recall", "fact_recall", "search_ms_p50")))
    return 0


def run_derive(args: argparse.Namespace, settings: Settings) -> int:
    """`assistant eval derive code|sections|behaviour|errors|entries|near-misses|scraped`: write a derived question set as JSON Lines and print
    its counts by split (and by package for code)."""
    from collections import Counter

    from dataclasses import replace

    from evals import derive_docs, derive_entries
    from evals import derive_questions as dq
    from evals import derive_sections
    from evals.near_misses import near_miss_questions

    roots = [r.expanduser() for r in args.roots]
    for root in roots:
        if not root.is_dir():
            return fail(f"no such folder: {root}")
    tune = tuple(t.strip() for t in getattr(args, "tune", "").split(",") if t.strip())
    try:
        if args.derive_kind == "scraped":
            written = derive_docs.write_scraped(roots[0], args.out)
            print(json.dumps({"out": str(args.out), "files": len(written)}))
            return 0 if written else fail(f"no Markdown file under {roots[0]}")
        if args.derive_kind == "code":
            rows = dq.code_questions(roots[0], args.package or None, tune)
        elif args.derive_kind == "behaviour":
            rows = derive_docs.behaviour_questions(roots[0], tune)
        elif args.derive_kind == "errors":
            rows = derive_docs.error_questions(roots[0], tune)
        elif args.derive_kind == "entries":
            rows = derive_entries.entry_questions(roots[0], tune)
        elif args.derive_kind == "near-misses":
            rows = near_miss_questions(roots[0])
        else:
            rows = derive_sections.section_questions(derive_sections.read_sections(roots),
                                                     per_section=args.per_section, per_document=args.per_document,
                                                     set_name=args.set)
            if args.source_suffix:
                rows = [replace(r, source=str(Path(r.source).with_suffix(args.source_suffix))) for r in rows]
    except (ValueError, OSError) as exc:
        return fail(str(exc))
    if not rows:
        return fail(f"no question could be derived from {', '.join(map(str, roots))}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row.row(), ensure_ascii=False) + "\n")
    summary: dict = {"out": str(args.out), "set": rows[0].set, "questions": len(rows),
                     "by_split": dict(sorted(Counter(r.split for r in rows).items())),
                     "documents_by_split": dict(sorted(Counter(sp for _, sp in {(r.source, r.split) for r in rows}).items()))}
    if args.derive_kind in ("code", "behaviour", "errors", "entries"):
        summary["by_package"] = {f"{p} ({sp})": n for (p, sp), n in sorted(Counter((r.package, r.split) for r in rows).items())}
    print(json.dumps(summary, ensure_ascii=False))
    return 0


async def _answers(questions, details, collection, store, retriever, backend, settings) -> dict:
    from evals.eval_questions import answer_facts, asking_for

    return await answer_facts(questions, details, collection, asking_for(settings, store, retriever, backend))
