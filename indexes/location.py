"""Where a chunk lies in its document, declared once for every record that carries it: what a writer
hands over (records.NewChunk), what the store reads back (store.ChunkRecord), a search hit
(retrieve.Hit) and a chunk of a passage (reading.PassageChunk).

How a place is written out for someone (a prompt, an MCP client, a terminal) is the reader's business
and lives with that reader; this module only holds the fields and their flat JSON keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

LINE_ANCHOR = re.compile(r"L\d+-L\d+")  # the anchor of a chunk cited by its lines (ingest/split.py)


@dataclass(frozen=True, slots=True)
class Location:
    """A chunk's headings, its anchor in the original (`#section`, `L3-L9`, `page=2`), its page, its
    line range and the code symbol it defines. The fields follow the chunk table's column order, so a
    row read with `columns()` builds one from its slice."""

    heading_path: str = ""
    anchor: str = ""
    page: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    symbol: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The flat keys the API returns for a chunk's place (spelled out: every answer's sources pass here)."""
        return {"heading_path": self.heading_path, "anchor": self.anchor, "page": self.page,
                "line_start": self.line_start, "line_end": self.line_end, "symbol": self.symbol}

    def row(self) -> tuple[Any, ...]:
        """The values in column order, for an INSERT naming `columns()` (every chunk written passes here)."""
        return (self.heading_path, self.anchor, self.page, self.line_start, self.line_end, self.symbol)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Location:
        """The place of a flat dict (a hit's `to_dict()`, an answer's source); other keys are ignored,
        a missing one keeps its default."""
        return cls(**{name: data[name] for name in FIELDS if name in data})

    def with_lines(self, line_start: int, line_end: int) -> Location:
        """The same place widened to these lines (adjacent chunks shown as one); an anchor that cites
        lines follows them, any other anchor stays."""
        anchor = f"L{line_start}-L{line_end}" if LINE_ANCHOR.fullmatch(self.anchor or "") else self.anchor
        return replace(self, line_start=line_start, line_end=line_end, anchor=anchor)


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Location))


def columns(table: str = "") -> str:
    """The chunk table's location columns in Location's field order (`c.heading_path, ...` for table c)."""
    prefix = f"{table}." if table else ""
    return ", ".join(prefix + name for name in FIELDS)


class Located:
    """Flat reading of a record's `location`: `hit.page` is `hit.location.page`, so readers use the same
    names as the JSON. Records are built with a Location; these properties only read it."""

    location: Location

    @property
    def heading_path(self) -> str:
        return self.location.heading_path

    @property
    def anchor(self) -> str:
        return self.location.anchor

    @property
    def page(self) -> int | None:
        return self.location.page

    @property
    def line_start(self) -> int | None:
        return self.location.line_start

    @property
    def line_end(self) -> int | None:
        return self.location.line_end

    @property
    def symbol(self) -> str:
        return self.location.symbol

    def flat_dict(self) -> dict[str, Any]:
        """The record's fields with its location's spelled out in its place: the flat JSON the API has
        always returned, keys in the same order. A shallow copy (asdict deep-copies field by field)."""
        return flat_dicts([self])[0]


def flat_dicts(records: Iterable[Located], leave_out: str = "") -> list[dict[str, Any]]:
    """Each record's `flat_dict`, a list field copied (a hit's chunk ids) and the field `leave_out` left
    out (a source's full text): an answer's sources made in one pass here, not a trip per source."""
    out: list[dict[str, Any]] = []
    for record in records:
        flat: dict[str, Any] = {}
        for name, value in vars(record).items():
            if name == "location":
                flat.update(value.to_dict())
            elif name != leave_out:
                flat[name] = list(value) if isinstance(value, list) else value
        out.append(flat)
    return out
