"""Walking folders: what is found, what is skipped, and links that must not trap the walk."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ingest.sources import walk, walk_all


def touch(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_walk_finds_files_with_relative_slash_paths(tmp_path):
    touch(tmp_path / "b.md")
    touch(tmp_path / "a" / "deep" / "c.txt", "hello")
    touch(tmp_path / "a" / "z.py")
    files = list(walk(tmp_path))
    assert [f.rel_path for f in files] == ["b.md", "a/z.py", "a/deep/c.txt"]
    c = files[-1]
    assert c.root == tmp_path.resolve() and c.abs_path == tmp_path.resolve() / "a" / "deep" / "c.txt"
    assert c.size == 5 and c.mtime == pytest.approx(c.abs_path.stat().st_mtime)


def test_hidden_and_tool_folders_are_skipped(tmp_path):
    touch(tmp_path / "keep.md")
    for skipped in (".hidden.md", ".git/config", "__pycache__/m.pyc", "node_modules/x/index.js",
                    ".venv/lib/site.py", "docs/.secret/notes.md"):
        touch(tmp_path / skipped)
    assert [f.rel_path for f in walk(tmp_path)] == ["keep.md"]


def test_directory_links_are_not_followed_and_loops_end(tmp_path):
    touch(tmp_path / "docs" / "a.md")
    os.symlink(tmp_path, tmp_path / "docs" / "loop")  # a link back to the root
    os.symlink(tmp_path / "docs", tmp_path / "docs-link")
    touch(tmp_path / "other" / "b.md")
    os.symlink(tmp_path / "other" / "b.md", tmp_path / "docs" / "b-link.md")  # a file link is read
    os.symlink(tmp_path / "missing.md", tmp_path / "docs" / "broken.md")
    assert [f.rel_path for f in walk(tmp_path)] == ["docs/a.md", "docs/b-link.md", "other/b.md"]


def test_fifo_is_skipped(tmp_path):
    touch(tmp_path / "a.md")
    os.mkfifo(tmp_path / "pipe")
    assert [f.rel_path for f in walk(tmp_path)] == ["a.md"]


def test_odd_names(tmp_path):
    names = ["with space.md", "ünïcödé — dash.md", "日本語.txt", "semi;colon&amp.md", "new\nline.md"]
    for name in names:
        touch(tmp_path / name)
    raw = os.fsencode(tmp_path) + b"/bad-\xff-byte.md"
    with open(raw, "wb") as fh:
        fh.write(b"text")
    files = {f.rel_path: f for f in walk(tmp_path)}
    assert set(names) <= set(files)
    assert "bad-\\xff-byte.md" in files  # shown as valid UTF-8 text in the store...
    assert files["bad-\\xff-byte.md"].abs_path.read_bytes() == b"text"  # ...still opened by its real name
    for f in files.values():
        f.rel_path.encode("utf-8")


def test_single_file_and_several_roots(tmp_path):
    one = touch(tmp_path / "x" / "one.md")
    touch(tmp_path / "y" / "two.md")
    [f] = walk(one)
    assert (f.rel_path, f.root) == ("one.md", one.parent.resolve())
    assert [f.rel_path for f in walk_all([one, tmp_path / "y"])] == ["one.md", "two.md"]
    with pytest.raises(FileNotFoundError):
        list(walk(tmp_path / "nope"))


def git(cwd: Path, *args: str) -> str:
    import subprocess

    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_checkout_honours_gitignore_and_records_the_commit(tmp_path):
    from ingest.sources import scan

    repo = tmp_path / "repo"
    touch(repo / "src" / "app.py", "print(1)\n")
    touch(repo / ".gitignore", "secrets/\n*.log\n")
    touch(repo / "secrets" / "key.txt")
    touch(repo / "debug.log")
    touch(repo / "vendor" / "lib.js")  # vendored: left out by the defaults
    touch(repo / "web" / "app.min.js")  # generated
    touch(repo / "README.md")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    touch(repo / "notes.md", "untracked but not ignored\n")
    result = scan(repo)
    assert [f.rel_path for f in result.files] == ["README.md", "notes.md", "src/app.py"]
    assert result.git == {"commit": git(repo, "rev-parse", "HEAD"), "branch": "main"}
    # a sub-folder of the checkout: paths relative to it, same commit
    sub = scan(repo / "src")
    assert [f.rel_path for f in sub.files] == ["app.py"] and sub.git == result.git
    git(repo, "checkout", "-q", "--detach")
    assert scan(repo).git == {"commit": result.git["commit"], "branch": ""}  # detached: no branch


def test_gitignore_without_git_and_default_excludes(tmp_path, monkeypatch):
    from ingest import gitrepo
    from ingest.sources import scan

    monkeypatch.setattr(gitrepo, "_git", lambda *a, **k: None)  # as on a machine without git
    touch(tmp_path / ".gitignore", "*.tmp\nbuildinfo/\n")
    touch(tmp_path / "docs" / ".gitignore", "drafts/\n!keep.tmp\n")
    for name in ("a.md", "x.tmp", "buildinfo/b.md", "docs/c.md", "docs/drafts/d.md", "docs/keep.tmp",
                 "node_modules/m.js", "package-lock.json", "dist/bundle.js", "proto/x_pb2.py"):
        touch(tmp_path / name)
    assert [f.rel_path for f in scan(tmp_path).files] == ["a.md", "docs/c.md", "docs/keep.tmp"]
    # exclude=[] leaves out nothing but what .gitignore says
    assert "dist/bundle.js" in {f.rel_path for f in scan(tmp_path, exclude=[]).files}


def test_entries_that_cannot_be_read_are_reported(tmp_path):
    from ingest.sources import scan

    touch(tmp_path / "ok.md")
    os.symlink(tmp_path / "self", tmp_path / "self")  # a link to itself
    os.symlink(tmp_path / "missing.md", tmp_path / "broken.md")
    os.symlink(tmp_path, tmp_path / "up")  # a folder link (a loop if it were followed)
    os.mkfifo(tmp_path / "pipe")
    result = scan(tmp_path)
    assert [f.rel_path for f in result.files] == ["ok.md"]
    assert {(p.rel_path, p.state, p.reason) for p in result.problems} == {
        ("self", "failed", "symbolic link loop"),
        ("broken.md", "failed", "broken symbolic link (its target does not exist)"),
        ("up", "skipped", "link to a folder (not followed)"),
        ("pipe", "skipped", "not a regular file (FIFO)"),
    }


def test_a_file_is_not_read_once_its_folder_was_swapped_for_a_link(tmp_path):
    """The root was resolved when the folder was listed: a link swapped in for the folder since must not
    make the link's target (here /etc) count as the folder when the file is read."""
    from ingest.sources import OutsideRoot, inside, read_inside_root, scan

    swap = tmp_path / "swap"
    touch(swap / "passwd", "harmless notes\n")
    [source] = scan(swap, use_git=False).files
    assert read_inside_root(source) == b"harmless notes\n"
    shutil.rmtree(swap)
    swap.symlink_to("/etc")
    with pytest.raises(OutsideRoot, match="replaced by a link"):
        read_inside_root(source)
    assert not inside(source.abs_path, source.root)
