"""Stop an answer that starts looping on a line.

Small base models (the packaged Gemma-3-270M) fall into loops: the same line, again and again, until
max_tokens. A repeat penalty makes that rarer; this guard makes it end. It watches the streamed text
line by line and, when a line would appear more often than allowed, ends the answer before it. Text
is only held back while the line being written could still become such a repeat, so streaming
otherwise goes on piece by piece.
"""

from __future__ import annotations

import re
from collections import Counter

_SPACE = re.compile(r"\s+")
# A list item's marker ("1.", "b)", "-", "*"): "3. Click the name" repeats "2. Click the name".
_MARKER = re.compile(r"^(?:\d{1,3}[.)]|[a-z][.)]|[-*+•])\s+")


def line_key(line: str) -> str:
    """The form lines are compared in: list marker dropped, whitespace collapsed, case folded."""
    return _MARKER.sub("", _SPACE.sub(" ", line).strip().casefold())


def repeated_lines(text: str, limit: int) -> dict[str, int]:
    """The non-empty lines of text that occur more than `limit` times, with their counts."""
    counts = Counter(k for k in map(line_key, text.splitlines()) if k)
    return {k: n for k, n in counts.items() if n > limit}


class LineRepeatGuard:
    """Feed text pieces in; get back what may be shown. `stopped` turns true at the first line that
    would exceed `max_repeats` occurrences; that line is never released."""

    def __init__(self, max_repeats: int) -> None:
        self.max_repeats = max_repeats
        self.counts: Counter[str] = Counter()
        self.stopped = False
        self._line = ""  # the current, unfinished line (already released up to `_released` chars)
        self._released = 0

    def _exhausted(self) -> set[str]:
        return {k for k, n in self.counts.items() if n >= self.max_repeats}

    def feed(self, piece: str) -> str:
        if self.stopped or self.max_repeats <= 0:
            return "" if self.stopped else piece
        out: list[str] = []
        for part in re.split(r"(\n)", piece):
            if not part:
                continue
            if part != "\n":
                self._line += part
                if not self._could_repeat():
                    out.append(self._line[self._released:])
                    self._released = len(self._line)
                continue
            key = line_key(self._line)
            if key and self.counts[key] >= self.max_repeats:
                self.stopped = True
                break
            if key:
                self.counts[key] += 1
            out.append(self._line[self._released:] + "\n")
            self._line, self._released = "", 0
        return "".join(out)

    def _could_repeat(self) -> bool:
        """Whether the unfinished line is still a prefix of a line already used up."""
        partial = line_key(self._line)
        if not partial:
            return False
        return any(k.startswith(partial) for k in self._exhausted())

    def finish(self) -> str:
        """The held-back rest when generation ends (a repeat without its newline is dropped too)."""
        if self.stopped:
            return ""
        key = line_key(self._line)
        if key and self.counts[key] >= self.max_repeats:
            self.stopped = True
            return ""
        rest = self._line[self._released:]
        self._line, self._released = "", 0
        return rest
