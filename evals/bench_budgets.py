"""`assistant bench budgets`: the prompt's token budget against the wait for the first token and the facts.

Each answerable question of a file is answered once per budget (`llamacpp.max_prompt_tokens` set on the
one loaded backend between answers), through the product's ask use case. The budgets are interleaved so
that a busy machine slows them alike: the questions are gone through once per budget, and in pass r
question i gets budget (i + r) mod B, so that consecutive answers are always of different questions (the
engine keeps only the prompt prefix every question shares, as it would for a new user) and each pass
mixes every budget. One answer to another question comes first, not measured (the engine's first prompt is slower).

Per budget: time to the first token as the reader waits for it (from the question sent to the first
piece of text, p50/p90), the prompt's tokens, fact recall and the right file cited (the measures of
`assistant eval answers`), on the tune half, the report half and all. The knee is the smallest budget
whose fact recall on the tune half is no lower than the largest budget's; its report-half figures are
the ones to quote. With `--followups N`, N conversations of two turns are asked per budget (interleaved
the same way): the second turn's wait, the follow-up rewritten to stand alone included.

With `--prompts-only` no model answers: per budget, the prompt each question gets (built exactly as an
answer's is) and what it holds, on every question in seconds: its tokens, the share of the expected facts
in its text (what the best answer could state) and whether the right file is among its sources.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import time
from typing import Any

from assistant.settings import Settings
from evals.eval_answers import AnswerQuestion, load_answer_questions, run_then_close, score_answer
from evals.eval_questions import fact_recall
from evals.metrics import percentile

WARM_UP = "What is this about?"
# The second turn of each conversation of --followups: what people ask after an answer, without naming it.
FOLLOWUPS = [
    "Is there a limit to that?",
    "Who do I ask about it?",
    "Does that also apply to contractors?",
    "Where is that written down?",
]


def parse_budgets(text: str) -> list[int]:
    """"1024,1536,2048" -> [1024, 1536, 2048], each at least 256 and each once (0 = the window's, no cap)."""
    try:
        budgets = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"budgets are whole numbers separated by commas, not {text!r}") from None
    if len(budgets) < 2 or len(set(budgets)) != len(budgets):
        raise argparse.ArgumentTypeError("give at least two different budgets")
    if any(b != 0 and b < 256 for b in budgets):
        raise argparse.ArgumentTypeError("a budget is at least 256 tokens (0 = the window's)")
    return budgets


def schedule(questions: int, budgets: list[int]) -> list[tuple[int, int]]:
    """(question index, budget) in the order they are asked: pass r gives question i budget (i + r) mod B."""
    n = len(budgets)
    return [(i, budgets[(i + r) % n]) for r in range(n) for i in range(questions)]


def knee(rows: list[dict], budgets: list[int], split: str = "tune") -> int:
    """The smallest budget whose fact recall on `split` is no lower than the largest budget's (0 counts as
    the largest: the window's)."""
    largest = max(budgets, key=lambda b: float("inf") if b == 0 else b)
    recall = {b: summary([r for r in rows if r["budget"] == b and r["split"] == split])["fact_recall"] for b in budgets}
    base = recall[largest] or 0.0
    return min((b for b in budgets if (recall[b] or 0.0) >= base), key=lambda b: float("inf") if b == 0 else b)


def summary(rows: list[dict]) -> dict[str, Any]:
    """The figures of some answers: the reader's wait for the first token, prompt tokens, facts, file."""
    waits = [r["wait_ms"] for r in rows if r.get("wait_ms") is not None]
    expected = sum(r["facts_expected"] for r in rows)
    cited = [r["right_file_cited"] for r in rows if r.get("right_file_cited") is not None]
    prompts = [r["prompt_tokens"] for r in rows if r.get("prompt_tokens")]
    return {
        "answers": len(rows),
        "ttft_ms_p50": round(percentile(waits, 50), 1) if waits else None,
        "ttft_ms_p90": round(percentile(waits, 90), 1) if waits else None,
        "prompt_tokens_p50": round(percentile(prompts, 50)) if prompts else None,
        "fact_recall": round(sum(r["facts_found"] for r in rows) / expected, 4) if expected else None,
        "right_file_cited": round(sum(cited) / len(cited), 4) if cited else None,
        "errors": sum(1 for r in rows if r.get("error")),
    }


