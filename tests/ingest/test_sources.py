"""Walking folders: what is found, what is skipped, and links that must not trap the walk."""

from __future__ import annotations

import os
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
