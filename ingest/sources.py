"""Finding the files to ingest under the folders (or single files) a user names.

A folder inside a git work tree is listed by git itself (`git ls-files --cached --others
--exclude-standard`: tracked files plus untracked ones that no .gitignore excludes), and the commit is
recorded. Without git, .gitignore files are read with `pathspec`. Either way vendored and generated
files are left out by gitignore-style default patterns (settings can replace them), hidden entries and
tool folders are skipped, and folder links are never followed. Entries that cannot be ingested (link
loops, broken links, FIFOs, unlistable folders) are reported as problems with a reason.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from indexes.records import real_path_inside, root_in_place
from ingest import gitrepo
from ingest.patterns import PatternSet

# Directories that hold tooling, caches or dependencies rather than a user's documents.
SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv"})

# Vendored dependencies, build output and generated files (gitignore syntax; `ingest.exclude` replaces it).
DEFAULT_EXCLUDE = (
    # dependencies copied into a tree
    "node_modules/", "bower_components/", "vendor/", "third_party/", "third-party/", "site-packages/",
    "venv/", ".venv/", "Pods/", "jspm_packages/",
    # build output and caches
    "__pycache__/", "build/", "dist/", "target/", "_build/", "out/", ".tox/", ".nox/", "htmlcov/", "coverage/",
    ".next/", ".nuxt/", ".svelte-kit/", ".gradle/", ".terraform/", "*.egg-info/", ".eggs/", "CMakeFiles/",
    # generated or minified files
    "*.min.js", "*.min.css", "*.bundle.js", "*.chunk.js", "*.map", "*_pb2.py", "*_pb2_grpc.py", "*.pb.go",
    "*.pb.cc", "*.pb.h", "*.generated.*", "*.g.dart", "*.designer.cs",
    # lock files: machine-written, long and useless to search
    "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "Pipfile.lock", "Cargo.lock",
    "composer.lock", "Gemfile.lock", "go.sum", "uv.lock",
)


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


@dataclass(frozen=True)
class SourceProblem:
    """An entry under a root that is not a readable regular file. state: 'failed' or 'skipped'."""

    rel_path: str
    root: Path
    reason: str
    state: str = "failed"


@dataclass
class Scan:
    """What one root holds: its files, the entries that cannot be ingested, and its git commit."""

    root: Path
    is_dir: bool
    files: list[SourceFile] = field(default_factory=list)
    problems: list[SourceProblem] = field(default_factory=list)
    git: dict[str, str] | None = None
    excluded: int = 0  # files left out by .gitignore or the exclude patterns


def display_name(name: str) -> str:
    """A file-system name as valid UTF-8 text (undecodable bytes become `\\xNN`)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def is_hidden(name: str) -> bool:
    return name.startswith(".")


def resolve_root(path: str | os.PathLike[str]) -> Path:
    """The absolute, symlink-free form of a path the user gave (the user may name a link)."""
    return Path(path).expanduser().resolve()


def walk(root: str | os.PathLike[str], exclude: Iterable[str] = ()) -> Iterator[SourceFile]:
    """Regular files under root (a folder or a single file), in a stable order, without git or defaults.

    Hidden entries and tool folders are skipped; directory symlinks are never followed, so a link
    loop cannot trap the walk. A symlink to a regular file is read like the file. FIFOs, sockets and
    devices are skipped: opening one could block forever.
    """
    yield from scan(root, use_git=False, exclude=exclude, gitignore=False).files


def scan(
    root: str | os.PathLike[str],
    *,
    use_git: bool = True,
    gitignore: bool = True,
    exclude: Iterable[str] | None = None,
) -> Scan:
    """Files and problems under root. exclude: gitignore-style patterns (None = DEFAULT_EXCLUDE)."""
    base = resolve_root(root)
    patterns = PatternSet(DEFAULT_EXCLUDE if exclude is None else tuple(exclude))
    if base.is_file():
        info = base.stat()
        result = Scan(base.parent, False, git=gitrepo.commit_info(base.parent) if use_git else None)
        result.files.append(SourceFile(base, display_name(base.name), base.parent, info.st_size, info.st_mtime))
        return result
    if not base.is_dir():
        raise FileNotFoundError(f"no such file or folder: {root}")
    result = Scan(base, True)
    listed = gitrepo.list_files(base) if use_git else None
    if listed is not None:
        result.git = gitrepo.commit_info(base)
        _from_listing(result, listed, patterns)
    else:
        if use_git and gitrepo.git_marker(base) is not None:
            result.git = gitrepo.commit_info(base)
        ignores = gitrepo.GitIgnores(base) if gitignore else None
        _walk_dir(result, base, "", patterns, ignores)
    return result


