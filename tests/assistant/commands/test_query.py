"""How `assistant ask` and `assistant search` show a source's place in the terminal."""

from __future__ import annotations

from assistant.commands.query import terminal_location
from indexes.location import Location


def test_page_lines_and_heading_one_a_line():
    assert terminal_location(Location(page=3, line_start=10, line_end=42, heading_path="Guide › Setup")) == (
        "p. 3\nlines 10-42\nGuide › Setup"
    )
    assert terminal_location(Location(line_start=5, line_end=5, symbol="main")) == "lines 5-5"
    assert terminal_location(Location()) == ""


def test_the_heading_from_the_file_is_made_safe_to_print():
    shown = terminal_location(Location(heading_path="Evil\x1b[2J heading"))
    assert "\x1b" not in shown and "heading" in shown


def test_an_answer_source_dict_gives_the_same_place():
    source = {"n": 1, "title": "T", "path": "a.pdf", "page": 2, "line_start": None, "line_end": None,
              "heading_path": "", "score": 0.5}
    assert terminal_location(Location.from_dict(source)) == "p. 2"


def test_a_replaced_answer_is_said_after_the_streamed_text():
    from assistant.commands.query import check_notice

    replaced = {"answer": "The documents do not contain the answer to this question.",
                "check": {"replaced": True, "unsupported": True, "citation_coverage": 1.0}}
    assert check_notice(replaced) == (
        "The sources shown do not support this answer. The documents do not contain the answer to this question."
    )
    assert check_notice({"answer": "x", "check": {"unsupported": True}}) == "The sources shown do not support this answer."
    assert check_notice({"answer": "x", "check": {"citation_coverage": 0}}) == "This answer cites no source."
    assert check_notice({"answer": "x", "check": {"citation_coverage": 1.0}}) is None
    assert check_notice({}) is None  # an answer that failed before its `done` event
    empty = {"answer": "The model gave no answer.", "check": {"replaced": True, "empty": True, "citation_coverage": 0.0}}
    assert check_notice(empty) == "The model gave no answer."  # nothing was streamed: the sentence alone


def test_the_sources_words_are_printed_after_the_streamed_text():
    from assistant.commands.query import quoted_after

    block = "\n\nFrom the sources:\n> “Book flights 14 days ahead.” [1]"
    assert quoted_after({"answer": "Flights go through the desk [1]." + block, "check": {"replaced": False}}) == block
    assert quoted_after({"answer": "Flights go through the desk [1].", "check": {}}) == ""
    assert quoted_after({"answer": "x" + block, "check": {"replaced": True}}) == ""  # the statement replaced it all
    assert quoted_after({}) == ""  # an answer that failed before its `done` event


def test_a_cited_source_line_says_its_support():
    from assistant.commands.query import source_line

    base = {"n": 2, "title": "Leave", "path": "leave.md", "line_start": 3, "line_end": 9, "heading_path": ""}
    assert source_line({**base, "cited": True, "support": {"supported": True}}) == "[2] supported Leave — leave.md lines 3-9"
    assert source_line({**base, "cited": True, "support": {"supported": False}}).startswith("[2] not supported ")
    assert source_line({**base, "cited": False, "support": None}) == "(2) Leave — leave.md lines 3-9"
