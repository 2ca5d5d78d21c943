"""A question with a word no document uses is answered 'not in the documents' without the model."""

from __future__ import annotations

import pytest

from assistant.answers import absent_terms
from assistant.answers.absent_terms import (MIN_PASSAGES, RARE_SHARE, absent_words, is_identifier, not_in_documents,
                                            question_words, unmatched_words)
from assistant.answers.rag import AnswerPolicy
from tests.support.answering import answer
from assistant.backends.factory import create_backend
from assistant.answers.support import abstained
from indexes.retrieval.retriever import Retriever
from tests.support.stores import write_pages


def test_the_question_words_are_its_latin_words_without_stop_words_numbers_or_cjk():
    words = question_words("What is Flask's Wi-Fi password in 2024 at the 悉尼 office? The office!")
    assert list(words) == ["Flask", "Wi-Fi", "password", "office"]
    assert words["Wi-Fi"] == {"wi", "fi"}


@pytest.mark.parametrize("word, expected", [
    ("stream_with_context", True), ("Blueprint.register", True), ("DispatchingJinjaLoader", True),
    ("GitHub", True), ("Sydney", False), ("TTS", False), ("alive", False),
])
def test_identifiers_are_snake_case_dotted_or_capitalised_inside(word, expected):
    assert is_identifier(word) is expected


def test_a_word_is_unmatched_when_no_unit_of_it_is_in_the_sources_or_their_places():
    shown = ["The office Wi-Fi password is on the wall.", "Travel — travel/booking.md:1-4"]
    assert unmatched_words("What is the Wi-Fi password at the Sydney office?", shown) == ["Sydney"]
    assert unmatched_words("Which booking rules apply?", shown) == ["rules", "apply"]
    assert unmatched_words("Which bookings apply?", ["rules"] + shown) == ["apply"], "stemmed: bookings = booking"


def test_a_question_naming_an_identifier_the_sources_hold_has_no_unmatched_words():
    shown = ["def stream_with_context(generator):\n    return wrapped(generator)"]
    question = "Where is stream_with_context implemented, which keeps the request context alive?"
    assert unmatched_words(question, shown) == []
    assert unmatched_words("Where is send_file, which keeps it alive?", shown) != [], "an identifier it lacks"


def test_absent_words_are_the_unmatched_ones_at_most_rare_share_of_the_passages_hold():
    asked: list[tuple[list[str], float]] = []

    def count(words: list[str], share: float) -> tuple[int, dict[str, int]]:
        asked.append((words, share))
        return 2000, {"sydney": 0, "rules": 4, "apply": 5}  # 0.002 x 2000 = 4 passages at most

    assert absent_words("Which rules apply at the Sydney office?", ["The office rules."], count) == ["Sydney"]
    assert asked == [(["apply", "sydney"], RARE_SHARE)], "only the unmatched words are counted, lower-cased"
    assert absent_words("Which rules apply?", ["Rules apply."], count) == [] and len(asked) == 1, "nothing to count"


def test_a_collection_under_min_passages_has_no_absent_words():
    def count(words: list[str], share: float) -> tuple[int, dict[str, int]]:
        return MIN_PASSAGES - 1, {w: 0 for w in words}

    assert absent_words("How early must flights be booked?", ["Book flights 14 days ahead."], count) == []


def test_the_statement_abstains_and_names_the_words_in_the_question_language():
    en, zh = not_in_documents("en", ["Sydney", "OAuth"]), not_in_documents("zh", ["Sydney"])
    assert en == "The documents do not contain the answer to this question. None of them mentions “Sydney”, “OAuth”."
    assert zh == "文档中没有这个问题的答案。没有文档提到“Sydney”。"
    assert abstained(en) and abstained(zh)


DOCS = {
    "travel/booking.md": ("Booking travel", ["Book flights through the travel desk at least 14 days before departure.",
                                            "Hotels need the approval of your manager."]),
    "office/wifi.md": ("Office Wi-Fi", ["The office Wi-Fi password is printed on the wall of the kitchen."]),
}


@pytest.fixture
def retriever(store, embedder):
    write_pages(store, embedder, "handbook", DOCS, headings=True)
    write_pages(store, embedder, "other", {"sydney.md": ("Sydney", ["The Sydney office opens at nine."])})
    return Retriever(store, embedder)


def test_term_counts_count_the_passages_of_the_collections_asked(retriever):
    chunks, counts = retriever.term_counts(["sydney", "office", "booking"], ["handbook"], 1.0)
    assert chunks == 3 and counts == {"sydney": 0, "office": 1, "booking": 2}
    _, capped = retriever.term_counts(["booking"], ["handbook"], 0.1)
    assert capped == {"booking": 1}, "counted only until the count exceeds the share (0.1 x 3 passages: 0)"
    chunks, counts = retriever.term_counts(["sydney"], ["handbook", "other"], 0.5)
    assert chunks == 4 and counts == {"sydney": 1}, "the other collection's passage counts once it is asked"


async def events(question, retriever, settings):
    backend = create_backend(settings)
    try:
        return [e async for e in answer(question, ["handbook"], retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings))]
    finally:
        await backend.aclose()


async def test_a_question_with_an_absent_word_is_answered_without_the_model(retriever, settings_factory, monkeypatch):
    monkeypatch.setattr(absent_terms, "MIN_PASSAGES", 3)  # the rule weighs these four passages
    settings = settings_factory(retrieval={"k": 2}, generation={"absent_words": "on"})
    got = await events("What is the Wi-Fi password at the Sydney office?", retriever, settings)
    assert [e.type for e in got] == ["retrieved", "token", "sources", "done"]
    done = got[-1].data
    assert done["answer"] == got[1].data["text"] == not_in_documents("en", ["Sydney"])
    assert done["absent_words"] == ["Sydney"] and done["check"]["abstained"] is True
    assert "Echo" not in done["answer"], "the echo backend was not asked"
    assert done["prompt_tokens"] == done["completion_tokens"] == 0, "usage: no model read or wrote a token"
    assert [s["cited"] for s in got[-2].data["sources"]] == [False, False], "the closest sources, none cited"

    answered = await events("What is the office Wi-Fi password?", retriever, settings)
    assert answered[-1].data["answer"].startswith("Echo:") and "absent_words" not in answered[-1].data

    off = settings_factory(retrieval={"k": 2}, generation={"absent_words": "off"})
    asked = await events("What is the Wi-Fi password at the Sydney office?", retriever, off)
    assert asked[-1].data["answer"].startswith("Echo:"), "off: the model answers whatever is asked"


def test_the_rule_is_an_opt_in_and_auto_is_on_for_the_packaged_models_only(settings_factory):
    from assistant.answers.rag import abstains_on_absent_words

    assert not abstains_on_absent_words(settings_factory(backend="llamacpp")), "off unless asked for"
    auto = {"absent_words": "auto"}
    assert abstains_on_absent_words(settings_factory(backend="llamacpp", generation=auto))
    assert not abstains_on_absent_words(settings_factory(backend="llamacpp", llamacpp={"model_path": "/m.gguf"},
                                                         generation=auto))
    assert not abstains_on_absent_words(settings_factory(backend="openai", generation=auto))
