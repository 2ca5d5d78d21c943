"""`assistant eval answers`: the answers themselves, measured through the product's own answer path.

A questions file is JSON Lines. Each line has `question`; an answerable one has `source` (the file
that holds the answer, relative to the ingested root; "a|b" when either file will do) and
`answer_facts` (short facts a correct answer states, taken verbatim from that file; a fact may list
alternatives "a|b"); an unanswerable one has `"unanswerable": true` (its answer is in no file).

Split: each line carries `"split": "tune"` or `"report"`. Prompts and settings are tuned on the tune
half only and figures are reported on the report half. The rule that made the halves (and that places
a line written without a split): a question is "tune" when the first byte of the SHA-256 of its UTF-8
text is even, else "report".

Per question and in total: fact recall (facts compared normalised: NFKC, casefold, decimal digits as
ASCII, whitespace ignored), the right file cited (the question's source among the cited sources) and
shown (among the passages the prompt held),
citation precision and coverage and abstention as `assistant.answers.support.check_answer` judges the
answer against the texts of the sources the prompt held, abstention accuracy (unanswerable questions
must abstain, answerable ones must not), whether the answer is in the question's language, empty
answers, template text leaking into answers ("Answer:", the sources tag, chat-template tokens),
answers replaced because nothing they claimed was supported, questions answered without the model
because a word of theirs is in no document (`absent_words`, answers/absent_terms.py), time to the first
token and decode speed ((completion tokens - 1) / time after the first token) of the questions the model
answered. Facts are counted in the answer as shown, the sources' words quoted under it included
(answers/quotes.py), and in the model's own sentences alone (`*_unquoted`).

Each row keeps the model's own text and the sources its prompt held, so `--rescore REPORT` judges a
saved report again with today's answer check and facts, without running the model (quoting as the saved
run did, today's `generation.quote_sources` for a report that does not say).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from statistics import mean
from typing import Any, Callable, Coroutine

from rich.console import Console
from rich.table import Table
from rich.text import Text

from indexes.terminal_text import terminal_safe

from assistant.answers import support
from assistant.answers.quotes import without_quotes
from assistant.settings import Settings
from evals.eval_questions import asking_for, fact_recall, json_lines
from evals.metrics import percentile
from assistant.commands import fail as failed

SPLITS = ("tune", "report", "all")
# Prompt scaffolding, chat-template tokens or copied source headers: none belongs in an answer.
TEMPLATE_LEAK = re.compile(
    r"(?im)^\s*(?:answer|question|context|sources)\s*:|</?\s*sources\s*>|<\|im_(?:start|end)\|>|<\|endoftext\|>"
    r"|<(?:start|end)_of_turn>|\[n\]"
    r"|\[\d+\] [^\n\[\]]{1,200} — \S+\.\w+"  # a source's header line `[1] Title — path:lines` copied
)

fail = partial(failed, command="assistant eval answers")


@dataclass
class AnswerQuestion:
    question: str
    sources: list[str] = field(default_factory=list)  # any of these files holds the answer
    facts: list[str] = field(default_factory=list)
    unanswerable: bool = False
    split: str = "tune"
    variant: str = ""  # the kind of rewording it is of another question (eval variants), if any


def split_of(question: str) -> str:
    """The half a question belongs to (the rule of the module docstring)."""
    return "tune" if hashlib.sha256(question.encode("utf-8")).digest()[0] % 2 == 0 else "report"


def run_then_close(work: Coroutine[Any, Any, Any], backend: Any) -> Any:
    """An evaluation's coroutine run to its end; the backend is closed after it, whatever happens."""
    async def go() -> Any:
        try:
            return await work
        finally:
            await backend.aclose()

    return asyncio.run(go())


def load_answer_questions(path: Path) -> list[AnswerQuestion]:
    """The questions of a JSON Lines file; clear errors for a line that is neither answerable nor marked."""
    out: list[AnswerQuestion] = []
    for n, row in json_lines(path):
        text = str(row.get("question") or "").strip()
        unanswerable = bool(row.get("unanswerable"))
        sources = [s.strip().strip("/") for s in str(row.get("source") or "").split("|") if s.strip()]
        if not text:
            raise ValueError(f"{path}:{n}: each line needs 'question'")
        if not unanswerable and not sources:
            raise ValueError(f"{path}:{n}: an answerable question needs 'source' (or \"unanswerable\": true)")
        split = row.get("split") or split_of(text)
        if split not in ("tune", "report"):
            raise ValueError(f"{path}:{n}: split must be 'tune' or 'report', not {split!r}")
        out.append(AnswerQuestion(text, sources, [str(f) for f in row.get("answer_facts") or []], unanswerable, split,
                                  str(row.get("variant") or "")))
    return out


