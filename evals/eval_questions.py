"""Does a question find its source file, and does the answer state the expected facts?

A questions file is JSON Lines: `question`, `source` (a path relative to the ingested root; `a|b` when either answers) and
optionally `answer_facts` (strings the answer should contain, compared normalised, `a|b` for
alternatives) and, for code, `symbol` (the name whose definition the cited lines should contain).
Derived sets (`evals.derive_questions`) add `split` (`tune` or `report`), `set` and `heading`; a run
may take one split only, so that settings chosen on `tune` are reported on questions they never saw.

Besides hit@k, the report gives file-level MRR@10 (1 / rank of the source among the distinct files
found) and, for questions with a symbol, how often the best chunk of the source file cites a line
range holding the symbol's definition (`symbol_in_range`). For questions with facts it says how many of
them the top hit's text holds (`chunk_fact_recall`: what the prompt puts first, before any model reads
it) and how often one line of it holds them all (`chunk_row_recall`: a table's row kept together).
The folder is ingested through the ingestion package's own API, with the options `assistant ingest`
would use.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from indexes.retrieval.retriever import Retriever
from indexes.store import Store
from ingest.chunking import EmbedderLike
from ingest.pipeline import ingest_paths
from ingest.worker import options_from

from evals.metrics import hit_at_k, percentile


@dataclass
class Question:
    question: str
    source: str
    answer_facts: list[str] = field(default_factory=list)
    symbol: str = ""
    split: str = ""
    set: str = ""
    package: str = ""


QUESTION_SPLITS = ("tune", "report")


def choose_split(questions: list[Question], split: str) -> list[Question]:
    """The questions of one split ('all' = every question); a split asked of a file whose lines carry
    none is an error, not an empty run."""
    if split == "all":
        return questions
    if split not in QUESTION_SPLITS:
        raise ValueError(f"split must be one of tune, report, all, not {split!r}")
    if not any(q.split for q in questions):
        raise ValueError("its questions carry no 'split'; use --split all")
    return [q for q in questions if q.split == split]


def json_lines(path: Path) -> Iterator[tuple[int, dict]]:
    """Each row of a JSON Lines file with its line number (for the errors that name it); blank lines skipped."""
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                yield n, json.loads(line)


def load_questions(path: Path) -> list[Question]:
    """The questions of a JSON Lines file; a line without `question` or `source` is an error, except
    one marked `"unanswerable": true` (kept for `eval answers`), which is skipped."""
    out: list[Question] = []
    for n, row in json_lines(path):
        if row.get("unanswerable") and not row.get("source"):
            continue  # a question for `eval answers` to abstain on: nothing to find
        if not row.get("question") or not row.get("source"):
            raise ValueError(f"{path}:{n}: each line needs 'question' and 'source'")
        split = str(row.get("split") or "")
        if split and split not in QUESTION_SPLITS:
            raise ValueError(f"{path}:{n}: split must be 'tune' or 'report', not {split!r}")
        out.append(Question(row["question"], row["source"].strip("/"), list(row.get("answer_facts") or []),
                            str(row.get("symbol") or ""), split, str(row.get("set") or ""),
                            str(row.get("package") or "")))
    return out


def ingest_folder(store: Store, embedder: EmbedderLike, root: Path | list[Path], collection: str, settings: Any) -> dict:
    """Ingest ROOT (or several roots, each file's path relative to its own) into the collection as
    `assistant ingest` would (same options, and a new collection gets the embedder `assistant ingest`
    would choose for it: under "auto" the one its language needs); the run's report."""
    from indexes.factory import Embedders

    roots = root if isinstance(root, list) else [root]
    embedders = Embedders(settings.embedder, loaded=embedder)
    return ingest_paths(store, embedders, roots, collection, options=options_from(settings)).to_dict()


def normalise(text: str) -> str:
    """Text as facts are compared: NFKC (fullwidth letters and digits become ASCII), every decimal digit
    as its ASCII digit, casefolded, whitespace removed (Chinese writes "15天" where a fact says "15 天")."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(str(unicodedata.digit(ch)) if ch.isdecimal() else ch for ch in text if not ch.isspace())


def fact_found(answer: str, fact: str) -> bool:
    """Whether the answer states the fact; a fact may list alternatives as "a|b"."""
    flat = normalise(answer)
    return any(alt and alt in flat for alt in (normalise(a) for a in fact.split("|")))


def by_package(questions: list[Question], details: list[dict]) -> dict[str, dict[str, float]]:
    """hit@1 and hit@5 per package of a derived code set ({} when the questions name none)."""
    groups: dict[str, list[dict]] = {}
    for q, d in zip(questions, details):
        if q.package:
            groups.setdefault(q.package, []).append(d)
    return {
        name: {"questions": len(ds), **{f"hit@{c}": round(sum(1 for d in ds if d["rank"] and d["rank"] <= c) / len(ds), 4)
                                        for c in (1, 5)}}
        for name, ds in sorted(groups.items())
    }


def fact_recall(answer: str, facts: list[str]) -> tuple[int, int]:
    """(facts found in the answer, facts), compared normalised (see `normalise`)."""
    return sum(1 for f in facts if fact_found(answer, f)), len(facts)


def facts_on_one_line(text: str, facts: list[str]) -> bool:
    """Whether one line of text states every fact: a table row keeps a record's cells on one line, so a
    chunk that lost its table's rows (cells one per paragraph) holds the facts apart."""
    return any(all(fact_found(line, f) for f in facts) for line in text.split("\n"))


def definition_lines(text: str, symbol: str) -> list[int]:
    """1-based lines of a file that define `symbol` (its last dotted part): `def`/`class` lines, else
    assignments and mapping keys (`NAME = `, `"NAME": `); [] when none is found."""
    name = re.escape(symbol.rsplit(".", 1)[-1])
    lines = text.splitlines()
    for pattern in (rf"^\s*(?:async\s+)?(?:def|class)\s+{name}\b", rf"^\s*(?:{name}\s*[:=]|[\"']{name}[\"']\s*:)"):
        found = [i for i, line in enumerate(lines, start=1) if re.search(pattern, line)]
        if found:
            return found
    return []


def symbol_cited(hits: list, source: str, symbol: str, root: Path | list[Path] | None) -> bool | None:
    """Whether the best hit of the source file cites lines holding the symbol's definition; None when
    this cannot be told (no symbol, no root, the file unread or the symbol not found in it)."""
    roots = [] if root is None else root if isinstance(root, list) else [root]
    found = next((r / source for r in roots if (r / source).is_file()), None)
    if not symbol or found is None:
        return None
    try:
        wanted = definition_lines(found.read_text(encoding="utf-8", errors="replace"), symbol)
    except OSError:
        return None
    if not wanted:
        return None
    best = next((h for h in hits if h.path == source), None)
    if best is None or best.line_start is None or best.line_end is None:
        return False
    return any(best.line_start <= line <= best.line_end for line in wanted)


def first_rank(paths: list[str], source: str) -> int | None:
    """1-based rank of the first path that is the source (or one of its alternatives, `a|b`); None if absent."""
    wanted = {s.strip("/") for s in source.split("|")}
    return next((i for i, p in enumerate(paths, start=1) if p in wanted), None)


def evaluate_questions(
    retriever: Retriever, collection: str, questions: list[Question], *, k: int = 10,
    root: Path | list[Path] | None = None
) -> tuple[dict[str, float], list[dict]]:
    """hit@1, hit@5, hit@10 (the source among the top-k hits), file-level MRR@10, the share of code
    questions whose cited lines hold the symbol (with `root`), and per-question details."""
    details: list[dict] = []
    times: list[float] = []
    for q in questions:
        t0 = time.perf_counter()
        hits = retriever.search(q.question, collection, k=k)
        times.append((time.perf_counter() - t0) * 1000)
        paths = [h.path for h in hits]
        files = list(dict.fromkeys(paths))  # distinct files, in the order of their best chunk
        rank = first_rank(paths, q.source)
        file_rank = first_rank(files, q.source)
        d = {"question": q.question, "source": q.source, "rank": rank, "file_rank": file_rank, "top": files[:3]}
        cited = symbol_cited(hits, q.source, q.symbol, root)
        if cited is not None:
            d["symbol_in_range"] = cited
        if q.answer_facts:
            top = hits[0].text if hits else ""
            d["chunk_facts_found"], d["facts_expected"] = fact_recall(top, q.answer_facts)
            d["chunk_row"] = facts_on_one_line(top, q.answer_facts)
        details.append(d)
    n = max(len(questions), 1)
    metrics = {
        f"hit@{c}": round(sum(hit_at_k([d["source"]] if d["rank"] and d["rank"] <= c else [], d["source"], c) for d in details) / n, 4)
        for c in (1, 5, 10)
    }
    metrics["file_mrr@10"] = round(sum(1 / d["file_rank"] for d in details if d["file_rank"] and d["file_rank"] <= 10) / n, 4)
    checked = [d["symbol_in_range"] for d in details if "symbol_in_range" in d]
    if checked:
        metrics["symbol_in_range"] = round(sum(checked) / len(checked), 4)
        metrics["symbol_questions"] = len(checked)
    with_facts = [d for d in details if "chunk_row" in d]
    if with_facts:
        metrics["chunk_fact_recall"] = round(sum(d["chunk_facts_found"] for d in with_facts)
                                             / sum(d["facts_expected"] for d in with_facts), 4)
        metrics["chunk_row_recall"] = round(sum(d["chunk_row"] for d in with_facts) / len(with_facts), 4)
    metrics["search_ms_p50"] = round(percentile(times, 50), 1)
    return metrics, details


async def answer_facts(questions: list[Question], details: list[dict], collection: str, asking: Any) -> dict[str, float]:
    """Generate an answer for each question with facts, through the ask use case (what every door runs);
    fact recall = facts found / facts expected."""
    from assistant.answers.ask import AskError, Question as Asked
    from assistant.security.access import LOCAL_USER

    found_total = expected_total = 0
    errors = 0
    for q, d in zip(questions, details):
        if not q.answer_facts:
            continue
        pieces: list[str] = []
        try:
            answering = await asking.open(LOCAL_USER, Asked(q.question, (collection,)))
        except AskError as exc:
            errors += 1
            d["error"] = exc.message
            continue
        got = await answering.outcome()
        if got.failed is not None:
            errors += 1
            d["error"] = got.failed.message
        pieces.append(got.text)
        text = "".join(pieces)
        found, expected = fact_recall(text, q.answer_facts)
        found_total += found
        expected_total += expected
        d.update(answer=text, facts_found=found, facts_expected=expected)
    return {
        "fact_recall": round(found_total / expected_total, 4) if expected_total else 0.0,
        "facts_expected": expected_total,
        "answer_errors": errors,
    }


def asking_for(settings: Any, store: Any, retriever: Any, backend: Any) -> Any:
    """The ask use case over this evaluation's store, retriever and backend, with the server's policy."""
    from assistant.answers.ask import Asking
    from assistant.answers.rag import AnswerPolicy

    return Asking(store, retriever, backend, AnswerPolicy.of(settings), settings.conversations,
                  settings.server.max_question_chars)