class OutsideRoot(OSError):
    """A file whose real path (links resolved) lies outside the folder it was found in."""


def inside(path: Path, root: Path) -> bool:
    """Whether path, with every link resolved, lies inside root as the scan resolved it (root is not
    resolved again: a link swapped in for the folder since must not move it)."""
    return real_path_inside(path, root) is not None


def read_inside_root(source: SourceFile) -> bytes:
    """The file's bytes, checked again when read: its real path must lie inside its root as scanned, and
    the real path is opened without following a link (one swapped in since the check is refused by the
    kernel)."""
    if not root_in_place(source.root):
        raise OutsideRoot("the folder was replaced by a link to another place since it was listed: not read")
    real = real_path_inside(source.abs_path, source.root)
    if real is None:
        raise OutsideRoot(f"link to a file outside the folder ({display_name(source.rel_path)}): not read")
    fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OutsideRoot("not a regular file any more: not read")
        return f.read()


def _classify(path: Path, rel: str, root: Path) -> SourceFile | SourceProblem | None:
    """A path as a file, a problem, or None (a folder reached through git's listing)."""
    if os.path.islink(path) or not inside(path.parent, root):
        if not inside(path, root):  # e.g. a link (tracked in git, too) to ~/.ssh/id_rsa
            return SourceProblem(rel, root, "link to a file outside the folder (not followed)", "skipped")
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return SourceProblem(rel, root, "symbolic link loop")
        if os.path.islink(path):
            return SourceProblem(rel, root, "broken symbolic link (its target does not exist)")
        if exc.errno == errno.ENOENT:
            return None  # vanished meanwhile
        return SourceProblem(rel, root, f"cannot read the file ({exc.strerror or exc})")
    if stat.S_ISDIR(info.st_mode):
        if os.path.islink(path):
            return SourceProblem(rel, root, "link to a folder (not followed)", "skipped")
        return None
    if not stat.S_ISREG(info.st_mode):
        kind = "FIFO" if stat.S_ISFIFO(info.st_mode) else "socket" if stat.S_ISSOCK(info.st_mode) else "device"
        return SourceProblem(rel, root, f"not a regular file ({kind})", "skipped")
    return SourceFile(path, rel, root, info.st_size, info.st_mtime)


def _add(result: Scan, item: SourceFile | SourceProblem | None) -> None:
    if isinstance(item, SourceFile):
        result.files.append(item)
    elif isinstance(item, SourceProblem):
        result.problems.append(item)


def _from_listing(result: Scan, listed: list[str], patterns: PatternSet) -> None:
    """git's listing, filtered like a walk: hidden and tool folders, then the exclude patterns."""
    for raw in sorted(set(listed)):
        parts = raw.split("/")
        if any(is_hidden(p) or p in SKIP_DIRS for p in parts):
            continue
        rel = display_name(raw)
        if patterns.excludes(raw, is_dir=False):
            result.excluded += 1
            continue
        _add(result, _classify(result.root / raw, rel, result.root))


def _walk_dir(result: Scan, folder: Path, prefix: str, patterns: PatternSet, ignores) -> None:
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        if prefix:
            result.problems.append(SourceProblem(prefix.rstrip("/"), result.root,
                                                 f"cannot list the folder ({exc.strerror or exc})"))
        return
    subdirs = []
    for entry in entries:
        if is_hidden(entry.name) or entry.name in SKIP_DIRS:
            continue
        rel = prefix + display_name(entry.name)
        raw_rel = prefix + entry.name
        try:
            real_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            real_dir = False
        if patterns.excludes(raw_rel, is_dir=real_dir) or (ignores is not None and ignores.ignored(raw_rel, real_dir)):
            result.excluded += 0 if real_dir else 1
            continue
        if real_dir:
            subdirs.append((entry, rel))
            continue
        _add(result, _classify(Path(entry.path), rel, result.root))
    for entry, rel in subdirs:
        _walk_dir(result, Path(entry.path), rel + "/", patterns, ignores)


def walk_all(paths: Iterable[str | os.PathLike[str]]) -> list[SourceFile]:
    """Every file under every given path, in the order given."""
    files: list[SourceFile] = []
    for path in paths:
        files.extend(walk(path))
    return files