def choose(questions: list[AnswerQuestion], split: str, limit: int | None) -> list[AnswerQuestion]:
    chosen = [q for q in questions if split == "all" or q.split == split]
    return chosen[:limit] if limit else chosen


def score_answer(q: AnswerQuestion, answer: str, cited_paths: list[str], source_texts: dict[int, str],
                 done: dict[str, Any], places: dict[int, str] | None = None) -> dict[str, Any]:
    """The measures of one answer (pure): what the reader was shown, against the question and its sources
    (number -> text, and the place the prompt showed each under)."""
    own = without_quotes(answer)  # the answer's own sentences, without the sources' words quoted under them
    check = support.check_answer(own, source_texts, places)
    found, expected = fact_recall(answer, q.facts)
    timings = done.get("timings") or {}
    first, total = timings.get("first_token_ms"), timings.get("total_ms")
    tokens = done.get("completion_tokens")
    speed = None
    if isinstance(tokens, int) and tokens > 1 and first is not None and total and total > first:
        speed = round((tokens - 1) / ((total - first) / 1000), 2)
    return {
        "facts_found": found, "facts_expected": expected, "facts_unquoted": fact_recall(own, q.facts)[0],
        "quoted": own != answer,
        "right_file_cited": None if q.unanswerable else any(s in cited_paths for s in q.sources),
        "citation_precision": check.citation_precision, "citation_coverage": check.citation_coverage,
        "abstained": check.abstained, "unsupported": check.unsupported,
        "replaced": bool((done.get("check") or {}).get("replaced")),
        "off_topic": bool((done.get("check") or {}).get("off_topic")),
        "contradicted": bool((done.get("check") or {}).get("contradicted")),
        "language_match": support.language_of(answer) == support.language_of(q.question),
        "empty": not answer.strip(),
        "template_leak": bool(TEMPLATE_LEAK.search(done.get("model_answer") or answer)),
        "ttft_ms": first, "completion_tokens": tokens, "tokens_per_s": speed,
    }


async def ask(q: AnswerQuestion, collection: str, asking: Any) -> dict[str, Any]:
    """One question through the ask use case (answers/ask.py, what every door runs) and its events, scored."""
    from assistant.answers.ask import AskError, Question
    from assistant.answers.prompts import sources_shown
    from assistant.security.access import LOCAL_USER

    row: dict[str, Any] = {"question": q.question, "split": q.split, "unanswerable": q.unanswerable,
                           "source": "|".join(q.sources), "variant": q.variant}
    try:
        answering = await asking.open(LOCAL_USER, Question(q.question, (collection,)))
    except AskError as exc:
        row["error"] = exc.message
        row.update(answer="", cited=[], **score_answer(q, "", [], {}, {}, {}))
        return row
    used = answering.prepared.prompt.sources_used if answering.prepared.prompt else []
    texts, places = sources_shown(used)
    got = await answering.outcome()
    cited = [s["path"] for s in got.sources if s.get("cited")]
    done = got.fields
    if got.failed is not None:
        row["error"] = got.failed.message
    answer = str(done.get("answer") or "")
    if (done.get("check") or {}).get("replaced"):  # the reader sees the statement of abstention, citing nothing
        row["model_cited"], cited = cited, []
    row.update(answer=answer, cited=cited)
    if done.get("model_answer") is not None and done["model_answer"] != answer:
        row["model_answer"] = done["model_answer"]
    if done.get("absent_words"):  # stopped before the model: words of it no document uses
        row["absent_words"] = done["absent_words"]
    row.update(score_answer(q, answer, cited, texts, done, places))
    # What `--rescore` needs to judge the same answer again with a changed check: the model's own text
    # and the sources its prompt held.
    row["model_text"] = done.get("model_answer", answer)
    row["prompt_sources"] = [{"n": n, "path": h.path, "place": places[n], "text": h.text} for n, h in enumerate(used, start=1)]
    return row


