"""What a writer hands the store for one file: plain records, importable without the database code
(the parser process builds them and never loads sqlmodel)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class NewChunk:
    """A chunk ready to be written: text plus where it came from."""

    text: str
    heading_path: str = ""
    anchor: str = ""
    page: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    symbol: str = ""
    n_tokens: int = 0


@dataclass
class SourceInfo:
    """What the store records about a source file, whatever became of it."""

    path: str
    root: str = ""
    title: str = ""
    kind: str = ""
    sha256: str = ""
    size: int = 0
    mtime: float = 0.0
    meta: dict = field(default_factory=dict)
