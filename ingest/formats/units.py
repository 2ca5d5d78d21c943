"""Units of source code and how they become elements: shared by the Python reader (`ingest.formats.code`)
and the tree-sitter reader (`ingest.formats.treesitter`).

A unit is one definition named by its qualified symbol, or a run of module-level code between
definitions; its tiles are the line ranges a chunk may be cut between.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ingest.elements import Element
from ingest.formats.text import line_blocks, strip_controls

# A compound statement longer than this many lines is tiled by its inner statements.
RECURSE_LINES = 12


@dataclass
class Unit:
    """A definition or a run of module-level code; tiles are (start, end) line ranges, 1-based."""

    symbol: str
    start: int
    end: int
    tiles: list[tuple[int, int]] = field(default_factory=list)


def to_elements(text: str, units: list[Unit]) -> list[Element]:
    """Units (sorted, non-overlapping) plus the module-level code around them, as code elements."""
    lines = text.splitlines()
    units = sorted(units, key=lambda u: u.start)
    full: list[Unit] = []
    cursor = 1
    for unit in units:
        if unit.start > cursor:
            full.extend(_gap_units(lines, cursor, unit.start - 1))
        full.append(unit)
        cursor = max(cursor, unit.end + 1)
    if cursor <= len(lines):
        full.extend(_gap_units(lines, cursor, len(lines)))
    out: list[Element] = []
    for number, unit in enumerate(full):
        tiles = unit.tiles or [(unit.start, unit.end)]
        for start, end in tiles:
            start, end = _trim(lines, start, end)
            if start > end:
                continue
            body = strip_controls("\n".join(line.rstrip() for line in lines[start - 1 : end]))
            out.append(Element(body, "code", None, None, start, end, symbol=unit.symbol, unit=number))
    return out


def _trim(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """The range without blank lines at either end."""
    while start <= end and not lines[start - 1].strip():
        start += 1
    while end >= start and not lines[end - 1].strip():
        end -= 1
    return start, end


def _gap_units(lines: list[str], start: int, end: int) -> list[Unit]:
    """Module-level code between definitions: one unit whose tiles are its blank-line blocks."""
    blocks = line_blocks("\n".join(lines[start - 1 : end]))
    if not blocks:
        return []
    tiles = [(start + b.line_start - 1, start + b.line_end - 1) for b in blocks]
    return [Unit("", tiles[0][0], tiles[-1][1], tiles)]


def comments_above(lines: list[str], start: int, prefixes: tuple[str, ...]) -> int:
    """The first line of the comment block directly above line `start` (or start itself)."""
    line = start
    while line > 1 and lines[line - 2].strip().startswith(prefixes):
        line -= 1
    return line