def rescore(q: AnswerQuestion, row: dict[str, Any], replace: bool, quote: bool) -> dict[str, Any]:
    """A saved row judged again from its model text and prompt sources with today's answer check and
    facts (no model runs): what a change to the check would have shown the reader."""
    from assistant.answers.citations import cited_numbers
    from assistant.answers.rag import checked_answer

    texts = {int(s["n"]): str(s["text"]) for s in row["prompt_sources"]}
    paths = {int(s["n"]): str(s["path"]) for s in row["prompt_sources"]}
    places = {int(s["n"]): str(s.get("place", s["path"])) for s in row["prompt_sources"]}  # older files: the path only
    model_text = str(row["model_text"])
    _, check, fields = checked_answer(q.question, model_text, texts, places, replace, quote)
    answer = fields["answer"]
    cited = [] if check["replaced"] else list(dict.fromkeys(paths[n] for n in cited_numbers(answer) if n in paths))
    done = {"check": check, "model_answer": fields.get("model_answer"), "completion_tokens": row.get("completion_tokens"),
            "timings": {}}
    out = {key: row[key] for key in ("question", "split", "unanswerable", "source", "variant") if key in row}
    out.update(answer=answer, cited=cited)
    if model_text != answer:
        out["model_answer"] = model_text
    out.update(score_answer(q, answer, cited, texts, done, places))
    if row.get("absent_words"):
        out["absent_words"] = row["absent_words"]
    out.update(ttft_ms=row.get("ttft_ms"), tokens_per_s=row.get("tokens_per_s"), model_text=model_text,
               prompt_sources=row["prompt_sources"])
    return out


