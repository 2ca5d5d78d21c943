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
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator

from indexes.location import Location
from indexes.records import NewChunk
from ingest.elements import Element
from ingest.formats.tables import table_parts

CountTokens = Callable[[str], int]
HEADING_SEP = " › "
MAX_HEADING_CHARS = 120

# A sentence ends after . ! ? (with any closing quotes/brackets) before whitespace, or after a CJK
# full stop, exclamation, question mark or semicolon, where no space follows.
_SENTENCE_END = re.compile(r"[.!?][\"'”’»)\]]*(?=\s)|[。！？；][\"'”’」』)）]*")
_WORD = re.compile(r"\S+")


@dataclass
class Piece:
    """The smallest unit packed into chunks: a sentence, a line of code, or a part of either."""

    text: str
    tokens: int
    sep: str = " "  # what joins it to the piece before it inside one chunk
    page: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    heading: bool = False
    code: bool = False
    table: bool = False  # a whole table, or rows of one under its header: never cut, never repeated as overlap
    marks: tuple[tuple[int, int], ...] = ()  # (offset in text, line) where the text's lines are known


Marks = tuple[tuple[int, int], ...]


def element_marks(el: Element, prefix: int = 0) -> Marks:
    """Where an element's characters lie in its file, as (offset, line) marks: the marks it carries
    (text rewritten by a partitioner), else one per line of its text from line_start (text read
    verbatim); () when its lines are unknown. prefix: characters put before its text."""
    if el.marks:
        return ((0, el.marks[0][1]),) + tuple((o + prefix, line) for o, line in el.marks) if prefix else tuple(el.marks)
    if el.line_start is None:
        return ()
    out, offset = [], prefix
    for i, line in enumerate(el.text.split("\n")):
        out.append((0 if i == 0 else offset, el.line_start + i))
        offset += len(line) + 1
    return tuple(out)


def span_lines(marks: Marks, start: int, end: int) -> tuple[int | None, int | None]:
    """The first and last lines of the characters [start, end): the line of the last mark at or
    before start (else the first mark's), to the line of the last mark before end."""
    if not marks:
        return None, None
    i = bisect_right(marks, start, key=_offset)
    j = bisect_left(marks, end, key=_offset)
    first = marks[i - 1][1] if i else marks[0][1]
    return first, max(first, marks[j - 1][1]) if j else first


def sub_marks(marks: Marks, start: int, end: int) -> Marks:
    """The marks of the characters [start, end), shifted to start at 0 (the line at start first)."""
    if not marks:
        return ()
    i = bisect_right(marks, start, key=_offset)
    first = marks[i - 1][1] if i else marks[0][1]
    return ((0, first),) + tuple((o - start, line) for o, line in marks[i : bisect_left(marks, end, key=_offset)])


