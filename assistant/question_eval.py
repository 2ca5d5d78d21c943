"""Does a question find its source file, and does the answer state the expected facts?

A questions file is JSON Lines: `question`, `source` (a path relative to the ingested root) and
optionally `answer_facts` (strings the answer should contain, compared case-insensitively).
Ingesting a folder is the ingestion package's job, which this package never imports: it is run as
the `assistant ingest` command in a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from indexes.retrieve import Retriever

from assistant.metrics import hit_at_k, percentile


@dataclass
class Question:
    question: str
    source: str
    answer_facts: list[str] = field(default_factory=list)


def load_questions(path: Path) -> list[Question]:
    """The questions of a JSON Lines file; a line without `question` or `source` is an error."""
    out: list[Question] = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not row.get("question") or not row.get("source"):
                raise ValueError(f"{path}:{n}: each line needs 'question' and 'source'")
            out.append(Question(row["question"], row["source"].strip("/"), list(row.get("answer_facts") or [])))
    return out


def ingest_folder(root: Path, collection: str, data_dir: Path, *, config: Path | None = None, timeout: float = 3600) -> dict:
    """`assistant ingest ROOT --collection NAME --data-dir DIR --json` in a subprocess; its report."""
    cmd = [sys.executable, "-m", "assistant.cli", "ingest", str(root), "--collection", collection,
           "--data-dir", str(data_dir), "--json"]
    if config:
        cmd += ["--config", str(config)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"ingesting {root} failed (exit {proc.returncode}): " + " | ".join(detail))
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def fact_recall(answer: str, facts: list[str]) -> tuple[int, int]:
    """(facts found in the answer, facts), case-insensitive and whitespace-insensitive."""
    flat = " ".join(answer.lower().split())
    found = sum(1 for f in facts if " ".join(f.lower().split()) in flat)
    return found, len(facts)


def evaluate_questions(
    retriever: Retriever, collection: str, questions: list[Question], *, k: int = 10
) -> tuple[dict[str, float], list[dict]]:
    """hit@1, hit@5, hit@10 (the source among the top-k hits) and per-question details."""
    details: list[dict] = []
    times: list[float] = []
    for q in questions:
        t0 = time.perf_counter()
        hits = retriever.search(q.question, collection, k=k)
        times.append((time.perf_counter() - t0) * 1000)
        paths = [h.path for h in hits]
        rank = paths.index(q.source) + 1 if q.source in paths else None
        details.append({"question": q.question, "source": q.source, "rank": rank, "top": paths[:3]})
    n = max(len(questions), 1)
    metrics = {
        f"hit@{c}": round(sum(hit_at_k([d["source"]] if d["rank"] and d["rank"] <= c else [], d["source"], c) for d in details) / n, 4)
        for c in (1, 5, 10)
    }
    metrics["search_ms_p50"] = round(percentile(times, 50), 1)
    return metrics, details


async def answer_facts(
    questions: list[Question], details: list[dict], collection: str, *, retriever, backend, settings
) -> dict[str, float]:
    """Generate an answer for each question with facts; fact recall = facts found / facts expected."""
    from assistant.rag import answer

    found_total = expected_total = 0
    errors = 0
    for q, d in zip(questions, details):
        if not q.answer_facts:
            continue
        pieces: list[str] = []
        async for event in answer(q.question, collection, retriever=retriever, backend=backend, settings=settings):
            if event.type == "token":
                pieces.append(event.data["text"])
            elif event.type == "error":
                errors += 1
                d["error"] = event.data.get("message")
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
