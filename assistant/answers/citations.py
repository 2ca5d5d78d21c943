"""Citation markers in answers: "[1]", "[2, 3]", "[1][3]".

Models sometimes cite sources that do not exist ("[7]" with three sources). The streaming filter drops
such numbers as the text arrives, so every [n] a user sees names a source that was returned.
"""

from __future__ import annotations

import re
from typing import Callable, Generator

MARKER = re.compile(r"\[\s*(\d{1,6}(?:\s*,\s*\d{1,6})*)\s*\]")
# A marker that may still be completed by the next piece: "[", "[1", "[1, 2" at the very end.
PARTIAL = re.compile(r"\[[\d,\s]*$")
MAX_PARTIAL = 24  # longer "[..." runs are not citations; emit them instead of holding them back


def _numbers(marker_body: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", marker_body)]


def cited_numbers(text: str) -> list[int]:
    """Every number cited in text, in order of first appearance, without repeats."""
    seen: dict[int, None] = {}
    for m in MARKER.finditer(text):
        for n in _numbers(m.group(1)):
            seen.setdefault(n, None)
    return list(seen)


class Marks:
    """What the filter keeps between pieces: the tail held back, and the valid numbers cited so far."""

    def __init__(self, n_sources: int) -> None:
        self.n_sources = n_sources
        self.cited: list[int] = []
        self.held = ""

    def clean(self, text: str) -> str:
        return MARKER.sub(self.replace, text) if "[" in text else text

    def replace(self, m: re.Match[str]) -> str:
        keep: list[int] = []
        for n in _numbers(m.group(1)):
            if 1 <= n <= self.n_sources and n not in keep:
                keep.append(n)
                if n not in self.cited:
                    self.cited.append(n)
        return "[" + ", ".join(map(str, keep)) + "]" if keep else ""


def showing(marks: Marks) -> Generator[str, str, None]:
    """The filter's one loop: sent a piece, it gives the text to show. It holds the marks only, not the
    filter, so that a finished answer's filter is freed at once (no cycle for the collector)."""
    shown = ""
    while True:
        text = marks.held + (yield shown)
        m = PARTIAL.search(text)
        if m and len(text) - m.start() <= MAX_PARTIAL:
            marks.held, text = text[m.start() :], text[: m.start()]
        else:
            marks.held = ""
        shown = marks.clean(text) if "[" in text else text


class CitationFilter:
    """Fed the answer piece by piece; returns the text to show, with citations of unknown sources removed.

    Only a possibly incomplete marker at the end of the text seen so far ("... [1") is held back until
    the next piece (or `flush`) decides it. `cited` lists the valid numbers seen, in order. The pieces pass
    through one generator (`feeder()` gives its `send`): an answer's stream resumes it once a piece rather
    than making a call for each.
    """

    def __init__(self, n_sources: int) -> None:
        self.n_sources = n_sources
        self._marks = Marks(n_sources)
        self.cited = self._marks.cited
        self._shown = showing(self._marks)
        next(self._shown)

    def feeder(self) -> Callable[[str], str]:
        """`feed`, as the generator's own `send`."""
        return self._shown.send

    def feed(self, piece: str) -> str:
        return self._shown.send(piece)

    def flush(self) -> str:
        """The held-back tail at the end of the answer (an unfinished marker is plain text)."""
        text, self._marks.held = self._marks.held, ""
        return self._marks.clean(text)
