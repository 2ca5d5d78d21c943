"""Text from files and users reaches the terminal as text: escape sequences, bidi controls and rich
markup in file names, titles, passages and answers are shown, never obeyed."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from indexes.terminal_text import terminal_safe

ESC, RLO = "\x1b", "\u202e"
# A name that recolours the terminal, reverses the rest of its line and asks rich for bold.
EVIL = f"evil{ESC}[31m{RLO}[bold]gpj"


@pytest.mark.parametrize("raw, shown", [
    (f"a{ESC}[2Jb", "a\\x1b[2Jb"),
    (f"{ESC}]0;title\x07", "\\x1b]0;title\\x07"),  # set the window title, ended by BEL
    ("\x9b31m", "\\x9b31m"),  # the one-byte CSI of C1
    ("del\x7f", "del\\x7f"),
    ("line\rover", "line\\x0dover"),
    (f"invoice{RLO}fdp.exe", "invoice\\u202efdp.exe"),
    ("\u2066x\u2069 \u200e\u200f\u061c", "\\u2066x\\u2069 \\u200e\\u200f\\u061c"),
    ("a\u2028b", "a\\u2028b"),
    ("two\nlines\tand a tab", "two\\x0alines\\x09and a tab"),  # a name stays on its line
])
def test_controls_become_visible_escapes(raw, shown):
    assert terminal_safe(raw) == shown
    assert terminal_safe(raw).isprintable()


def test_multiline_text_keeps_its_newlines_and_tabs_only():
    assert terminal_safe(f"one\n\ttwo{ESC}[0m\r\n", multiline=True) == "one\n\ttwo\\x1b[0m\\x0d\n"


@pytest.mark.parametrize("text", ["plain.md", "café/naïve.md", "中文文档.pdf", "emoji 👩‍💻 (ZWJ kept).txt", "C:\\docs\\x.md"])
def test_ordinary_text_is_unchanged(text):
    assert terminal_safe(text) == text


def test_markup_is_escaped_when_asked_and_prints_as_written():
    out = io.StringIO()
    Console(file=out, color_system=None, width=200).print(f"name: {terminal_safe(EVIL, markup=True)}")
    assert out.getvalue().strip() == "name: evil\\x1b[31m\\u202e[bold]gpj"


def test_a_rich_table_of_safe_text_shows_the_name_as_written():
    out = io.StringIO()
    table = Table("file")
    table.add_row(Text(terminal_safe(EVIL)))
    Console(file=out, force_terminal=True, color_system="standard", width=200).print(table)
    row = next(line for line in out.getvalue().splitlines() if "evil" in line)
    assert row == "│ evil\\x1b[31m\\u202e[bold]gpj │"  # no colour: neither the file's red nor rich's bold


# --- the commands, as a user runs them ----------------------------------------------------------------


def assistant(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "400", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "assistant.cli", *args], capture_output=True, text=True,
                          encoding="utf-8", timeout=600, cwd=cwd, env=env)


def assert_shown_not_obeyed(output: str) -> None:
    assert ESC not in output and RLO not in output, ascii(output)
    assert "\\x1b[31m" in output and "\\u202e[bold]gpj" in output, output


@pytest.mark.slow
def test_ingest_search_and_ask_print_hostile_file_names_as_text(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / f"{EVIL}.md").write_text(f"# Kettle {ESC}[5m{RLO}[red]rules\n\nThe kettle on the third floor is "
                                     f"descaled every Monday by the facilities team.{ESC}[2J\n")
    (docs / f"{EVIL}-empty.md").write_bytes(b"")  # left out: named in the report's table
    data = tmp_path / "data"

    ingest = assistant("ingest", str(docs), "--collection", "notes", "--data-dir", str(data), cwd=tmp_path)
    assert ingest.returncode == 0, ingest.stderr[-3000:]
    assert_shown_not_obeyed(ingest.stdout)
    assert "empty file" in ingest.stdout

    search = assistant("search", "when is the kettle descaled", "--collection", "notes", "--data-dir", str(data),
                       cwd=tmp_path)
    assert search.returncode == 0, search.stderr[-3000:]
    assert_shown_not_obeyed(search.stdout)
    assert "descaled every Monday" in search.stdout

    ask = assistant("ask", f"kettle{ESC}[8m{RLO}?", "--collection", "notes", "--backend", "echo",
                    "--data-dir", str(data), cwd=tmp_path)
    assert ask.returncode == 0, ask.stderr[-3000:]
    assert_shown_not_obeyed(ask.stdout)
    assert "kettle\\x1b[8m\\u202e?" in ask.stdout  # the question, echoed back in the answer
