"""Derived questions about described values: reference entries asked without their names."""

from pathlib import Path

from assistant.cli import main
from evals.derive_entries import entry_question, entry_questions, rst_entries
from evals.eval_questions import load_questions

CONFIG_RST = """\
Configuration
=============

Builtin Values
--------------

.. py:data:: TRUSTED_HOSTS

    :type: list

    Validate the Host header of every request against these trusted hosts.
    Raise a SecurityError if the host is invalid, which results in a 400 error.

    Default: ``None``

    .. versionadded:: 3.1

.. data:: QUIET

.. attribute:: Dispatcher.timeout

    If a backend takes longer than this many seconds, the dispatcher answers with a 504 gateway error.
"""


def test_entries_keep_their_prose_and_leave_out_options_and_nested_directives():
    entries = {e.heading: e for e in rst_entries(CONFIG_RST, "docs/config.rst")}
    assert set(entries) == {"TRUSTED_HOSTS", "Dispatcher.timeout"}  # an entry without a body asks nothing
    lines = " ".join(entries["TRUSTED_HOSTS"].lines)
    assert "Validate the Host header" in lines and ":type:" not in lines and "versionadded" not in lines


def test_a_claim_opening_with_a_verb_is_asked_as_how_do_i():
    assert entry_question("Validate the header against these values.") == "How do I validate the header against these values?"
    assert entry_question("If it is None, all hosts are valid.").startswith("What happens if it is None")


def test_questions_leave_out_the_name_and_its_words_and_are_split_by_package(tmp_path: Path, capsys):
    root = tmp_path / "root"
    for pkg, split in (("webkit", "report"), ("other", "tune")):
        (root / f"{pkg}-1.0/src/{pkg}").mkdir(parents=True)
        (root / f"{pkg}-1.0/src/{pkg}/__init__.py").write_text("")
        (root / f"{pkg}-1.0/docs").mkdir()
        text = CONFIG_RST if pkg == "webkit" else ".. data:: LIMIT\n\n    Refuse uploads larger than this many megabytes with a 413 error.\n"
        (root / f"{pkg}-1.0/docs/config.rst").write_text(text.replace("Dispatcher", pkg.title()))
    rows = [r for r in entry_questions(root, tune=("other",)) if r.package == "webkit"]
    by_name = {r.heading: r for r in rows}
    q = by_name["TRUSTED_HOSTS"]
    assert (q.source, q.split, q.set) == ("webkit-1.0/docs/config.rst", "report", "entries")
    assert "trusted" not in q.question.lower() and "hosts" not in q.question.lower()
    assert "timeout" not in by_name["Webkit.timeout"].question
    out = tmp_path / "entries.jsonl"
    assert main(["eval", "derive", "entries", str(root), "--tune", "other", "--out", str(out)]) == 0
    assert {q.split for q in load_questions(out)} == {"tune", "report"}
