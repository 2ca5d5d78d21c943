"""Git checkouts: which files git considers part of the tree, and the commit they come from.

With the `git` program, `git ls-files --cached --others --exclude-standard` gives the tracked files
plus the untracked ones that no ignore rule excludes: exactly what a developer sees as the project.
Without it, `.gitignore` files are applied with `pathspec` and no commit is recorded.

Everything about a checkout comes from the `git` command, never from paths read out of its `.git`:
a hostile `.git/HEAD` (`ref: ../../etc/passwd`) or a `gitdir:`/`commondir` file naming another folder
would otherwise make some file outside the checkout the recorded "commit". git validates what it reads
and fails on such metadata, which then means no git information.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from indexes.records import real_path_inside
from ingest.patterns import PatternSet

GIT_TIMEOUT_S = 120


# A checkout's own .git/config may name commands (core.fsmonitor, hooks, transports for a lazy fetch):
# none of the commands run here start any of them.
SAFE_CONFIG = ("--no-pager", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.quotepath=off",
               "-c", "core.untrackedCache=false", "-c", "protocol.allow=never")

# git's own variables are dropped (GIT_DIR, GIT_CONFIG_PARAMETERS... would point it at another repository,
# config or program than the checkout's own) and these set instead.
SAFE_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat",
            "PAGER": "cat", "GIT_NO_LAZY_FETCH": "1", "GIT_NO_REPLACE_OBJECTS": "1", "LC_ALL": "C"}

COMMIT_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
BRANCH_NAME = re.compile(r"^[^\x00-\x20\x7f~^:?*\[\\]{1,255}$")


def _git(cwd: Path, *args: str) -> bytes | None:
    """git's output in cwd, or None where git is missing, fails or takes too long."""
    git = shutil.which("git")
    if git is None:
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | SAFE_ENV
    try:
        out = subprocess.run(
            # A checkout owned by another user is refused by git (no safe.directory=*) and then read
            # without git, its .gitignore files applied by pathspec.
            [git, *SAFE_CONFIG, *args],
            cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT_S, check=False, env=env,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def git_marker(path: Path) -> Path | None:
    """The nearest `.git` entry (a folder, or a file naming one) at or above path, not opened: only a
    hint that git may know the folder; git itself decides."""
    for folder in (path, *path.parents):
        candidate = folder / ".git"
        if os.path.lexists(candidate):
            return candidate
    return None


def list_files(root: Path) -> list[str] | None:
    """Files of the work tree under root, relative to root ('/'-separated), or None when root is not
    inside a git work tree or git is not installed."""
    if git_marker(root) is None:
        return None
    out = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
    if out is None:
        return None
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def _text(out: bytes | None, valid: re.Pattern[str]) -> str:
    """One line of git's output when it has the expected form, else ''."""
    try:
        text = (out or b"").decode().strip()
    except UnicodeDecodeError:
        return ""
    return text if valid.match(text) else ""


def commit_info(path: Path) -> dict[str, str] | None:
    """{'commit', 'branch'} of the checkout holding path ('' branch when detached), or None outside a
    git work tree, without git, or when git refuses the checkout's metadata."""
    if git_marker(path) is None:
        return None
    commit = _text(_git(path, "rev-parse", "--verify", "-q", "HEAD^{commit}"), COMMIT_ID)
    if not commit:
        return None
    branch = _text(_git(path, "symbolic-ref", "--short", "-q", "HEAD"), BRANCH_NAME)
    return {"commit": commit, "branch": branch}


class GitIgnores:
    """The .gitignore files of a folder tree, each applying to the paths below its own folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, PatternSet | None] = {}

    def _at(self, folder: str) -> PatternSet | None:
        if folder not in self._cache:
            path = self.root / folder / ".gitignore" if folder else self.root / ".gitignore"
            try:  # a .gitignore linked to a file outside the folder is not read
                lines = path.read_text(errors="replace").splitlines() if real_path_inside(path, self.root) else []
            except OSError:
                lines = []
            patterns = PatternSet(lines)
            self._cache[folder] = patterns if patterns else None
        return self._cache[folder]

    def ignored(self, rel_path: str, is_dir: bool) -> bool:
        """Whether the entry is ignored: the deepest .gitignore with a pattern that matches it decides
        (so `!name` in a sub-folder re-includes what a parent's pattern excluded)."""
        parts = rel_path.split("/")
        for depth in range(len(parts) - 1, -1, -1):
            spec = self._at("/".join(parts[:depth]))
            if spec is None:
                continue
            decision = spec.decision("/".join(parts[depth:]), is_dir=is_dir)
            if decision is not None:
                return decision
        return False
