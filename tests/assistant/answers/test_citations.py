"""Citation markers: finding them, and removing those that name no source while the answer streams."""

import pytest

from assistant.answers.citations import CitationFilter, cited_numbers


def run(filter_: CitationFilter, pieces: list[str]) -> tuple[str, list[str]]:
    shown = [filter_.feed(p) for p in pieces]
    shown.append(filter_.flush())
    return "".join(shown), shown


def test_cited_numbers_in_every_form():
    assert cited_numbers("Paris [1], see also [2, 3] and [1][4]. Not [x] nor [].") == [1, 2, 3, 4]
    assert cited_numbers("[ 5 ] then [3,5]") == [5, 3]
    assert cited_numbers("no citations") == []


def test_valid_citations_pass_unchanged():
    text, _ = run(CitationFilter(3), ["Paris is the capital [1]", " and Lyon [2][3]."])
    assert text == "Paris is the capital [1] and Lyon [2][3]."


@pytest.mark.parametrize(
    "pieces",
    [
        ["Paris [1] and [7] and [2, 9] end [0]."],
        ["Paris [", "1] and [", "7", "] and [2", ", 9", "] end [0", "]."],
        list("Paris [1] and [7] and [2, 9] end [0]."),  # one character at a time
    ],
)
def test_unknown_sources_are_removed_however_the_text_is_split(pieces):
    f = CitationFilter(2)
    text, _ = run(f, pieces)
    assert text == "Paris [1] and  and [2] end ."
    assert f.cited == [1, 2]


def test_only_a_possible_marker_is_held_back():
    f = CitationFilter(12)
    assert f.feed("The answer [1") == "The answer "
    assert f.feed("2] is") == "[12] is"
    assert f.feed(" here [") == " here "
    assert f.feed("see") == "[see"  # not a marker after all: released with the next piece
    assert f.flush() == ""


def test_unfinished_marker_at_the_end_is_plain_text():
    f = CitationFilter(3)
    assert f.feed("cut off [2") == "cut off "
    assert f.flush() == "[2"
    assert f.cited == []


def test_long_bracket_runs_are_not_held():
    f = CitationFilter(3)
    digits = "[" + "1" * 30
    assert f.feed(digits) == digits


def test_no_sources_removes_every_marker():
    text, _ = run(CitationFilter(0), ["I do not know [1]."])
    assert text == "I do not know ."


def test_the_feeder_and_feed_are_one_filter():
    pieces = ["Paris [1", "] and Lyon [7", "][2]. Then [", "3] and [2"]
    by_feed = CitationFilter(3)
    by_feeder = CitationFilter(3)
    shown = by_feeder.feeder()
    fed = [by_feed.feed(p) for p in pieces]
    assert [shown(p) for p in pieces] == fed == ["Paris ", "[1] and Lyon ", "[2]. Then ", "[3] and "]
    assert by_feeder.flush() == by_feed.flush() == "[2"  # unfinished: plain text
    assert by_feeder.cited == by_feed.cited == [1, 2, 3]