def _offset(mark: tuple[int, int]) -> int:
    return mark[0]


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


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of text, surrounding whitespace excluded."""
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((start, m.end()))
        start = m.end()
    spans.append((start, len(text)))
    out = []
    for s, e in spans:
        seg = text[s:e]
        if seg.strip():
            lead = len(seg) - len(seg.lstrip())
            out.append((s + lead, s + len(seg.rstrip())))
    return out


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
            section.pieces.extend(_unit_pieces(el, count, unit_budget, "\n\n" if gap else "\n"))
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
            section.pieces.extend(_pieces(heading, count, budget, "\n\n", heading=True))
            previous_kind = "title"
            continue
        sep = "\n" if el.kind == "list" and previous_kind == "list" else "\n\n"
        if el.kind == "table" and (parts := table_parts(el.text)) is not None:
            section.pieces.extend(_table_pieces(el, parts, count, budget, sep, rows_only=anchors == "lines"))
            previous_kind = el.kind
            continue
        section.pieces.extend(_pieces(el, count, budget, sep))
        previous_kind = el.kind
    if section.pieces:
        yield section


def _path(stack: list[tuple[int, str]]) -> str:
    return HEADING_SEP.join(t for _, t in stack)


def _unit_pieces(el: Element, count: CountTokens, budget: int, sep: str) -> list[Piece]:
    """A statement of a code unit as one piece, or line by line when it is longer than a chunk."""
    n = count(el.text)
    if n <= budget:
        return [Piece(el.text, n, sep, el.page, el.line_start, el.line_end, code=True, marks=element_marks(el))]
    return _pieces(el, count, budget, sep)


def _table_pieces(el: Element, parts: tuple[str, list[str]], count: CountTokens, budget: int, sep: str,
                  rows_only: bool = False) -> list[Piece]:
    """A table as one piece, or, longer than budget, as pieces of whole rows each under the table's head
    (caption, header row, `|---|`): as few pieces as fit, their rows shared out evenly. budget is a chunk
    less its overlap, which leaves the section's heading room beside the first piece. A piece's lines run
    from the head's (a Markdown preview of them renders a table), or, with rows_only (a CSV file, cited
    by lines), over its own rows."""
    marks = element_marks(el)
    n = count(el.text)
    if n <= budget:
        ln, le = span_lines(marks, 0, len(el.text))
        return [Piece(el.text, n, sep, el.page, ln, le, table=True, marks=marks)]
    head, rows = parts
    spans, offset = [], len(head) + 1
    for row in rows:
        spans.append((offset, offset + len(row)))
        offset += len(row) + 1
    sizes = [count(r) + 1 for r in rows]
    room = max(budget - count(head) - 1, 1)
    groups = _row_groups(sizes, room)
    even = _row_groups(sizes, max(max(sizes), -(-sum(sizes) // len(groups))))
    if len(even) == len(groups):
        groups = even
    out: list[Piece] = []
    for first, last in groups:
        pieces_spans = [(0, len(head))] + spans[first:last]
        text = "\n".join(el.text[s:e] for s, e in pieces_spans)
        piece_marks = _joined_marks(marks, pieces_spans)
        ln, le = span_lines(piece_marks, len(head) + 1 if rows_only else 0, len(text))
        piece = Piece(text, count(text), sep if not out else "\n\n", el.page, ln, le, table=True, marks=piece_marks)
        # A single row too long for a chunk even under its head: cut between words, the last resort.
        out.extend([piece] if piece.tokens <= budget else _fit(replace(piece, table=False), count, budget))
    return out


def _row_groups(sizes: list[int], room: int) -> list[tuple[int, int]]:
    """[first, last) of consecutive rows whose sizes add up to at most room (a row alone may exceed it)."""
    groups, start, total = [], 0, 0
    for i, size in enumerate(sizes):
        if i > start and total + size > room:
            groups.append((start, i))
            start, total = i, 0
        total += size
    groups.append((start, len(sizes)))
    return groups


def _joined_marks(marks: Marks, spans: list[tuple[int, int]]) -> Marks:
    """The marks of the characters of these spans of a text, laid end to end with a line break between."""
    if not marks:
        return ()
    out: list[tuple[int, int]] = []
    offset = 0
    for start, end in spans:
        out.extend((o + offset, line) for o, line in sub_marks(marks, start, end))
        offset += end - start + 1
    return tuple(out)


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


def _pieces(el: Element, count: CountTokens, budget: int, sep: str, heading: bool = False) -> list[Piece]:
    """An element as pieces: lines for code, sentences otherwise, each no longer than budget."""
    out: list[Piece] = []
    if el.kind == "code":
        marks, offset = element_marks(el), 0
        for i, line in enumerate(el.text.split("\n")):
            end = offset + len(line)
            ln, le = span_lines(marks, offset, max(end, offset + 1))
            base = Piece(line.rstrip(), count(line), sep if i == 0 else "\n", el.page, ln, le, code=True,
                         marks=sub_marks(marks, offset, end))
            out.extend(_fit(base, count, budget))
            offset = end + 1
        return out
    prefix = "- " if el.kind == "list" else ""
    text, marks = prefix + el.text, element_marks(el, len(prefix))
    for i, (s, e) in enumerate(sentence_spans(text)):
        sentence = text[s:e]
        ln, le = span_lines(marks, s, e)
        base = Piece(sentence, count(sentence), sep if i == 0 else " ", el.page, ln, le, heading=heading,
                     marks=sub_marks(marks, s, e))
        out.extend(_fit(base, count, budget))
    return out


def _fit(piece: Piece, count: CountTokens, budget: int) -> list[Piece]:
    """The piece, or its parts when it is longer than budget: between words, else inside a word."""
    if piece.tokens <= budget:
        return [piece]
    parts: list[Piece] = []
    words = [(m.start(), m.end()) for m in _WORD.finditer(piece.text)]
    start, total = None, 0
    for ws, we in words:
        n = count(piece.text[ws:we])
        if start is not None and total + n > budget:
            parts.append(_part(piece, start, prev_end, total, not parts))
            start, total = None, 0
        if n > budget:  # one word longer than a chunk: cut it where the tokens run out
            line, _ = span_lines(piece.marks, ws, we)
            parts.extend(_cut_word(piece, piece.text[ws:we], count, budget, line, first=not parts))
            continue
        if start is None:
            start = ws
        total += n
        prev_end = we
    if start is not None:
        parts.append(_part(piece, start, prev_end, total, not parts))
    return parts


def _part(piece: Piece, start: int, end: int, tokens: int, first: bool) -> Piece:
    """The characters [start, end) of a piece, with their own lines."""
    ln, le = span_lines(piece.marks, start, end)
    return replace(piece, text=piece.text[start:end], tokens=tokens, sep=piece.sep if first else " ", line_start=ln,
                   line_end=le, marks=sub_marks(piece.marks, start, end))


def _cut_word(piece: Piece, word: str, count: CountTokens, budget: int, line: int | None, first: bool) -> list[Piece]:
    parts = []
    while word:
        lo, hi = 1, len(word)
        while lo < hi:  # the longest prefix that fits
            mid = (lo + hi + 1) // 2
            if count(word[:mid]) <= budget:
                lo = mid
            else:
                hi = mid - 1
        head, word = word[:lo], word[lo:]
        sep = (piece.sep if first else " ") if not parts else ""
        parts.append(replace(piece, text=head, tokens=count(head), sep=sep, line_start=line, line_end=line,
                             marks=((0, line),) if line is not None else ()))
    return parts


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
    words = list(_WORD.finditer(last.text))
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
