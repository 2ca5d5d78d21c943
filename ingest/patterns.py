"""Gitignore-style patterns: the default excludes of vendored/generated files and .gitignore files.

`pathspec` implements git's rules exactly and is used when installed. Without it, the subset the
defaults need is matched here: `name/` matches a folder of that name at any depth, and a pattern
without a slash matches a file or folder name anywhere (with `*`, `?` and `[...]` wildcards).
"""

from __future__ import annotations

import fnmatch
from typing import Iterable


def _gitignore_spec(lines: Iterable[str]):
    try:
        import pathspec
    except ImportError:
        return None
    factory = getattr(pathspec, "GitIgnoreSpec", None)
    return factory.from_lines(lines) if factory else pathspec.PathSpec.from_lines("gitwildmatch", lines)


class PatternSet:
    """A list of gitignore-style patterns, matched against '/'-separated relative paths."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(p.strip() for p in patterns if p.strip() and not p.strip().startswith("#"))
        self._spec = _gitignore_spec(self.patterns) if self.patterns else None
        self._dirs = tuple(p[:-1] for p in self.patterns if p.endswith("/") and "/" not in p[:-1])
        self._names = tuple(p for p in self.patterns if "/" not in p and not p.startswith("!"))

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def decision(self, rel_path: str, *, is_dir: bool = False) -> bool | None:
        """True (excluded), False (re-included by a `!pattern`) or None (no pattern matches)."""
        if not self.patterns:
            return None
        path = rel_path + "/" if is_dir else rel_path
        if self._spec is not None and hasattr(self._spec, "check_file"):
            return self._spec.check_file(path).include
        return True if self.excludes(rel_path, is_dir=is_dir) else None

    def excludes(self, rel_path: str, *, is_dir: bool = False) -> bool:
        """Whether the path (or, for a file, any folder above it) matches."""
        if not self.patterns:
            return False
        if self._spec is not None:
            return bool(self._spec.match_file(rel_path + "/" if is_dir else rel_path))
        parts = rel_path.split("/")
        folders = parts if is_dir else parts[:-1]
        if any(fnmatch.fnmatchcase(f, d) for f in folders for d in self._dirs):
            return True
        return any(fnmatch.fnmatchcase(part, n) for part in parts for n in self._names)
