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


class CitationFilter:
    """Fed the answer piece by piece; returns the text to show, with citations of unknown sources removed.

    Only a possibly incomplete marker at the end of the text seen so far ("... [1") is held back until
    the next piece (or `flush`) decides it. `cited` lists the valid numbers seen, in order. The pieces pass
    through one generator (`feeder()` gives its `send`): an answer's stream resumes it once a piece rather
    than making a call for each.
    """

    def __init__(self, n_sources: int) -> None:
        self.n_sources = n_sources
        self.cited: list[int] = []
        self._held = ""
        self._shown = self._showing()
        next(self._shown)

    def _showing(self) -> Generator[str, str, None]:
        shown = ""
        while True:
            text = self._held + (yield shown)
            m = PARTIAL.search(text)
            if m and len(text) - m.start() <= MAX_PARTIAL:
                self._held, text = text[m.start() :], text[: m.start()]
            else:
                self._held = ""
            shown = MARKER.sub(self._replace, text) if "[" in text else text

    def feeder(self) -> Callable[[str], str]:
        """`feed`, as the generator's own `send`."""
        return self._shown.send

    def feed(self, piece: str) -> str:
        return self._shown.send(piece)

    def flush(self) -> str:
        """The held-back tail at the end of the answer (an unfinished marker is plain text)."""
        text, self._held = self._held, ""
        return self._clean(text)

    def _clean(self, text: str) -> str:
        return MARKER.sub(self._replace, text) if "[" in text else text

    def _replace(self, m: re.Match[str]) -> str:
        keep: list[int] = []
        for n in _numbers(m.group(1)):
            if 1 <= n <= self.n_sources and n not in keep:
                keep.append(n)
                if n not in self.cited:
                    self.cited.append(n)
        return "[" + ", ".join(map(str, keep)) + "]" if keep else ""
