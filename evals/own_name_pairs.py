"""`assistant eval own-names`: the answer check on answers given before, with a name of code put in by a method.

Developers name their own functions, modules, classes and routes when they ask how a library treats them, and a
small model repeats those names in its answer; no document holds them. From every answer of `eval answers`
reports that the check keeps (answerable, not abstained, nothing flagged), two pairs per style of name (a
function in snake case, a dotted module, a CamelCase class, a route, a view in code pasted under the question;
the name drawn from fixed word lists by the question's hash):

- `own`: the question opens "In my `load_invoice` function, ..." (a route: "When I call `/billing/invoices`,
  ..."; pasted code: the question followed by a block defining `load_invoice()`) and the answer's first sentence
  "In your `load_invoice` function, ..." ("When you call ...", "In your `load_invoice` view, ...") (the check
  should keep it: the asker's own name);
- `library`: the question, asked "In my app", ends "Does `flask.load_invoice` do it?" and the answer opens
  "Yes, `flask.load_invoice` does it: ..." (the check should flag it: a name of code the asker does not call
  theirs, which no source holds).

Reported: per kind, the share of pairs the check judges as expected. The sources are those the report saved
with each answer (`prompt_sources`), so no model and no store is needed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from assistant.answers.attribution import attribute
from assistant.answers.support import AnswerCheck, check_answer

VERBS = "load save render check build fetch handle export sync parse".split()
NOUNS = "invoice profile report order ledger badge upload account shipment quota".split()
STYLES = ("function", "module", "class")  # of code; and a route the asker calls


def _pick(words: list[str], text: str, salt: str) -> str:
    return words[hashlib.sha256((salt + text).encode()).digest()[0] % len(words)]


def name_of(question: str, style: str) -> str:
    """A name of code no document holds, of the style asked, the same for the same question."""
    verb, noun = _pick(VERBS, question, "verb"), _pick(NOUNS, question, "noun")
    agent = verb.title() + ("r" if verb.endswith("e") else "er")  # load -> Loader, handle -> Handler
    return {"function": f"{verb}_{noun}", "module": f"billing.{noun}s", "class": f"{noun.title()}{agent}"}[style]


def flagged(check: AnswerCheck) -> bool:
    """What makes `generation.replace_unsupported` replace an answer (answers/rag.py `checked_answer`)."""
    return check.unsupported or check.off_topic or bool(check.unknown_names) or check.no_quantity


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _sources(detail: dict) -> tuple[dict[int, str], dict[int, str]]:
    shown = detail.get("prompt_sources") or []
    return {int(s["n"]): str(s["text"]) for s in shown}, {int(s["n"]): str(s.get("place", "")) for s in shown}


def pairs_of(detail: dict) -> list[tuple[str, str, str]]:
    """(kind, question, answer) pairs of one answer of a report, or none when the check does not keep it as it is."""
    if detail.get("unanswerable") or not detail.get("prompt_sources") or not detail.get("model_text"):
        return []
    texts, places = _sources(detail)
    question = str(detail["question"])
    attributed = attribute(str(detail["model_text"]), texts, places, question)
    check = check_answer(attributed.answer, texts, places, question, attributed.sentences)
    claims = [c.sentence for c in check.sentences if c.claim]
    if flagged(check) or check.abstained or not claims:
        return []
    start = attributed.answer.find(claims[0].text)
    before, first = attributed.answer[:start], attributed.answer[start:]
    function = name_of(question, "function")
    route = "/billing/" + name_of(question, "module").split(".")[1]
    out = [("own", f"When I call `{route}`, {_lower_first(question)}",
            f"{before}When you call `{route}`, {_lower_first(first)}"),
           ("library", f"In my app, {_lower_first(question)} Does `flask.{function}` do it?",
            f"{before}Yes, `flask.{function}` does it: {_lower_first(first)}"),
           ("own", f"{question}\n```python\n@app.route('{route}')\ndef {function}():\n    ...\n```",
            f"{before}In your `{function}` view, {_lower_first(first)}"),
           ("library", f"{question}\n```python\nfrom flask import {function}\n{function}()\n```",
            f"{before}Yes, `flask.{function}` does it: {_lower_first(first)}")]
    for style in STYLES:
        name = name_of(question, style)
        out.append(("own", f"In my `{name}` {style}, {_lower_first(question)}",
                    f"{before}In your `{name}` {style}, {_lower_first(first)}"))
        library = name if style == "class" else f"flask.{name}"
        out.append(("library", f"In my app, {_lower_first(question)} Does `{library}` do it?",
                    f"{before}Yes, `{library}` does it: {_lower_first(first)}"))
    return out


def _counts(details: list[dict]) -> dict[str, list[int]]:
    """Per kind: [pairs made, pairs the check judged as expected (own kept, library flagged)]."""
    counts = {"own": [0, 0], "library": [0, 0]}
    for detail in details:
        texts, places = _sources(detail)
        for kind, question, answer in pairs_of(detail):
            attributed = attribute(answer, texts, places, question)
            check = check_answer(attributed.answer, texts, places, question, attributed.sentences)
            counts[kind][0] += 1
            counts[kind][1] += flagged(check) == (kind == "library")
    return counts


def _shares(counts: dict[str, list[int]]) -> dict:
    return {kind: {"pairs": n, "agreement": round(right / n, 4) if n else None} for kind, (n, right) in counts.items()}


def agreement(details: list[dict]) -> dict:
    """Per kind: the pairs made and the share the check judged as expected (own kept, library flagged)."""
    return _shares(_counts(details))


def run(args: argparse.Namespace, _settings: object = None) -> int:
    answers = 0
    total = {"own": [0, 0], "library": [0, 0]}
    for path in args.reports:
        try:
            report = json.loads(Path(path).read_text(encoding="utf-8"))
            details = [d for d in report["details"] if isinstance(d, dict)]
            counts = _counts(details)  # a saved answer without its question or sources' text fails here
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            print(f"assistant eval own-names: {path}: not a report of `eval answers --out` ({exc!r})", file=sys.stderr)
            return 2
        answers += len(details)
        for kind, (n, right) in counts.items():
            total[kind][0] += n
            total[kind][1] += right
    print(json.dumps({"reports": [str(p) for p in args.reports], "answers": answers, **_shares(total)}))
    return 0
