"""Derived sets of behaviour and error-message questions, and scraped copies of Markdown."""

import json
from pathlib import Path

from assistant.cli import main
from evals.derive_docs import (
    behaviour_question,
    behaviour_questions,
    error_questions,
    raised_messages,
    rst_sections,
    scraped,
)
from evals.eval_questions import first_rank, load_questions

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

ROUTING_RST = """\
Routing
=======

.. module:: webkit.routing

Trailing Slashes
----------------

If a rule ends with a slash and the visitor omits it, the router answers with a permanent redirect
to the canonical address, which browsers remember for subsequent visits.

This happens for every method.

::

    rule = Rule("/projects/")

Host Matching
-------------

The dispatcher compares the Host header against the configured server name and rejects
mismatched domains with a 400 response before any view function runs.
"""

CORE = '''
def check(name, value):
    if value is None:
        raise ValueError(f"The parameter {name!r} needs a value before the dispatcher starts.")
    if name == "x":
        raise TypeError("Short.")
    raise RuntimeError("Working outside of the request context was attempted here.")


def again():
    raise KeyError("Working outside of the request context was attempted here.")
'''


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _packages(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    write(root / "webkit-1.0/src/webkit/__init__.py", "")
    write(root / "webkit-1.0/src/webkit/core.py", CORE)
    write(root / "webkit-1.0/docs/routing.rst", ROUTING_RST)
    write(root / "webkit-1.0/docs/errors.rst",
          "Errors\n======\n\n``The parameter needs a value before the dispatcher starts.`` means a value is missing.\n")
    write(root / "webkit-1.0/docs/changes.rst", "Changes\n=======\n\nEverything changed in version two of the package today.\n")
    write(root / "other-2.0/other/__init__.py", "def f():\n    raise OSError('Could not read the configuration file from disk.')\n"
          "\n\ndef g():\n    raise LookupError('Working outside of the request context was attempted here.')\n")
    return root


def test_rst_sections_keep_prose_and_leave_out_directives_and_code():
    sections = rst_sections(ROUTING_RST, "docs/routing.rst")
    assert [s.heading for s in sections] == ["Trailing Slashes", "Host Matching"]
    assert sections[0].lines[0].startswith("If a rule ends with a slash")
    assert not any("Rule(" in line or "module::" in line for s in sections for line in s.lines)


def test_a_claim_becomes_a_question_in_its_form():
    assert behaviour_question("If a rule ends with a slash, it redirects.") == "What happens if a rule ends with a slash, it redirects?"
    assert behaviour_question("The dispatcher rejects mismatched domains.").startswith("How does it work that the dispatcher")
    assert behaviour_question("URL rules are matched in order.").startswith("How does it work that URL rules")


def test_behaviour_questions_drop_heading_words_and_dependent_sentences(tmp_path):
    rows = behaviour_questions(_packages(tmp_path), tune=("other",))
    by_heading = {r.heading: r for r in rows}
    assert {"Trailing Slashes", "Host Matching"} <= set(by_heading) and "Changes" not in by_heading  # no change logs
    q = by_heading["Host Matching"]
    assert (q.source, q.split, q.set, q.package) == ("webkit-1.0/docs/routing.rst", "report", "behaviour", "webkit")
    assert "host" not in q.question.lower().replace("how does", "") and "dispatcher compares" in q.question
    assert "This happens" not in by_heading["Trailing Slashes"].question


def test_raised_messages_leave_out_fields():
    assert raised_messages(CORE) == [
        ("ValueError", "The parameter needs a value before the dispatcher starts."),
        ("TypeError", "Short."),
        ("RuntimeError", "Working outside of the request context was attempted here."),
        ("KeyError", "Working outside of the request context was attempted here."),
    ]


def test_error_questions_name_the_raising_file_or_a_page_quoting_it(tmp_path, capsys):
    rows = error_questions(_packages(tmp_path), tune=("other",))
    assert [(r.source, r.split) for r in rows] == [
        ("other-2.0/other/__init__.py", "tune"),
        ("webkit-1.0/src/webkit/core.py|webkit-1.0/docs/errors.rst", "report"),
    ]  # a message raised from two files has no one answer; "Short." is too short
    out = tmp_path / "errors.jsonl"
    assert main(["eval", "derive", "errors", str(tmp_path / "root"), "--tune", "other", "--out", str(out),
                 "--data-dir", str(tmp_path / "data")]) == 0
    assert [q.source for q in load_questions(out)] == [r.source for r in rows]
    assert rows[1].question == 'I get "ValueError: The parameter needs a value before the dispatcher starts". Why, and what do I do about it?'


def test_a_source_with_alternatives_counts_at_the_first_of_them():
    assert first_rank(["a.py", "docs/b.rst", "c.py"], "c.py|docs/b.rst") == 2
    assert first_rank(["a.py"], "c.py|docs/b.rst") is None


def test_scraped_text_loses_punctuation_marks_and_line_breaks():
    text = "# 报告：部署\n\n本报告记录，4 月的过程。\n\n- 驱动是 525.147.05，版本稳定。\n"
    assert scraped(text) == "报告部署本报告记录 4 月的过程驱动是 525.147.05 版本稳定"


def test_the_shipped_sets_are_what_the_method_derives(tmp_path, capsys):
    """The frozen sibling sets and scraped copies are the method's output, not hand-edited."""
    reports = FIXTURES / "zh-reports"
    out = tmp_path / "siblings.jsonl"
    assert main(["eval", "derive", "sections", str(reports), "--set", "siblings", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == (FIXTURES / "eval" / "derived-siblings.jsonl").read_text(encoding="utf-8")
    out = tmp_path / "scraped.jsonl"
    assert main(["eval", "derive", "sections", str(reports), "--set", "siblings-scraped", "--source-suffix", ".txt",
                 "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == (FIXTURES / "eval" / "derived-siblings-scraped.jsonl").read_text(encoding="utf-8")
    copies = tmp_path / "copies"
    assert main(["eval", "derive", "scraped", str(reports), "--out", str(copies)]) == 0
    summary = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert summary[-1]["files"] == 10
    for path in sorted((FIXTURES / "zh-reports-scraped").iterdir()):
        assert (copies / path.name).read_text(encoding="utf-8") == path.read_text(encoding="utf-8")
    assert {q.source for q in load_questions(FIXTURES / "eval" / "derived-siblings-scraped.jsonl")} <= \
        {p.name for p in (FIXTURES / "zh-reports-scraped").iterdir()}
