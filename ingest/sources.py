"""Finding the files to ingest under the folders (or single files) a user names."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

# Directories that hold tooling, caches or dependencies rather than a user's documents.
SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv"})


@dataclass(frozen=True)
class SourceFile:
    """A regular file found under a root.

    rel_path is '/'-separated and relative to root; it names the document in the store. A name that
    is not valid UTF-8 is kept readable there with backslash escapes, while abs_path stays the real
    path used to open the file.
    """

    abs_path: Path
    rel_path: str
    root: Path
    size: int
    mtime: float

    @property
    def suffix(self) -> str:
        return self.abs_path.suffix.lower()


def display_name(name: str) -> str:
    """A file-system name as valid UTF-8 text (undecodable bytes become `\\xNN`)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def is_hidden(name: str) -> bool:
    return name.startswith(".")


def resolve_root(path: str | os.PathLike[str]) -> Path:
    """The absolute, symlink-free form of a path the user gave (the user may name a link)."""
    return Path(path).expanduser().resolve()


def walk(root: str | os.PathLike[str]) -> Iterator[SourceFile]:
    """Regular files under root (a folder or a single file), in a stable order.

    Hidden entries and tool folders are skipped; directory symlinks are never followed, so a link
    loop cannot trap the walk. A symlink to a regular file is read like the file. FIFOs, sockets and
    devices are skipped: opening one could block forever.
    """
    base = resolve_root(root)
    if base.is_file():
        info = base.stat()
        yield SourceFile(base, display_name(base.name), base.parent, info.st_size, info.st_mtime)
        return
    if not base.is_dir():
        raise FileNotFoundError(f"no such file or folder: {root}")
    yield from _walk_dir(base, base, "")


def _walk_dir(root: Path, folder: Path, prefix: str) -> Iterator[SourceFile]:
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return  # unreadable folder: nothing we can list
    subdirs = []
    for entry in entries:
        if is_hidden(entry.name) or entry.name in SKIP_DIRS:
            continue
        rel = prefix + display_name(entry.name)
        try:
            if entry.is_dir(follow_symlinks=False):
                subdirs.append((entry, rel))
                continue
            info = entry.stat(follow_symlinks=True)
        except OSError:
            continue  # broken link or vanished meanwhile
        if stat.S_ISREG(info.st_mode):
            yield SourceFile(Path(entry.path), rel, root, info.st_size, info.st_mtime)
    for entry, rel in subdirs:
        yield from _walk_dir(root, Path(entry.path), rel + "/")


def walk_all(paths: Iterable[str | os.PathLike[str]]) -> list[SourceFile]:
    """Every file under every given path, in the order given."""
    files: list[SourceFile] = []
    for path in paths:
        files.extend(walk(path))
    return files
