"""Questions derived from the headed sections of Markdown documents (evals/derive_questions.py says how
the sets are used): every `##`/`###` section gives up to `per_section` questions from its most distinctive
sentences (numbers, Latin terms, words rare in the corpus), the heading's words left out; Chinese and mixed
text is cut at function characters, since no word segmenter is bundled. Split by document
(`document_splits`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from evals.derive_questions import MIN_WORDS, Derived, unique_questions

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_LATIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:+\-/%]*[A-Za-z0-9%]|[A-Za-z0-9]")
_NUMBER = re.compile(r"\d")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ZH_SENTENCE = re.compile(r"(?<=[。！？；!?;])")
_EN_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[A-Z0-9\"'(])")
EN_STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it its "
    "may might more most must no not of on or our out over should so such than that the their them then there "
    "these they this those to too up us use used using very was we were what when where which while who will "
    "with would you your also any all each other only own same some about after before between both during "
    "further here just once under until why am being having doing one two get got make made need needs".split()
)
ZH_STOP = frozenset("我们 你们 他们 这个 那个 一个 如果 因为 所以 但是 可以 需要 已经 没有 就是 还是 以及 或者 进行 使用 时候 之后 之前 其中 这些 那些 为了 通过 然后".split())


@dataclass(frozen=True)
class Section:
    """A headed section of a Markdown document: its heading and its body as plain text lines."""

    source: str
    heading: str
    lines: tuple[str, ...]


def plain(line: str) -> str:
    """A Markdown line as text: links, images, templating, HTML, emphasis and list marks removed."""
    line = re.sub(r"\{%.*?%\}|\{\{.*?\}\}|<[^>]+>", " ", line)
    line = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", line)
    line = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", line)
    line = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+|^\s*>\s?", "", line)
    line = line.replace("**", "").replace("__", "").replace("`", "").replace("|", " ")
    return " ".join(line.split())


def unfenced(lines: Iterable[str]) -> Iterator[str]:
    """The lines outside fenced code blocks (``` or ~~~), the fences left out too."""
    fenced = False
    for raw in lines:
        if raw.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced:
            yield raw


def markdown_sections(text: str, source: str) -> list[Section]:
    """The sections under `##` and `###` headings (front matter and fenced code left out)."""
    if text.startswith("---"):
        end = text.find("\n---", 3)
        text = text[end + 4:] if end != -1 else text
    out: list[Section] = []
    heading, body = "", []
    for raw in unfenced(text.splitlines()):
        m = _HEADING.match(raw)
        if m:
            if heading and body:
                out.append(Section(source, heading, tuple(body)))
            heading, body = (plain(m.group(2)) if len(m.group(1)) in (2, 3) else ""), []
            continue
        line = plain(raw)
        if heading and line and not re.fullmatch(r"[-:= ]+", line):
            body.append(line)
    if heading and body:
        out.append(Section(source, heading, tuple(body)))
    return out


def sentences(lines: tuple[str, ...]) -> list[str]:
    """A section's sentences: each line cut at sentence ends (Chinese and English punctuation)."""
    out = []
    for line in lines:
        splitter = _ZH_SENTENCE if _CJK_RUN.search(line) else _EN_SENTENCE
        out.extend(s.strip() for s in splitter.split(line) if s.strip())
    return out


def is_chinese(text: str) -> bool:
    return bool(_CJK_RUN.search(text))


def cjk_terms(text: str) -> list[str]:
    """Character bigrams of the Chinese runs of text (the unit of rarity without a word segmenter)."""
    return [run[i:i + 2] for run in _CJK_RUN.findall(text) for i in range(len(run) - 1)]


def latin_terms(text: str) -> list[str]:
    return [t for t in _LATIN.findall(text)]


class Rarity:
    """Document frequencies over a corpus of sections: which terms are distinctive."""

    def __init__(self, sections: list[Section]):
        self.docs = len({s.source for s in sections}) or 1
        df: Counter[str] = Counter()
        per_doc: dict[str, set[str]] = {}
        for s in sections:
            terms = per_doc.setdefault(s.source, set())
            for line in (s.heading, *s.lines):
                terms.update(t.lower() for t in latin_terms(line))
                terms.update(cjk_terms(line))
        for terms in per_doc.values():
            df.update(terms)
        self.df = df
        self.rare_df = max(2, math.ceil(self.docs * 0.1))

    def rare(self, term: str) -> bool:
        return self.df.get(term.lower(), 0) <= self.rare_df


# One-character function words: where a Chinese run is cut into words without a segmenter.
ZH_BREAKS = frozenset("的了是在和与把被要会就都也而或及对从到为将给让用按这那每个不有没还再又才只先等一并且其之以于所可请需已仍即该此各如若但则因向跟比由至很更最均共约我你他它们着过吗呢吧啊")


def zh_words(run: str) -> list[tuple[int, str]]:
    """A run of Chinese characters cut at function characters: (offset, piece) of 2 characters or more."""
    out, start = [], 0
    for i, ch in enumerate(run + "的"):
        if ch in ZH_BREAKS:
            if i - start >= 2:
                out.append((start, run[start:i]))
            start = i + 1
    return out


def _zh_units(sentence: str, rarity: Rarity, heading: str, limit: int = 6) -> list[str]:
    """The distinctive units of a Chinese or mixed sentence, in order: Latin terms and numbers, and
    the pieces between function characters that hold a bigram rare in the corpus (cut to 4
    characters), none sharing a bigram with the heading. Past limit, Latin terms and numbers first,
    then the rarest pieces."""
    head_latin = {t.lower() for t in latin_terms(heading)}
    head_bigrams = set(cjk_terms(heading))
    units: list[tuple[int, int, str]] = []  # (priority, offset, unit)
    for m in _LATIN.finditer(sentence):
        t = m.group(0)
        if t.lower() not in head_latin and (len(t) > 1 or _NUMBER.search(t)):
            units.append((0, m.start(), t))
    for m in _CJK_RUN.finditer(sentence):
        for off, word in zh_words(m.group(0)):
            grams = cjk_terms(word)
            if word in ZH_STOP or head_bigrams.intersection(grams):
                continue
            rarest = min(rarity.df.get(g, 0) for g in grams)
            if rarest <= rarity.rare_df:
                units.append((1 + rarest, m.start() + off, word[:4]))
    kept = sorted(units)[:limit]
    return [u for _, _, u in sorted(kept, key=lambda u: u[1])]


def _en_units(sentence: str, rarity: Rarity, heading: str) -> tuple[list[str], int]:
    """The content words of an English sentence in order (stop words and heading words left out),
    and how many of them are distinctive (rare in the corpus, numbers)."""
    head = {w.lower() for w in latin_terms(heading)}
    sentence = re.sub(r"(\w)['’]\w+", r"\1", sentence)  # hasn't -> hasn, we're -> we
    words = [w for w in latin_terms(sentence)
             if len(w) > 2 and w.lower() not in EN_STOPWORDS and w.lower() not in head or _is_number(w)]
    distinctive = sum(1 for w in words if _NUMBER.search(w) or rarity.rare(w))
    return words, distinctive


def _is_number(term: str) -> bool:
    return bool(re.fullmatch(r"[\d.,:%/\-]*\d[\d.,:%/\-]*", term))


def _zh_question(units: list[str]) -> str:
    """A question around the units: the last number is the value asked for and is left out."""
    numbers = [i for i, u in enumerate(units) if _is_number(u)]
    ask = "具体是怎么做的？"
    if numbers and len(units) - 1 >= 2:
        units = units[:numbers[-1]] + units[numbers[-1] + 1:]
        ask = "对应的数值是多少？"
    elif any(re.search(r"[A-Za-z]", u) for u in units):
        ask = "用的是哪个？"
    return f"关于{'、'.join(units[:6])}，{ask}"


def _en_question(words: list[str]) -> str:
    numbers = [i for i, w in enumerate(words) if _is_number(w)]
    lead = "Which page covers"
    if numbers and len(words) > 3:
        words = words[:numbers[-1]] + words[numbers[-1] + 1:]
        lead = "How many or how much, per the page covering"
    return f"{lead}: {' '.join(words[:12])}?"


def document_splits(sources: list[str], tune_every: int = 3) -> dict[str, str]:
    """Each document's split: the documents ordered by the sha256 of their path, every tune_every-th
    one (the first, the fourth, ...) `tune` and the others `report`. A balanced, deterministic share
    that does not depend on file order or contents."""
    ranked = sorted(set(sources), key=lambda s: hashlib.sha256(s.encode()).hexdigest())
    return {s: "tune" if i % tune_every == 0 else "report" for i, s in enumerate(ranked)}


def section_questions(sections: list[Section], *, per_section: int = 2, per_document: int = 0,
                      set_name: str = "sections") -> list[Derived]:
    """Up to per_section questions from each section's most distinctive sentences (at most
    per_document from one document when it is above 0). A Chinese or mixed sentence needs 2
    distinctive units; an English one 6 content words of which 2 distinctive."""
    rarity = Rarity(sections)
    splits = document_splits([s.source for s in sections])
    rows: list[Derived] = []
    taken: Counter[str] = Counter()
    for sec in sections:
        scored: list[tuple[int, int, str]] = []
        for pos, sent in enumerate(sentences(sec.lines)):
            if is_chinese(sent):
                units = _zh_units(sent, rarity, sec.heading)
                if len(units) >= 2 and len(sent) >= 8:
                    scored.append((-len(units), pos, _zh_question(units)))
            else:
                words, distinctive = _en_units(sent, rarity, sec.heading)
                if len(words) >= MIN_WORDS and distinctive >= 2:
                    scored.append((-distinctive, pos, _en_question(words)))
        for _, _, q in sorted(scored)[:per_section]:
            if per_document and taken[sec.source] >= per_document:
                break
            taken[sec.source] += 1
            rows.append(Derived(q, sec.source, splits[sec.source], set_name, heading=sec.heading))
    return unique_questions(rows)


def read_sections(roots: list[Path], pattern: str = "*.md") -> list[Section]:
    """The sections of the Markdown files under each root, sources relative to their root."""
    out: list[Section] = []
    for root in roots:
        root = root.resolve()
        for path in sorted(root.rglob(pattern)):
            rel = path.relative_to(root)
            if any(p.startswith(".") for p in rel.parts) or path.name.upper() in ("README.MD", "LICENSE.MD"):
                continue
            out.extend(markdown_sections(path.read_text(encoding="utf-8", errors="replace"), rel.as_posix()))
    return out
