"""What parsing produces: elements of a document, and the per-file error that carries a reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ParseError(Exception):
    """A file that cannot become elements; `reason` says why, in words a user can act on.

    skip=True marks files that are left out on purpose (binary, empty, generated) rather than
    broken: they are reported as skipped, not failed.
    """

    def __init__(self, reason: str, *, skip: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.skip = skip

    def __reduce__(self):  # keeps `skip` when the error comes back from the parsing process
        return (self.__class__, (self.reason,), {"skip": self.skip})


@dataclass
class Element:
    """One piece of a document. heading_level is set for real headings (1 = top); a title without
    a level is a layout guess (PDF, spreadsheets) and is treated as text when splitting.

    Code elements may carry the symbol they belong to and a unit number: consecutive elements of one
    unit (a function, a class header) are chunked together and never mixed with another unit.
    anchor, when set on a heading, is the fragment the source itself uses for it (an HTML id).
    marks, when set, are (offset in text, source line) of words found in the source (see
    `ingest.source_lines`): the text was rewritten, so its line breaks are not the file's.
    """

    text: str
    kind: str = "text"  # title | text | list | table | code
    page: int | None = None
    heading_level: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    symbol: str = ""
    unit: int | None = None
    anchor: str | None = None
    marks: list[tuple[int, int]] | None = None


@dataclass
class Parsed:
    """A parsed file. anchors says how its chunks are linked to: 'heading' (slug of the nearest
    heading), 'lines' (L10-L42), 'page' (page=N) or 'none'. note, when set, is worth telling the
    user even though the file was read (e.g. the text encoding it needed)."""

    title: str
    kind: str
    elements: list[Element]
    anchors: str = "none"
    meta: dict[str, Any] = field(default_factory=dict)
    note: str | None = None
