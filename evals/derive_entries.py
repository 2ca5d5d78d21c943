"""Questions about described values: the entries of reference pages (`.. data:: TRUSTED_HOSTS`,
`.. py:data::`, `.. attribute::`, `.. confval::`, `.. envvar::`), asked the way a developer asks who
knows what they want but not the key's name.

Each entry with a prose body gives at most one question: its most distinctive sentence (the most words
rare in the documentation) with the entry's name and the name's words taken out (`TRUSTED_HOSTS` ->
trusted, hosts). A sentence that opens with a verb ("Validate …", "Use …") is asked as "How do I
validate …?"; any other as the behaviour questions are ("What happens if …?", "How does it work that
…?"). The answer is the page that holds the entry, or any other file of its package that states the
same sentence (a docstring it was copied from). Split by package, as the other derived sets.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from pathlib import Path

from evals.derive_docs import _SENTENCE_END, _package_trees, _split_of, behaviour_question, inline_text, \
    rst_pages, rst_sections, without_words
from evals.derive_questions import _IMPERATIVE, DEFAULT_TUNE_PACKAGES, Derived, unique_questions
from evals.derive_sections import EN_STOPWORDS, Rarity, Section, latin_terms

ENTRY = re.compile(r"^(?P<indent>[ \t]*)\.\.[ \t]+(?:py:|std:)?(?P<kind>data|attribute|property|confval|envvar)::"
                   r"[ \t]*(?P<name>\S.*?)\s*$")
_OPTION = re.compile(r"^:[\w-]+:")  # an entry's options (`:type: str`, `:value: None`), not its prose
SKIPPED_PAGES = {"changes.rst", "license.rst", "contributing.rst", "index.rst"}
MIN_ENTRY_WORDS = 4  # content words of the chosen sentence besides the name's


def rst_entries(text: str, source: str) -> list[Section]:
    """Every described value of a reST document as a section headed by its name, holding the
    paragraphs of prose of its body (nested directives, code and options left out)."""
    lines = text.splitlines()
    out: list[Section] = []
    for i, line in enumerate(lines):
        m = ENTRY.match(line)
        if not m:
            continue
        indent = len(m["indent"].expandtabs())
        body: list[str] = []
        for nxt in lines[i + 1:]:
            if nxt.strip() and len(nxt.expandtabs()) - len(nxt.expandtabs().lstrip()) <= indent:
                break
            body.append(nxt)
        prose = [b for b in textwrap.dedent("\n".join(body)).splitlines() if not _OPTION.match(b)]
        name = m["name"].split("(", 1)[0].strip()
        heading = f"{name}\n{'=' * len(name)}\n\n"
        out.extend(Section(source, name, s.lines) for s in rst_sections(heading + "\n".join(prose) + "\n", source)[:1])
    return out


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", inline_text(text).lower()))


def package_texts(root: Path) -> dict[str, list[tuple[str, str]]]:
    """package -> (source, its words in one line) for every .rst and .py file of the package's tree."""
    out: dict[str, list[tuple[str, str]]] = {}
    for package, tree in _package_trees(root):
        out[package] = [(p.relative_to(root).as_posix(), _words(p.read_text(encoding="utf-8", errors="replace")))
                        for p in sorted(tree.rglob("*")) if p.suffix in (".rst", ".py") and p.is_file()]
    return out


def package_entries(root: Path) -> list[tuple[str, Section]]:
    """(package, entry) for every described value of every package's docs/**/*.rst under root, sources
    relative to root; change logs, licences and indexes left out."""
    return [(package, e) for package, source, text in rst_pages(root, SKIPPED_PAGES)
            for e in rst_entries(text, source)]


def name_words(name: str) -> set[str]:
    """The words that give an entry's name away: the name, its last dotted part and that part's words
    (`Environment.sandboxed` -> sandboxed; `TRUSTED_HOSTS` -> trusted_hosts, trusted, hosts)."""
    last = name.rsplit(".", 1)[-1]
    words = {name.lower(), last.lower()}
    words.update(w.lower() for w in re.split(r"_+|(?<=[a-z0-9])(?=[A-Z])", last) if len(w) > 1)
    return words


def entry_question(sentence: str) -> str:
    """The claim as a question: "How do I …?" where the sentence opens with a verb, else as a behaviour
    question."""
    s = sentence.rstrip(" .:;!")
    first, _, rest = s.partition(" ")
    if first.lower() in _IMPERATIVE | {"inform", "control", "enable", "disable"} and rest:
        return f"How do I {first.lower()} {rest}?"
    return behaviour_question(sentence)


def entry_questions(root: Path, tune: tuple[str, ...] = DEFAULT_TUNE_PACKAGES) -> list[Derived]:
    """At most one question per described value with a prose body: its most distinctive sentence (at
    least MIN_ENTRY_WORDS content words besides the name's, one of them rare in the docs), the name's
    words removed. A sentence found in two entries is left out."""
    entries = package_entries(root)
    texts = package_texts(root)
    rarity = Rarity([e for _, e in entries])
    seen = Counter(sent.lower() for _, e in entries for line in e.lines for sent in _SENTENCE_END.split(line))
    rows: list[Derived] = []
    for package, entry in entries:
        drop = name_words(entry.heading)
        best: tuple[int, int, str] | None = None
        for pos, sent in enumerate(s for line in entry.lines for s in _SENTENCE_END.split(line)):
            if seen[sent.lower()] > 1 or not sent.rstrip().endswith("."):
                continue
            words = [w for w in latin_terms(sent) if len(w) > 2 and w.lower() not in EN_STOPWORDS | drop]
            distinctive = sum(1 for w in words if rarity.rare(w))
            if len(words) >= MIN_ENTRY_WORDS and distinctive >= 1 and (best is None or (-distinctive, pos) < best[:2]):
                best = (-distinctive, pos, sent)
        if best is not None:
            q = entry_question(without_words(best[2], drop))
            said = _words(best[2])
            also = [src for src, text in texts.get(package, []) if src != entry.source and said in text]
            rows.append(Derived(q, "|".join([entry.source, *also]), _split_of(package, tune), "entries", heading=entry.heading,
                                package=package))
    return unique_questions(rows)
