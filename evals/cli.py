"""`assistant bench serve|ingest|retrieval|budgets` and `assistant eval retrieval|questions|derive|answers|contrast|variants|own-names`: every flag of the
measurement commands, in one place.

Reaches the `assistant` command through the `assistant.commands` entry-point group, as the ingestion
commands do: nothing in the server imports this package. Each subcommand runs a function of the module
that does the work.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from assistant.backends.registry import backend_names
from assistant.cli import add_common
from evals import (
    bench_budgets, bench_conversations, bench_ingest, bench_retrieval, bench_serve, contrast_pairs, eval_answers,
    eval_commands, own_name_pairs, question_variants,
)


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1, else a clear usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    bench = sub.add_parser("bench", help="measure performance (serving, ingestion, retrieval at scale)")
    bench_sub = bench.add_subparsers(dest="bench_command", metavar="WHAT", required=True)
    add_bench_serve(bench_sub)
    add_bench_ingest(bench_sub)
    add_bench_retrieval(bench_sub)
    add_bench_budgets(bench_sub)

    ev = sub.add_parser("eval", help="measure retrieval and answer quality (BEIR data sets, question files)")
    eval_sub = ev.add_subparsers(dest="eval_command", metavar="WHAT", required=True)
    add_eval_retrieval(eval_sub)
    add_eval_questions(eval_sub)
    add_eval_derive(eval_sub)
    add_eval_answers(eval_sub)
    add_eval_contrast(eval_sub)
    add_eval_variants(eval_sub)
    add_eval_own_names(eval_sub)


def add_bench_serve(sub: argparse._SubParsersAction) -> None:
    p = add_common(sub.add_parser(
        "serve", help="throughput and latency of /api/ask against the backend itself, by concurrency"))
    p.add_argument("--collection", required=True, help="collection the questions are asked of")
    p.add_argument("--concurrency", default="1,2,4,8,16,32", help="comma-separated levels (default 1,2,4,8,16,32)")
    p.add_argument("--requests", type=positive_int, help="requests per level and target, over the rounds (default: 2 x concurrency, at least 8)")
    p.add_argument("--max-tokens", type=positive_int, default=128, help="answer length asked for (default 128)")
    p.add_argument("--rounds", type=positive_int, default=2,
                   help="rounds per level and target, in A-B-B-A order; more rounds even out drift (default 2)")
    p.add_argument("--questions", type=Path, help="a file of questions, one per line (default: a built-in set)")
    p.add_argument("--conversations", type=positive_int, metavar="N",
                   help="instead: N conversations of five turns, one turn at a time, with the engine's prompt cache on "
                   "and off; reports the prompt tokens the engine evaluated per answer (llama-server)")  # fmt: skip
    p.add_argument("--out", type=Path, default=Path("bench-out"), help="folder for bench-serve.json and .png")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=lambda args, settings: (bench_conversations if args.conversations else bench_serve).run(args, settings))


def add_bench_ingest(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="ingestion speed: end-to-end chunks/s vs raw encode, and the unchanged re-run")
    p.add_argument("--data-dir", help="data directory (only its config is read; the bench uses a fresh store)")
    p.add_argument("--config", help="TOML config file; env ASSISTANT_CONFIG")
    p.add_argument("paths", nargs="+", metavar="PATH", help="folders or files to ingest")
    p.add_argument("--keep", type=Path, help="build the store here and keep it (default: a temporary directory)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=bench_ingest.run)


def add_bench_budgets(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("budgets", help="the in-process model's prompt budget: wait for the first token against facts, "
                       "budgets interleaved; the knee")
    add_common(p)
    p.add_argument("file", type=Path, nargs="+", help="JSON Lines questions (as `eval answers` reads them; answerable ones used)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--root", type=Path, help="folder the sources are relative to; ingested into a temporary collection")
    where.add_argument("--collection", "-c", help="use this existing collection of the data directory")
    p.add_argument("--store", type=Path, help="ingest --root into this data directory and keep it (re-runs skip unchanged files)")
    p.add_argument("--budgets", type=bench_budgets.parse_budgets, default=[1024, 1536, 2048, 3072],
                   help="comma-separated prompt token budgets, 0 = the window's (default 1024,1536,2048,3072)")
    p.add_argument("--limit", type=positive_int, help="only the first N answerable questions")
    p.add_argument("--per-split", type=positive_int, metavar="N",
                   help="only the first N answerable questions of each half (tune, report)")
    p.add_argument("--followups", type=int, default=0, metavar="N",
                   help="also N two-turn conversations per budget: the follow-up's wait (default 0)")
    p.add_argument("--out", type=Path, help="also write every answer, JSON, to this file")
    p.add_argument("--quiet", action="store_true", help="no line per answer on stderr")
    p.add_argument("--prompts-only", action="store_true",
                   help="no answers: per budget, each question's prompt (tokens, facts in it, the right file among its sources)")
    p.set_defaults(func=bench_budgets.run, overrides=lambda args: {"backend": "llamacpp"})


def add_bench_retrieval(sub: argparse._SubParsersAction) -> None:
    p = add_common(sub.add_parser(
        "retrieval", help="hybrid search latency, ANN recall and cold start on synthetic collections"))
    p.add_argument("--chunks", default="100000,1000000", help="comma-separated collection sizes (default 100000,1000000)")
    p.add_argument("--queries", type=int, default=300, help="timed queries per size (after 20 warm-up queries)")
    p.add_argument("--nprobe", default="", help="comma-separated IVF nprobe values for the recall table (default 16,32,setting,64)")
    p.add_argument("--bursts", default="1,4,16,64", help="comma-separated numbers of searches started at once, three "
                   "rounds each (default 1,4,16,64; empty: none)")
    p.add_argument("--keep", type=Path, help="write the collections here and keep them; a collection of the right size found there is reused "
                   "(default: a temporary directory, removed)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=bench_retrieval.run)


def add_eval_retrieval(sub: argparse._SubParsersAction) -> None:
    r = add_common(sub.add_parser("retrieval", help="nDCG@10, recall@10/100, MRR@10 on a BEIR data set"))
    r.add_argument("--beir", required=True, type=Path, help="BEIR directory: corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv")
    r.add_argument("--split", default="test", help="qrels split to score (default: test)")
    r.add_argument(
        "--fusion",
        help="comma-separated methods to report: linear, rrf, dense, bm25, rerank (default: all but rerank; "
        "the top-level figures are those of the configured fusion)",
    )
    r.add_argument("--limit", type=int, help="score only the first N judged queries")
    r.add_argument("--store", type=Path, help="build (or reuse) the evaluation store here and keep it; default: a temporary one")
    r.add_argument("--dense-weight", type=float, help="override retrieval.dense_weight")
    r.add_argument("--rrf-k", type=float, help="override retrieval.rrf_k")
    r.add_argument("--title-weight", type=float, help="override retrieval.title_weight")
    r.add_argument("--normalisation", choices=["minmax", "zscore"], help="override retrieval.normalisation")
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.set_defaults(func=eval_commands.run_retrieval, overrides=eval_commands.retrieval_overrides)


def add_eval_questions(sub: argparse._SubParsersAction) -> None:
    q = add_common(sub.add_parser(
        "questions", help="hit@1/5/10 of a JSONL questions file (and fact recall with --answers)"))
    q.add_argument("file", type=Path, help="JSON Lines: question, source (path relative to --root), answer_facts, split (optional)")
    q.add_argument("--root", type=Path, action="append",
                   help="folder the sources are relative to; ingested into a temporary collection (repeat for several)")
    q.add_argument("--split", choices=["tune", "report", "all"], default="all",
                   help="score only the questions of this split (derived sets carry one; default all)")
    q.add_argument("--collection", "-c", help="use this existing collection of the data directory instead of ingesting --root")
    q.add_argument("--store", type=Path, help="ingest --root into this data directory and keep it (re-runs skip unchanged files)")
    q.add_argument("--answers", action="store_true", help="also generate answers with the configured backend and score fact recall")
    q.add_argument("--backend", choices=backend_names(), help="LLM backend for --answers")
    q.add_argument("-k", type=int, default=10, help="hits retrieved per question (default 10)")
    q.add_argument("--json", action="store_true", help="print one JSON object")
    q.set_defaults(func=eval_commands.run_questions, overrides=lambda a: {"backend": a.backend} if a.backend else {})


def add_eval_derive(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("derive", help="write a question set derived from code docstrings or headed sections, split tune/report")
    kinds = d.add_subparsers(dest="derive_kind", metavar="KIND", required=True)
    c = kinds.add_parser("code", help="a question per documented public function, method and class of Python packages")
    c.add_argument("roots", type=Path, nargs=1, metavar="ROOT", help="folder to be ingested; sources are relative to it")
    c.add_argument("--package", action="append", help="only this package (its import name; repeat for several; default all found)")
    c.add_argument("--tune", default="flask,click", help="packages of the tune split, comma-separated (default flask,click)")
    s = kinds.add_parser("sections", help="questions from the distinctive sentences of the headed sections of Markdown files")
    s.add_argument("roots", type=Path, nargs="+", metavar="ROOT", help="folders to be ingested; sources are relative to each")
    s.add_argument("--set", default="sections", help="the set's name, written on each question (default sections)")
    s.add_argument("--per-section", type=positive_int, default=2, help="most questions from one section (default 2)")
    s.add_argument("--per-document", type=int, default=0, help="most questions from one document (default 0 = no cap)")
    s.add_argument("--source-suffix", help="write each source with this suffix instead (.txt: questions for the "
                   "scraped copy `derive scraped` writes)")
    b = kinds.add_parser("behaviour", help="a question per section of the packages' reST docs: its distinctive claim, "
                         "heading words removed")
    e = kinds.add_parser("errors", help="a question per error message raised in the packages' source")
    v = kinds.add_parser("entries", help="a question per described value of the packages' reST docs (`.. data::`, "
                         "`.. py:data::`, `.. attribute::`, `.. confval::`, `.. envvar::`): its distinctive claim, name removed")
    for p in (b, e, v):
        p.add_argument("roots", type=Path, nargs=1, metavar="ROOT", help="folder holding the unpacked packages "
                       "(scripts/get-eval-packages.sh); sources are relative to it")
        p.add_argument("--tune", default="flask,click", help="packages of the tune split, comma-separated (default flask,click)")
    n = kinds.add_parser("near-misses", help="unanswerable questions in the documents' words: a heading of one page asked "
                         "about the subject of a parallel page (same folder, shared headings) that lacks it")
    n.add_argument("roots", type=Path, nargs=1, metavar="ROOT", help="folder of Markdown files; sources are relative to it")
    w = kinds.add_parser("scraped", help="copy Markdown files as scraped text: no punctuation, marks or line breaks")
    w.add_argument("roots", type=Path, nargs=1, metavar="ROOT", help="folder of Markdown files")
    w.add_argument("--out", type=Path, required=True, help="folder to write the .txt copies to")
    add_common(w)
    w.set_defaults(func=eval_commands.run_derive)
    for p in (c, s, b, e, v, n):
        add_common(p)
        p.add_argument("--out", type=Path, required=True, help="JSON Lines file to write")
        p.set_defaults(func=eval_commands.run_derive)


def add_eval_answers(sub: argparse._SubParsersAction) -> None:
    a = add_common(sub.add_parser("answers", help="answers measured: fact recall, right file cited, citation support, abstention, "
                                  "language, speed"))
    a.add_argument("file", type=Path, help="JSON Lines: question, source, answer_facts, or \"unanswerable\": true; split")
    where = a.add_mutually_exclusive_group(required=True)
    where.add_argument("--root", type=Path, help="folder the sources are relative to; ingested into a temporary collection")
    where.add_argument("--collection", "-c", help="use this existing collection of the data directory")
    where.add_argument("--rescore", type=Path, metavar="REPORT",
                       help="judge the answers of a saved --out report again with today's answer check (no model runs)")
    a.add_argument("--store", type=Path, help="ingest --root into this data directory and keep it (re-runs skip unchanged files)")
    a.add_argument("--split", choices=eval_answers.SPLITS, default="all", help="questions of this half only (default all)")
    a.add_argument("--limit", type=positive_int, help="answer only the first N questions of the split")
    a.add_argument("--backend", choices=backend_names(), help="LLM backend (default: the configured one)")
    a.add_argument("--max-tokens", type=positive_int, help="override generation.max_tokens")
    a.add_argument("--out", type=Path, help="also write the JSON report, with every answer, to this file")
    a.add_argument("--json", action="store_true", help="print one JSON object")
    a.set_defaults(func=eval_answers.run, overrides=eval_answers.overrides)


def add_eval_contrast(sub: argparse._SubParsersAction) -> None:
    c = add_common(sub.add_parser("contrast", help="the answer check on claim/source pairs made by a method: negation, number, "
                                  "name and source swaps, paraphrases; agreement per kind and language"))
    c.add_argument("--root", type=Path, action="append", required=True, help="a folder of Markdown/text files (repeat)")
    c.add_argument("--split", choices=("tune", "report", "all"), default="report",
                   help="pairs of this half of the files (default report: the half the check was not shaped on)")
    c.add_argument("--seed", type=int, default=0, help="the seed of the rewording and the swaps")
    c.add_argument("--misses", action="store_true", help="also list pairs the check got wrong (up to 40)")
    c.add_argument("--json", action="store_true", help="print one JSON line")
    c.set_defaults(func=contrast_pairs.run)


def add_eval_variants(sub: argparse._SubParsersAction) -> None:
    v = add_common(sub.add_parser("variants", help="write the answerable questions of a file reworded the ways people ask "
                                  "(first person, a typo, a synonym, run-on, a story), for `eval answers`"))
    v.add_argument("file", type=Path, help="JSON Lines questions (as `eval answers` reads them)")
    v.add_argument("--out", type=Path, required=True, help="the variants, JSON Lines")
    v.set_defaults(func=question_variants.run)


def add_eval_own_names(sub: argparse._SubParsersAction) -> None:
    o = add_common(sub.add_parser("own-names", help="the answer check on saved answers with a name of code put in: the "
                                  "asker's own (kept) or a library's no source holds (flagged)"))
    o.add_argument("reports", type=Path, nargs="+", help="reports written by `eval answers --out`")
    o.set_defaults(func=own_name_pairs.run)