async def answer(asking: Any, q: AnswerQuestion, collection: str, conversation_id: int | None = None) -> dict[str, Any]:
    """One question through the ask use case, the reader's wait for its first piece of text timed."""
    from assistant.answers.ask import AskError, Question
    from assistant.answers.prompts import sources_shown
    from assistant.security.access import LOCAL_USER

    sent = time.perf_counter()
    first: list[float] = []
    row: dict[str, Any] = {"question": q.question, "split": q.split}
    try:
        answering = await asking.open(LOCAL_USER, Question(q.question, () if conversation_id else (collection,),
                                                           conversation_id=conversation_id, progress=True))
    except AskError as exc:
        row["error"] = exc.message
        return {**row, **score_answer(q, "", [], {}, {}), "wait_ms": None, "prompt_tokens": None,
                "prompt_cached": None, "rewrite_ms": None}
    used = answering.prepared.prompt.sources_used if answering.prepared.prompt else []
    texts, places = sources_shown(used)
    got = await answering.outcome(lambda piece: first or first.append(time.perf_counter()))
    done = got.fields
    if got.failed is not None:
        row["error"] = got.failed.message
    text = str(done.get("answer") or "")
    cited = [] if (done.get("check") or {}).get("replaced") else [s["path"] for s in got.sources if s.get("cited")]
    row.update(score_answer(q, text, cited, texts, done, places))
    row.update(answer=text, wait_ms=round((first[0] - sent) * 1000, 1) if first else None,
               prompt_tokens=done.get("prompt_tokens"), prompt_cached=got.prompt_cached,
               rewrite_ms=(done.get("timings") or {}).get("rewrite_ms"))
    return row


async def followup(asking: Any, store: Any, q: AnswerQuestion, second: str, collection: str) -> dict[str, Any]:
    """A conversation of two turns: `q`, then `second`; the second turn's row (its facts are not scored)."""
    from indexes.conversations import create_conversation

    conv = await asyncio.to_thread(create_conversation, store.engine, "bench", [collection])
    await answer(asking, q, collection, conv.id)
    row = await answer(asking, AnswerQuestion(second, split=q.split), collection, conv.id)
    return {"question": q.question, "followup": second, "wait_ms": row["wait_ms"],
            "prompt_tokens": row["prompt_tokens"], "prompt_cached": row["prompt_cached"],
            "rewrite_ms": row["rewrite_ms"], "error": row.get("error")}


async def measure(asking: Any, backend: Any, store: Any, questions: list[AnswerQuestion], budgets: list[int],
                  collection: str, followups: int, say: Any, keep: Any = None) -> tuple[list[dict], list[dict]]:
    """Every (question, budget) of the schedule, then the follow-ups, budgets interleaved; `keep(rows,
    follows)` after each answer (a long run's answers so far are then on disk)."""
    def use(budget: int) -> None:
        backend.max_prompt_tokens = budget or None

    use(budgets[0])
    # Not measured: the first prompt of a loaded model, of a question not measured (so that the first one
    # measured finds only the shared prefix kept, as every later one does).
    await answer(asking, AnswerQuestion(WARM_UP), collection)
    rows: list[dict] = []
    order = schedule(len(questions), budgets)
    for n, (i, budget) in enumerate(order, start=1):
        use(budget)
        row = {"budget": budget, **await answer(asking, questions[i], collection)}
        rows.append(row)
        if keep:
            keep(rows, [])
        say(f"[{n}/{len(order)}] budget {budget}: wait {row['wait_ms']} ms, prompt {row['prompt_tokens']}, "
            f"facts {row['facts_found']}/{row['facts_expected']}: {questions[i].question[:50]}")
    follows: list[dict] = []
    chosen = questions[:followups]
    for n, (i, budget) in enumerate(schedule(len(chosen), budgets), start=1):
        use(budget)
        row = {"budget": budget, **await followup(asking, store, chosen[i], FOLLOWUPS[i % len(FOLLOWUPS)], collection)}
        follows.append(row)
        if keep:
            keep(rows, follows)
        say(f"[follow-up {n}] budget {budget}: wait {row['wait_ms']} ms (the rewrite {row['rewrite_ms']} ms), "
            f"prompt {row['prompt_tokens']} ({row['prompt_cached']} kept)")
    return rows, follows


def report(rows: list[dict], follows: list[dict], budgets: list[int]) -> dict[str, Any]:
    per: dict[str, Any] = {}
    for b in budgets:
        mine = [r for r in rows if r["budget"] == b]
        waits = [f["wait_ms"] for f in follows if f["budget"] == b and f.get("wait_ms") is not None]
        kept = [f["prompt_cached"] for f in follows if f["budget"] == b and f.get("prompt_cached") is not None]
        per[str(b)] = {
            "all": summary(mine),
            **{split: summary([r for r in mine if r["split"] == split]) for split in ("tune", "report")},
            "followup_ttft_ms_p50": round(percentile(waits, 50), 1) if waits else None,
            "followup_prompt_cached_p50": round(percentile(kept, 50)) if kept else None,
        }
    return {"budgets": per, "knee": knee(rows, budgets)}