def _rate(values: list[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _mean(values: list[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return round(mean(xs), 4) if xs else None


OUTCOMES = ("right_answer", "right_abstention", "false_abstention", "invention", "answer_without_facts")
CRAG_POINTS = {"right_answer": 1, "right_abstention": 1, "false_abstention": 0, "invention": -1,
               "answer_without_facts": -1}


def outcome(row: dict[str, Any]) -> str:
    """What the reader got, in one word: an answer with at least one expected fact, an abstention where the
    documents hold no answer, an abstention where they do, an answer where they hold none, or an answer
    without any expected fact."""
    if row["unanswerable"]:
        return "right_abstention" if row["abstained"] else "invention"
    if row["abstained"]:
        return "false_abstention"
    return "right_answer" if row["facts_found"] > 0 else "answer_without_facts"


def headline(rows: list[dict[str, Any]], facts: str = "facts_found") -> dict[str, Any]:
    """One line per set: the count of each outcome and the CRAG-style score (+1 a right answer or a right
    abstention, 0 a false abstention, -1 an invention or an answer without the facts; the mean). `facts`
    "facts_unquoted": a fact counted only where the model's own sentences state it, not the quotes under them."""
    found = [outcome(dict(r, facts_found=r.get(facts, r["facts_found"]))) for r in rows]
    score = sum(CRAG_POINTS[o] for o in found) / len(found) if found else None
    return {**{o: found.count(o) for o in OUTCOMES}, "crag_score": round(score, 4) if score is not None else None}


def by_variant(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind of rewording (eval variants): the headline, false abstentions and fact recall."""
    out: dict[str, Any] = {}
    for kind in sorted({r.get("variant") or "" for r in rows} - {""}):
        group = [r for r in rows if r.get("variant") == kind]
        expected = sum(r["facts_expected"] for r in group)
        out[kind] = {**headline(group), "false_abstentions": _rate([r["abstained"] for r in group]),
                     "fact_recall": round(sum(r["facts_found"] for r in group) / expected, 4) if expected else None}
    return out


def shown_right(row: dict[str, Any]) -> bool:
    """Whether a passage of the question's source was among those the prompt held (cited or not): what a
    reader of an answer that cites nothing, a peer's, could open."""
    shown = {str(s["path"]) for s in row["prompt_sources"]}
    return any(s in shown for s in str(row.get("source") or "").split("|") if s)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The totals of the per-question rows, the headline first."""
    answerable = [r for r in rows if not r["unanswerable"]]
    unanswerable = [r for r in rows if r["unanswerable"]]
    expected = sum(r["facts_expected"] for r in answerable)
    asked = [r for r in rows if not r.get("absent_words")]  # the model's speed: the questions it answered
    ttft = [r["ttft_ms"] for r in asked if r.get("ttft_ms") is not None]
    speed = [r["tokens_per_s"] for r in asked if r.get("tokens_per_s") is not None]
    return {
        "headline": headline(rows),
        "questions": len(rows), "answerable": len(answerable), "unanswerable": len(unanswerable),
        "fact_recall": round(sum(r["facts_found"] for r in answerable) / expected, 4) if expected else None,
        "facts_expected": expected,
        # the same without the quotes under the answers: what the model's own sentences state
        "headline_unquoted": headline(rows, "facts_unquoted"),
        "fact_recall_unquoted": round(sum(r.get("facts_unquoted", r["facts_found"]) for r in answerable) / expected, 4)
        if expected else None,
        "quoted": sum(bool(r.get("quoted")) for r in rows),
        "right_file_cited": _rate([r["right_file_cited"] for r in answerable]),
        "right_file_shown": _rate([shown_right(r) for r in answerable if "prompt_sources" in r]),
        "citation_precision": _mean([r["citation_precision"] for r in rows]),
        "citation_coverage": _mean([r["citation_coverage"] for r in rows]),
        "abstained_when_unanswerable": _rate([r["abstained"] for r in unanswerable]),
        "false_abstentions": _rate([r["abstained"] for r in answerable]),
        "language_match": _rate([r["language_match"] for r in rows]),
        "empty_answers": sum(r["empty"] for r in rows),
        "template_leaks": sum(r["template_leak"] for r in rows),
        "replaced": sum(r["replaced"] for r in rows),
        "absent_words": sum(bool(r.get("absent_words")) for r in rows),
        "errors": sum(1 for r in rows if r.get("error")),
        "ttft_ms_p50": round(percentile(ttft, 50), 1) if ttft else None,
        "tokens_per_s_p50": round(percentile(speed, 50), 2) if speed else None,
        "off_topic": sum(bool(r.get("off_topic")) for r in rows),
        "contradicted": sum(bool(r.get("contradicted")) for r in rows),
        **({"by_variant": variants} if (variants := by_variant(rows)) else {}),
    }


async def evaluate_answers(questions: list[AnswerQuestion], collection: str, asking: Any,
                           progress: Callable[[int, dict], None] | None = None) -> tuple[dict, list[dict]]:
    """Every question answered one after another (as one user would ask them); totals and rows."""
    rows: list[dict] = []
    for i, q in enumerate(questions, start=1):
        rows.append(await ask(q, collection, asking))
        if progress:
            progress(i, rows[-1])
    return summarise(rows), rows



def overrides(args: argparse.Namespace) -> dict:
    out: dict = {}
    if args.backend:
        out["backend"] = args.backend
    if args.max_tokens:
        out["generation"] = {"max_tokens": args.max_tokens}
    return out


def run(args: argparse.Namespace, settings: Settings) -> int:
    """The command: ingest --root (or open --collection), answer the chosen split, print the report."""
    from indexes.factory import embedder_from, retriever_from
    from indexes.store import Store, StoreError

    from assistant.answers.rag import quotes_sources, replaces_unsupported
    from assistant.backends.factory import create_backend
    from evals.eval_commands import eval_place
    from evals.eval_questions import ingest_folder

    if not args.file.is_file():
        return fail(f"no such file: {args.file}")
    if args.rescore:
        return run_rescore(args, settings)
    if bool(args.collection) == bool(args.root):
        return fail("give exactly one of --root DIR (ingested) or --collection NAME (an existing collection)")
    if args.root and not args.root.is_dir():
        return fail(f"no such folder: {args.root}")
    try:
        questions = choose(load_answer_questions(args.file), args.split, args.limit)
    except (ValueError, json.JSONDecodeError) as exc:
        return fail(str(exc))
    if not questions:
        return fail(f"no questions in split {args.split!r} of {args.file}")
    data_dir, collection, temp = eval_place(args, settings)
    settings = settings.model_copy(update={"data_dir": data_dir})
    err = Console(stderr=True)
    store = Store(data_dir, database_url=settings.database_url)
    try:
        embedder = embedder_from(settings.embedder)
        if args.root:
            try:
                with err.status(f"ingesting {args.root}…"):
                    ingest_folder(store, embedder, args.root.resolve(), collection, settings)
            except (StoreError, OSError) as exc:
                return fail(f"ingesting {args.root} failed: {exc}")
        if store.get_collection(collection) is None:
            return fail(f"unknown collection {collection!r} in {data_dir}")
        retriever = retriever_from(settings.retrieval, store, embedder, settings.embedder)
        backend = create_backend(settings)
        asking = asking_for(settings, store, retriever, backend)

        def progress(i: int, row: dict) -> None:
            facts = "unanswerable" if row["unanswerable"] else f"facts {row['facts_found']}/{row['facts_expected']}"
            err.print(terminal_safe(f"[{i}/{len(questions)}] {facts}, abstained {row['abstained']}, cited {row['cited']}: "
                                    f"{row['question'][:60]} -> {' '.join(row['answer'].split())[:120]}"),
                      markup=False, highlight=False)

        totals, rows = run_then_close(evaluate_answers(questions, collection, asking, progress=progress), backend)
    finally:
        store.close()
        if temp:
            shutil.rmtree(temp, ignore_errors=True)
    gen = settings.generation
    report = {
        "file": str(args.file), "split": args.split, "collection": args.collection or str(args.root),
        "backend": settings.backend, "model": getattr(backend, "model", None),
        "settings": {"k": settings.retrieval.k, "max_tokens": gen.max_tokens, "temperature": gen.temperature,
                     "replace_unsupported": replaces_unsupported(settings), "quote_sources": quotes_sources(settings)},
        **totals, "details": rows,
    }
    return emit(report, args)


def run_rescore(args: argparse.Namespace, settings: Settings) -> int:
    """`--rescore REPORT`: the answers of a saved report (`--out`) judged again, with today's check and
    the facts of FILE; the questions of FILE's chosen split that the report answered."""
    from assistant.answers.rag import quotes_sources, replaces_unsupported

    try:
        saved = json.loads(args.rescore.read_text(encoding="utf-8"))
        questions = {q.question: q for q in choose(load_answer_questions(args.file), args.split, None)}
        rows = [r for r in saved["details"] if r.get("question") in questions]
        if any("model_text" not in r or "prompt_sources" not in r for r in rows):
            return fail(f"{args.rescore} holds no model texts and prompt sources (made before --rescore existed)")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return fail(f"cannot rescore {args.rescore}: {exc}")
    rows = rows[: args.limit] if args.limit else rows
    if not rows:
        return fail(f"{args.rescore} answers no question of split {args.split!r} of {args.file}")
    # as the saved run did: whether it replaced unsupported answers is a setting of that run
    replace = bool((saved.get("settings") or {}).get("replace_unsupported", replaces_unsupported(settings)))
    # how our answers are shown today, unless the saved run says otherwise (a peer's answers are judged as given)
    quote = bool((saved.get("settings") or {}).get("quote_sources", quotes_sources(settings)))
    details = [rescore(questions[r["question"]], r, replace, quote) for r in rows]
    report = {key: saved.get(key) for key in ("file", "collection", "backend", "model")}
    report.update(split=args.split, rescored=str(args.rescore),
                  settings=dict(saved.get("settings") or {}, replace_unsupported=replace, quote_sources=quote),
                  **summarise(details), details=details)
    return emit(report, args)


def emit(report: dict, args: argparse.Namespace) -> int:
    if args.out:
        args.out.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print_report(report)
    return 0


def print_report(report: dict) -> None:
    """A row per question, then the totals."""
    def mark(v: Any) -> str:
        return "-" if v is None else ("yes" if v is True else "no" if v is False else f"{v:.2f}")

    table = Table("#", "split", "facts", "file", "abst", "prec", "question", "answer",
                  title=Text(terminal_safe(f"{report['file']} ({report['split']} split, {report['model']})")))
    for i, r in enumerate(report["details"], 1):
        facts = "unanswerable" if r["unanswerable"] else f"{r['facts_found']}/{r['facts_expected']}"
        table.add_row(str(i), r["split"], facts, mark(r["right_file_cited"]), mark(r["abstained"]),
                      mark(r["citation_precision"]), Text(terminal_safe(r["question"][:50])),
                      Text(terminal_safe(" ".join(r["answer"].split())[:80])))
    console = Console()
    console.print(table)
    totals = Table("measure", "value", title="totals")
    for key, value in report.items():
        if key not in ("details", "settings", "file") and not isinstance(value, dict):
            totals.add_row(key, str(value))
    console.print(totals)
