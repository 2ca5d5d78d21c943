"""Git checkouts: which files git considers part of the tree, and the commit they come from.

With the `git` program, `git ls-files --cached --others --exclude-standard` gives the tracked files
plus the untracked ones that no ignore rule excludes: exactly what a developer sees as the project.
Without it, `.gitignore` files are applied with `pathspec` and the commit is read from `.git/HEAD`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ingest.patterns import PatternSet

GIT_TIMEOUT_S = 120


SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.quotepath=off",
               "-c", "core.untrackedCache=false", "-c", "protocol.allow=never")


def _git(cwd: Path, *args: str) -> bytes | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        out = subprocess.run(
            # A checkout's own .git/config may name commands (core.fsmonitor, hooks): none of them run.
            # A checkout owned by another user is refused by git (no safe.directory=*) and then read
            # without git, its .gitignore files applied by pathspec.
            [git, *SAFE_CONFIG, *args],
            cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT_S, check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def find_git_dir(path: Path) -> Path | None:
    """The .git folder of the work tree holding path (following a `gitdir:` file), or None."""
    for folder in (path, *path.parents):
        candidate = folder / ".git"
        if candidate.is_dir():
            return candidate
        if candidate.is_file():
            text = candidate.read_text(errors="replace").strip()
            if text.startswith("gitdir:"):
                target = Path(text[7:].strip())
                return target if target.is_absolute() else (folder / target).resolve()
    return None


def list_files(root: Path) -> list[str] | None:
    """Files of the work tree under root, relative to root ('/'-separated), or None when root is not
    inside a git work tree or git is not installed."""
    if find_git_dir(root) is None:
        return None
    out = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
    if out is None:
        return None
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def _read_head(git_dir: Path) -> tuple[str, str]:
    """(commit, branch) from the files of a .git folder, for machines without the git program."""
    try:
        head = (git_dir / "HEAD").read_text().strip()
    except OSError:
        return "", ""
    if not head.startswith("ref:"):
        return head, ""
    ref = head[4:].strip()
    branch = ref.removeprefix("refs/heads/")
    common = git_dir
    if (git_dir / "commondir").is_file():
        common = (git_dir / (git_dir / "commondir").read_text().strip()).resolve()
    for base in (git_dir, common):
        ref_file = base / ref
        if ref_file.is_file():
            return ref_file.read_text().strip(), branch
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split(" ", 1)[0], branch
    return "", branch


def commit_info(path: Path) -> dict[str, str] | None:
    """{'commit', 'branch'} of the checkout holding path, or None outside a git work tree."""
    git_dir = find_git_dir(path)
    if git_dir is None:
        return None
    commit = _git(path, "rev-parse", "HEAD")
    if commit is not None:
        branch = _git(path, "rev-parse", "--abbrev-ref", "HEAD") or b""
        info = {"commit": commit.decode().strip(), "branch": branch.decode().strip()}
    else:
        sha, branch_name = _read_head(git_dir)
        info = {"commit": sha, "branch": branch_name}
    if info["branch"] == "HEAD":
        info["branch"] = ""  # detached
    return info if info["commit"] else None


class GitIgnores:
    """The .gitignore files of a folder tree, each applying to the paths below its own folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, PatternSet | None] = {}

    def _at(self, folder: str) -> PatternSet | None:
        if folder not in self._cache:
            path = self.root / folder / ".gitignore" if folder else self.root / ".gitignore"
            try:
                lines = path.read_text(errors="replace").splitlines()
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
