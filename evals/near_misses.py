"""Near misses made by a method: questions in words the documents use, about a fact they do not state.

Parallel pages are pages of one folder that share at least MIN_SHARED headings (an office, a product, a
release per page, each page answering the same questions about its own subject). A heading that one page
has and its parallel page lacks, asked about that page's subject, is a near miss: "Where are the showers in
Chicago?" from the San Francisco page's "Where are the...?" / "Showers", when the Chicago page has no such
heading and holds at most a minority of the heading's words. Every word of the question is in the documents
(the heading's on one page, the subject's title on the other); the fact is stated for another subject only.
A heading that names its own page's subject ("Who works out of the Chicago office?"), or a name the other
page never uses ("From O'Hare"), is left out: asked of another page it would name two subjects. So is a
heading that names a topic only ("Assets"): what it asks is not said.

The questions are unanswerable by construction; each carries the split of `eval answers` (the SHA-256 rule)
so that a rule is shaped on the tune half and reported on the other.
"""

from __future__ import annotations

import hashlib
import re
from itertools import permutations
from pathlib import Path

from assistant.answers.text_units import key_units, units
from evals.derive_questions import Derived
from evals.derive_sections import plain, unfenced

MIN_SHARED = 3  # headings two pages share to be parallel
MAX_HELD = 0.5  # the share of a heading's words its parallel page may hold and still lack the fact
HEADING = re.compile(r"^(#{2,3})\s+(.*?)\s*#*\s*$")
TITLE = re.compile(r"^title:\s*['\"]?(.*?)['\"]?\s*$", re.MULTILINE)
STEM = re.compile(r"^(.*?)\s*(?:\.\.\.|…)\s*\??$")  # "How do I...?", "Where are the..."


def split_of(question: str) -> str:
    """The half of `eval answers` (its module docstring's rule: the first byte of the SHA-256 even is tune),
    written here again: eval_answers reaches the derive commands, which reach this module."""
    return "tune" if hashlib.sha256(question.encode("utf-8")).digest()[0] % 2 == 0 else "report"


def page_headings(text: str) -> tuple[str, list[tuple[str, str]]]:
    """A Markdown page's title (front matter `title:`, else its first `#` heading) and its `##`/`###` headings,
    each with the `##` heading above it ('' for a `##` heading itself); fenced code left out."""
    title = ""
    if text.startswith("---") and (end := text.find("\n---", 3)) != -1:
        if m := TITLE.search(text[3:end]):
            title = plain(m.group(1))
        text = text[end + 4:]
    out: list[tuple[str, str]] = []
    parent = ""
    for raw in unfenced(text.splitlines()):
        if not title and raw.startswith("# "):
            title = plain(raw[2:])
        if m := HEADING.match(raw):
            heading = plain(m.group(2))
            if len(m.group(1)) == 2:
                parent = heading
                out.append(("", heading))
            else:
                out.append((parent, heading))
    return title, [(p, h) for p, h in out if h]


def _key(heading: str) -> str:
    return " ".join(heading.casefold().rstrip("?").split())


def asked(parent: str, heading: str, subject: str) -> str | None:
    """The heading as a question about subject: under a stem ("How do I...?") the stem and the heading; a
    heading that asks already, as it asks; None for a heading that names a topic only ("Assets", "General"):
    what it asks is not said."""
    lower = heading[0].lower() + heading[1:] if heading[1:2].islower() else heading
    lower = lower.rstrip("?").rstrip()
    if m := STEM.match(parent):
        return f"{m.group(1)} {lower} in {subject}?"
    if heading.rstrip().endswith("?"):
        return f"{heading.rstrip().rstrip('?').rstrip()} in {subject}?"
    return None


def near_miss_questions(root: Path, set_name: str = "near-misses") -> list[Derived]:
    """The near misses of the Markdown pages under root (sources relative to it: the page asked about)."""
    root = root.resolve()
    pages: dict[str, tuple[str, list[tuple[str, str]], set[str]]] = {}
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root)
        if any(p.startswith(".") for p in rel.parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        title, headings = page_headings(text)
        if title and headings:
            pages[rel.as_posix()] = (title, headings, set(units(text)))
    out: list[Derived] = []
    seen: set[str] = set()
    for a, b in permutations(sorted(pages), 2):
        if Path(a).parent != Path(b).parent:
            continue
        (title_a, heads_a, _), (title_b, heads_b, words_b) = pages[a], pages[b]
        keys_b = {_key(h) for _, h in heads_b}
        if len({_key(h) for _, h in heads_a} & keys_b) < MIN_SHARED:
            continue
        own_a, own_b = set(units(title_a)), set(units(title_b))
        for parent, heading in heads_a:
            topic = set(units(heading)) - own_b
            if not topic or _key(heading) in keys_b or STEM.match(heading) or topic & own_a:
                continue
            if len(topic & words_b) / len(topic) > MAX_HELD or key_units(heading) - words_b - own_b:
                continue  # the page says it, or the heading names what only its own page speaks of ("From O'Hare")
            question = asked(parent, heading, title_b)
            if question is None or question in seen:
                continue
            seen.add(question)
            out.append(Derived(question, b, split_of(question), set_name, heading=heading, unanswerable=True))
    return out