def prompt_rows(questions: list[AnswerQuestion], budgets: list[int], collection: str, retriever: Any, backend: Any,
                settings: Settings) -> list[dict]:
    """Per question and budget, the prompt an answer would get: its tokens, the facts in it, the file."""
    from assistant.answers.prompts import build_prompt

    gen, rows = settings.generation, []
    for q in questions:
        hits = retriever.search(q.question, collection, settings.retrieval.k)
        for budget in budgets:
            backend.max_prompt_tokens = budget or None
            prompt = build_prompt(q.question, hits, backend, gen.max_tokens, gen.margin_tokens)
            found, expected = fact_recall(prompt.messages[-1]["content"], q.facts)
            rows.append({"budget": budget, "question": q.question, "split": q.split, "prompt_tokens": prompt.prompt_tokens,
                         "facts_found": found, "facts_expected": expected, "sources": len(prompt.sources_used),
                         "right_file_cited": any(h.path in q.sources for h in prompt.sources_used)})
    return rows


def prompt_report(rows: list[dict], budgets: list[int]) -> dict[str, Any]:
    """Per budget and half: prompt tokens p50, facts in the prompt, the right file among its sources."""
    def figures(mine: list[dict]) -> dict[str, Any]:
        s = summary(mine)
        return {"questions": s["answers"], "prompt_tokens_p50": s["prompt_tokens_p50"],
                "prompt_tokens_max": max((r["prompt_tokens"] for r in mine), default=None),
                "facts_in_prompt": s["fact_recall"], "right_file_in_prompt": s["right_file_cited"]}

    return {"budgets": {str(b): {split: figures([r for r in rows if r["budget"] == b and (split == "all" or r["split"] == split)])
                                 for split in ("all", "tune", "report")} for b in budgets}}


def fail(message: str) -> int:
    print(f"assistant bench budgets: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace, settings: Settings) -> int:
    """The command: ingest --root (or open --collection), answer at each budget, print one JSON object."""
    from indexes.factory import embedder_from, retriever_from
    from indexes.store import Store

    from assistant.backends.factory import create_backend
    from evals.eval_commands import eval_place
    from evals.eval_questions import asking_for, ingest_folder

    if settings.backend != "llamacpp":
        return fail(f"the budgets are the in-process llama.cpp backend's (`--backend llamacpp`), not {settings.backend!r}")
    questions: list[AnswerQuestion] = []
    for path in args.file:
        if not path.is_file():
            return fail(f"no such file: {path}")
        try:
            questions += [q for q in load_answer_questions(path) if not q.unanswerable]
        except (ValueError, json.JSONDecodeError) as exc:
            return fail(str(exc))
    if args.per_split:
        questions = [q for split in ("tune", "report") for q in [q for q in questions if q.split == split][: args.per_split]]
    questions = questions[: args.limit] if args.limit else questions
    if not questions:
        return fail("no answerable questions in the files given")
    if bool(args.collection) == bool(args.root):
        return fail("give exactly one of --root DIR (ingested) or --collection NAME (an existing collection)")
    if args.root and not args.root.is_dir():
        return fail(f"no such folder: {args.root}")
    data_dir, collection, temp = eval_place(args, settings)
    settings = settings.model_copy(update={"data_dir": data_dir})
    store = Store(data_dir, database_url=settings.database_url)
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if not args.quiet else (lambda line: None)
    try:
        embedder = embedder_from(settings.embedder)
        if args.root:
            ingest_folder(store, embedder, args.root.resolve(), collection, settings)
        if store.get_collection(collection) is None:
            return fail(f"unknown collection {collection!r} in {data_dir}")
        retriever = retriever_from(settings.retrieval, store, embedder, settings.embedder)
        backend = create_backend(settings)
        if args.prompts_only:
            rows = prompt_rows(questions, args.budgets, collection, retriever, backend, settings)
            asyncio.run(backend.aclose())
            out = {"files": [str(p) for p in args.file], "model": backend.model, "questions": len(questions),
                   **prompt_report(rows, args.budgets)}
            if args.out:
                args.out.write_text(json.dumps({**out, "details": rows}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
            print(json.dumps(out, ensure_ascii=False))
            return 0
        asking = asking_for(settings, store, retriever, backend)

        def keep(rows: list[dict], follows: list[dict]) -> None:
            if args.out:
                args.out.write_text(json.dumps({"details": rows, "followups": follows}, ensure_ascii=False, indent=1) + "\n",
                                    encoding="utf-8")

        rows, follows = run_then_close(
            measure(asking, backend, store, questions, args.budgets, collection, args.followups, say, keep), backend)
    finally:
        store.close()
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    out = {"files": [str(p) for p in args.file], "collection": args.collection or str(args.root),
           "model": getattr(backend, "model", None), "questions": len(questions),
           "order": "interleaved: pass r gives question i budget (i + r) mod B", **report(rows, follows, args.budgets)}
    if args.out:
        args.out.write_text(json.dumps({**out, "details": rows, "followups": follows}, ensure_ascii=False, indent=1) + "\n",
                            encoding="utf-8")
    print(json.dumps(out, ensure_ascii=False))
    return 0
