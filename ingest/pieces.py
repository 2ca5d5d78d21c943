"""An element cut into pieces, the smallest units packed into chunks: sentences, lines of code, a table's
rows under its head, and, the last resort, parts of a sentence between words or of a word. Each piece
keeps where its characters lie in the file (marks), so a chunk knows its lines.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace
from typing import Callable

from ingest.elements import Element

CountTokens = Callable[[str], int]

# A sentence ends after . ! ? (with any closing quotes/brackets) before whitespace, or after a CJK
# full stop, exclamation, question mark or semicolon, where no space follows.
SENTENCE_END = re.compile(r"[.!?][\"'”’»)\]]*(?=\s)|[。！？；][\"'”’」』)）]*")
WORD = re.compile(r"\S+")


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


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of text, surrounding whitespace excluded."""
    spans, start = [], 0
    for m in SENTENCE_END.finditer(text):
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


def unit_pieces(el: Element, count: CountTokens, budget: int, sep: str) -> list[Piece]:
    """A statement of a code unit as one piece, or line by line when it is longer than a chunk."""
    n = count(el.text)
    if n <= budget:
        return [Piece(el.text, n, sep, el.page, el.line_start, el.line_end, code=True, marks=element_marks(el))]
    return pieces_of(el, count, budget, sep)


def table_pieces(el: Element, parts: tuple[str, list[str]], count: CountTokens, budget: int, sep: str,
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
        out.extend([piece] if piece.tokens <= budget else fit(replace(piece, table=False), count, budget))
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


def pieces_of(el: Element, count: CountTokens, budget: int, sep: str, heading: bool = False) -> list[Piece]:
    """An element as pieces: lines for code, sentences otherwise, each no longer than budget."""
    out: list[Piece] = []
    if el.kind == "code":
        marks, offset = element_marks(el), 0
        for i, line in enumerate(el.text.split("\n")):
            end = offset + len(line)
            ln, le = span_lines(marks, offset, max(end, offset + 1))
            base = Piece(line.rstrip(), count(line), sep if i == 0 else "\n", el.page, ln, le, code=True,
                         marks=sub_marks(marks, offset, end))
            out.extend(fit(base, count, budget))
            offset = end + 1
        return out
    prefix = "- " if el.kind == "list" else ""
    text, marks = prefix + el.text, element_marks(el, len(prefix))
    for i, (s, e) in enumerate(sentence_spans(text)):
        sentence = text[s:e]
        ln, le = span_lines(marks, s, e)
        base = Piece(sentence, count(sentence), sep if i == 0 else " ", el.page, ln, le, heading=heading,
                     marks=sub_marks(marks, s, e))
        out.extend(fit(base, count, budget))
    return out


def fit(piece: Piece, count: CountTokens, budget: int) -> list[Piece]:
    """The piece, or its parts when it is longer than budget: between words, else inside a word."""
    if piece.tokens <= budget:
        return [piece]
    parts: list[Piece] = []
    words = [(m.start(), m.end()) for m in WORD.finditer(piece.text)]
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
