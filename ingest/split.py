"""Elements to chunks (pure): sized in the embedder's tokens, cut at sentence ends, with their place.

A document is first cut into sections at its headings; a section is packed greedily into chunks of
at most `chunk_tokens` tokens from whole sentences (code: whole lines), and consecutive chunks of one
section share up to `overlap_tokens` tokens of trailing sentences. A sentence longer than a chunk is
cut between words, and only a single word longer than a chunk is cut inside it. Each chunk keeps its
heading path ("A › B"), an anchor to link to, its page and its line range. A chunk never spans two pages
(nor repeats another page's words as overlap), so its page is where all of its text is.

A table (a Markdown table: `ingest.formats.tables`) is one piece when it fits a chunk; a longer one is cut
between rows into pieces that each fit, every piece led by the table's caption and header row. No
overlap is carried out of a table's piece: the next piece repeats the head instead.

Code elements that belong to a unit (a function, a method, a class header: see `ingest.formats.code`) form
a section of their own: a unit is never mixed with another in one chunk, a long one is cut only
between its statements (elements), with no overlap, and its chunks carry the unit's symbol.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Iterator

from indexes.location import Location
from indexes.records import NewChunk
from ingest.elements import Element
from ingest.formats.tables import table_parts
from ingest.pieces import (WORD, CountTokens, Piece, element_marks, pieces_of, span_lines, sub_marks, table_pieces,
                           unit_pieces)

HEADING_SEP = " › "
MAX_HEADING_CHARS = 120


@dataclass
class Section:
    path: str
    anchor: str
    pieces: list[Piece] = field(default_factory=list)
    symbol: str = ""
    code_unit: bool = False  # a unit of code: packed alone, without overlap

    @property
    def body_tokens(self) -> int:
        return sum(p.tokens for p in self.pieces if not p.heading)

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.pieces)


def slugify(text: str) -> str:
    """A GitHub-style heading anchor: lower case, punctuation dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def split(
    elements: list[Element],
    count_tokens: CountTokens,
    *,
    chunk_tokens: int = 200,
    overlap_tokens: int = 32,
    anchors: str = "heading",
) -> list[NewChunk]:
    """Chunks of the elements. anchors: 'heading' | 'lines' | 'page' | 'none' (see Parsed.anchors)."""
    if chunk_tokens < 1:
        raise ValueError("chunk_tokens must be at least 1")
    overlap_tokens = max(0, min(overlap_tokens, chunk_tokens // 2))
    # Parts of an over-long sentence leave room for the overlap that precedes them.
    part_budget = chunk_tokens - overlap_tokens if chunk_tokens - overlap_tokens >= 8 else chunk_tokens
    sections = merge_small(list(_sections(elements, count_tokens, part_budget, chunk_tokens, anchors)), chunk_tokens)
    chunks: list[NewChunk] = []
    for section in sections:
        overlap = 0 if section.code_unit else overlap_tokens
        for pieces, text, n in _pack(section.pieces, count_tokens, chunk_tokens, overlap):
            chunks.append(_chunk(section, pieces, text, n, anchors))
    return chunks


def _sections(elements: list[Element], count: CountTokens, budget: int, unit_budget: int,
              anchors: str = "heading") -> Iterator[Section]:
    stack: list[tuple[int, str]] = []
    seen_slugs: dict[str, int] = {}
    section = Section("", "")
    previous_kind = ""
    unit: int | None = None
    last_line: int | None = None
    for el in elements:
        if el.kind == "code" and el.unit is not None:
            if el.unit != unit or not section.code_unit:
                if section.pieces:
                    yield section
                section = Section(_path(stack), "", symbol=el.symbol, code_unit=True)
                unit, last_line = el.unit, None
            gap = last_line is not None and el.line_start is not None and el.line_start > last_line + 1
            section.pieces.extend(unit_pieces(el, count, unit_budget, "\n\n" if gap else "\n"))
            last_line = el.line_end
            continue
        if section.code_unit:  # prose after code: back to the heading section it was in
            yield section
            section, unit = Section(_path(stack), ""), None
        if el.kind == "title" and el.heading_level is not None:
            if section.pieces:
                yield section
            title = " ".join(el.text.split())
            lines = span_lines(element_marks(el), 0, len(el.text))
            while stack and stack[-1][0] >= el.heading_level:
                stack.pop()
            stack.append((el.heading_level, title[:MAX_HEADING_CHARS]))
            base = slugify(title)
            n = seen_slugs.get(base, 0)
            seen_slugs[base] = n + 1
            anchor = el.anchor or (base if n == 0 else f"{base}-{n}")
            section = Section(_path(stack), anchor)
            heading = Element(title, "title", el.page, None, *lines)
            section.pieces.extend(pieces_of(heading, count, budget, "\n\n", heading=True))
            previous_kind = "title"
            continue
        sep = "\n" if el.kind == "list" and previous_kind == "list" else "\n\n"
        if el.kind == "table" and (parts := table_parts(el.text)) is not None:
            section.pieces.extend(table_pieces(el, parts, count, budget, sep, rows_only=anchors == "lines"))
            previous_kind = el.kind
            continue
        section.pieces.extend(pieces_of(el, count, budget, sep))
        previous_kind = el.kind
    if section.pieces:
        yield section


def _path(stack: list[tuple[int, str]]) -> str:
    return HEADING_SEP.join(t for _, t in stack)


def merge_small(sections: list[Section], budget: int) -> list[Section]:
    """Fold a section that is only a heading (or a line or two) into the section after it.

    A heading-only parent becomes part of its first child's chunk, under the child's path; a tiny
    section joins the next when both fit in one chunk, under its own path.
    """
    small = max(8, budget // 8)
    out: list[Section] = []
    for sec in sections:
        prev = out[-1] if out else None
        if prev is not None and (prev.code_unit or sec.code_unit):
            out.append(sec)
        elif prev is not None and prev.body_tokens == 0:
            out[-1] = Section(sec.path, sec.anchor, prev.pieces + sec.pieces)
        elif prev is not None and prev.body_tokens < small and prev.tokens + sec.tokens <= budget:
            prev.pieces.extend(sec.pieces)
        else:
            out.append(sec)
    return out


def render(pieces: list[Piece]) -> str:
    # Leading spaces are kept: they are the indentation of a first line of code.
    return "".join((p.sep if i else "") + p.text for i, p in enumerate(pieces)).strip("\n").rstrip()


def _pack(pieces: list[Piece], count: CountTokens, budget: int, overlap: int) -> Iterator[tuple[list[Piece], str, int]]:
    """Greedy packing with overlap; each result is (pieces, text, exact token count)."""
    i, carry = 0, []
    while i < len(pieces):
        page = pieces[i].page
        carry = [p for p in carry if p.page == page]
        cur = list(carry)
        total = sum(p.tokens for p in cur)
        j = i
        while j < len(pieces) and (j == i or (total + pieces[j].tokens <= budget and pieces[j].page == page)):
            total += pieces[j].tokens
            j += 1
        cur += pieces[i:j]
        text = render(cur)
        n = count(text)
        # Token counts of parts need not add up exactly (joins inside a word): trust the real count.
        while n > budget and j - i > 1:
            j -= 1
            cur.pop()
            text = render(cur)
            n = count(text)
        if n > budget and carry:
            cur = cur[len(carry) :]
            text = render(cur)
            n = count(text)
        if text:
            yield cur, text, n
        i = j
        carry = _overlap(cur, count, overlap, pieces[i].tokens if i < len(pieces) else 0, budget)


def _overlap(cur: list[Piece], count: CountTokens, overlap: int, next_tokens: int, budget: int) -> list[Piece]:
    """Trailing pieces of a chunk to repeat at the start of the next, within overlap tokens."""
    room = min(overlap, budget - next_tokens)
    if room <= 0 or not cur:
        return []
    tail: list[Piece] = []
    total = 0
    for p in reversed(cur[1:]):  # never the whole chunk again
        if total + p.tokens > room or p.table:
            break
        tail.insert(0, p)
        total += p.tokens
    if tail or cur[-1].code or cur[-1].table:
        return tail
    # The last sentence alone is longer than the overlap: repeat its last words instead.
    last = cur[-1]
    words = list(WORD.finditer(last.text))
    start = None
    for m in reversed(words):
        if count(last.text[m.start() :]) > room:
            break
        start = m.start()
    if start is None:
        return []
    text = last.text[start:]
    line, _ = span_lines(last.marks, start, len(last.text))
    return [replace(last, text=text, tokens=count(text), line_start=line, heading=False,
                    marks=sub_marks(last.marks, start, len(last.text)))]


def _chunk(section: Section, pieces: list[Piece], text: str, n: int, anchors: str) -> NewChunk:
    page = next((p.page for p in pieces if p.page is not None), None)
    starts = [p.line_start for p in pieces if p.line_start is not None]
    ends = [p.line_end for p in pieces if p.line_end is not None]
    line_start, line_end = (min(starts), max(ends)) if starts and ends else (None, None)
    if anchors == "heading":
        anchor = section.anchor
    elif anchors == "lines" and line_start is not None:
        anchor = f"L{line_start}-L{line_end}"
    elif anchors == "page" and page is not None:
        anchor = f"page={page}"
    else:
        anchor = ""
    return NewChunk(
        text=text,
        location=Location(
            heading_path=section.path,
            anchor=anchor,
            page=page,
            line_start=line_start,
            line_end=line_end,
            symbol=section.symbol,
        ),
        n_tokens=n,
    )
