"""Elements of a marked-up text file (Markdown, reStructuredText, HTML) mapped back to its lines.

The partitioners rewrite what they read (markup dropped, wrapped lines joined, entities decoded), so
their elements come without line numbers. Their words still appear in the source in the same order:
each element's words are matched, in order, against the words of the file after the previous
element's, skipping the markup words the element does not have (link targets, tag names, list
numbers). Every matched word marks the line it lies on, so a sentence of an element can be given its
own lines when it is split. An element whose words are not found keeps no lines, and the next one is
looked for from the same place.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

from ingest.elements import Element

# Han, kana and hangul are compared character by character: markup may split or join their runs.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])[^\W_])+")
# In HTML, tags, comments, entities, scripts, styles and the <title> are not content: blanked out, their
# line breaks kept.
_HTML_MARKUP = re.compile(r"<!--.*?-->|<(script|style|title)\b.*?</\1\s*>|<[^>]*>|&#?\w+;", re.S | re.I)
_ALT = re.compile(r"""^<img\b[^>]*?\balt\s*=\s*["']([^"']*)""", re.I)

GAP = 24  # source words skipped at most between two matched words of an element
SHORT = 3  # an element of fewer words must match all of them...
SHORT_REACH = 2000  # ...within this many source words of where the previous element ended
TRIES = 64  # places tried for an element's first word
MATCHED = 0.5  # the share of a longer element's words that must be found


def words(text: str) -> list[tuple[str, int]]:
    """(word, offset) of each word of text, lower-cased."""
    return [(m.group().lower(), m.start()) for m in _WORD.finditer(text)]


def blank_html_markup(text: str) -> str:
    """HTML with its markup replaced by spaces, line breaks kept, so offsets and lines stay put. An
    image's alt text stays: the partitioner makes an element of it."""

    def blank(m: re.Match) -> str:
        tag = m.group()
        out = re.sub(r"[^\n]", " ", tag)
        if alt := _ALT.search(tag):
            out = out[: alt.start(1)] + alt.group(1) + out[alt.end(1) :]
        return out

    return _HTML_MARKUP.sub(blank, text)


class SourceLines:
    """The words of a source file with their lines, and a cursor just after the last element found."""

    def __init__(self, text: str, *, first_line: int = 1, html: bool = False) -> None:
        if html:
            text = blank_html_markup(text)
        newlines = [i for i, ch in enumerate(text) if ch == "\n"]
        found = words(text)
        self.words = [w for w, _ in found]
        self.lines = [bisect_right(newlines, offset) + first_line for _, offset in found]
        self.where: dict[str, list[int]] = {}
        for i, w in enumerate(self.words):
            self.where.setdefault(w, []).append(i)
        self.cursor = 0

    def _next(self, word: str, start: int, stop: int) -> int | None:
        """The first position of word in [start, stop), if any."""
        places = self.where.get(word)
        if not places:
            return None
        k = bisect_left(places, start)
        return places[k] if k < len(places) and places[k] < stop else None

    def _run(self, wanted: list[tuple[str, int]], at: int) -> tuple[list[tuple[int, int]], int]:
        """Marks (offset in the element, line) of the element's words matched in order from position at,
        and the position after the last one matched."""
        marks = [(wanted[0][1], self.lines[at])]
        pos = at + 1
        for word, offset in wanted[1:]:
            found = self._next(word, pos, pos + GAP)
            if found is not None:
                if len(marks) == 1:  # the first word again closer to the second: a heading after a menu
                    places = self.where[wanted[0][0]]
                    at = places[bisect_left(places, found) - 1]
                    marks[0] = (wanted[0][1], self.lines[at])
                marks.append((offset, self.lines[found]))
                pos = found + 1
        return marks, pos

    def locate(self, text: str) -> list[tuple[int, int]] | None:
        """Marks of text's words found after the cursor (which moves past them), or None when it is not there."""
        wanted = words(text)
        if not wanted:
            return None
        short = len(wanted) < SHORT
        reach = self.cursor + SHORT_REACH if short else len(self.words)
        for first in range(min(SHORT, len(wanted)) if not short else 1):
            # the element's first words may be its own (a list number, a label the converter added)
            rest = wanted[first:]
            need = len(rest) if short else max(1, int(len(rest) * MATCHED + 0.5))
            at, best, stop = self.cursor, None, reach
            for _ in range(TRIES):
                found = self._next(rest[0][0], at, stop)
                if found is None:
                    break
                marks, end = self._run(rest, found)
                if len(marks) >= need and (best is None or len(marks) > len(best[0])):
                    # a fuller match a little further on is the real place (a few of its words also
                    # appear in a code comment or a caption before it)
                    best, stop = (marks, end), min(stop, found + SHORT_REACH)
                    if len(marks) == len(rest):
                        break
                at = found + 1
            if best is not None:
                self.cursor = best[1]
                return best[0]
        return None


def add_lines(elements: list[Element], source: SourceLines) -> None:
    """Give each element the lines its words lie on in the source, in order (see the module's docstring)."""
    for el in elements:
        marks = source.locate(el.text)
        if marks:
            el.marks = marks
            el.line_start = min(line for _, line in marks)
            el.line_end = max(line for _, line in marks)
