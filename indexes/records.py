"""What a writer hands the store for one file: plain records, importable without the database code
(the parser process builds them and never loads sqlmodel)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from indexes.location import Located, Location


@dataclass
class NewChunk(Located):
    """A chunk ready to be written: text plus where it came from."""

    text: str
    location: Location = Location()
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


def root_in_place(root: str | os.PathLike[str]) -> bool:
    """Whether a recorded root still resolves to itself. A folder since replaced by a link (or with a
    link swapped in above it) does not, and what its path leads to now was never ingested."""
    base = os.fspath(root)
    try:
        return os.path.isabs(base) and os.path.realpath(base) == os.path.normpath(base)
    except (OSError, ValueError):
        return False


def real_path_inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> Path | None:
    """path with every link resolved, when that lies inside root as recorded; None otherwise.

    root is never resolved again (it was absolute and link-free when recorded): resolving it now would
    follow a link swapped in since, and make the link's target count as inside.
    """
    if not root_in_place(root):
        return None
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError):  # a NUL byte in a stored path
        return None
    return real if real.is_relative_to(os.path.normpath(os.fspath(root))) else None
