"""Answers of the packaged base model do not loop: the line guard, and ten real questions over the
sample corpus that scripts/up.sh serves (docs/ and README.md as `docs`)."""

from __future__ import annotations

import asyncio

import pytest

from assistant.backends.repetition import LineRepeatGuard, line_key, repeated_lines

from tests.conftest import REPO


def run_guard(pieces: list[str], limit: int = 2) -> tuple[str, bool]:
    guard = LineRepeatGuard(limit)
    shown = "".join(guard.feed(p) for p in pieces) + guard.finish()
    return shown, guard.stopped


def test_a_looping_answer_ends_before_its_third_copy_of_a_line():
    loop = ["Using the ", "assistant — usage.md\n"] * 40
    shown, stopped = run_guard(["Intro.\n", *loop])
    assert stopped
    assert shown == "Intro.\n" + "Using the assistant — usage.md\n" * 2


def test_lines_are_compared_without_case_or_spacing():
    shown, stopped = run_guard(["A  b\n", "a b\n", "  A B  \n", "c\n"])
    assert stopped and shown == "A  b\na b\n"
    assert line_key("  A   B ") == "a b"


def test_numbered_items_saying_the_same_count_as_repeats():
    items = [f"{i}. Click on the collection name.\n" for i in range(1, 9)]
    shown, stopped = run_guard(["Steps:\n", *items])
    assert stopped and shown == "Steps:\n" + "".join(items[:2])
    assert repeated_lines("a. Test\nb. Test\nc. Test\n", 2) == {"test": 3}


def test_text_streams_on_unless_the_line_could_become_a_repeat():
    guard = LineRepeatGuard(1)
    assert guard.feed("hello wor") == "hello wor"  # nothing used up yet: released at once
    assert guard.feed("ld\n") == "ld\n"
    assert guard.feed("hel") == ""  # could be a second "hello world": held back
    assert guard.feed("p me\n") == "help me\n"  # it was not
    assert guard.feed("hello world") == ""
    assert guard.finish() == "" and guard.stopped  # a repeat without its newline is dropped too


def test_blank_lines_and_distinct_lines_pass_untouched():
    text = "one\n\n\ntwo\n\n- three\n- four\n1. five\n2. six\n"
    shown, stopped = run_guard(list(text))
    assert shown == text and not stopped
    assert repeated_lines("x\nx\nx\ny\n", 2) == {"x": 3}


def test_no_guard_when_switched_off():
    shown, stopped = run_guard(["x\n"] * 5, limit=0)
    assert shown == "x\n" * 5 and not stopped


QUESTIONS = [
    "How do I ingest my own documents?",
    "Which backends can answer questions?",
    "How are documents split into chunks?",
]


@pytest.mark.slow
@pytest.mark.long
def test_three_questions_over_the_sample_corpus_repeat_no_line_more_than_twice(tmp_path, embedder, make_services):
    """llama.cpp in-process with the packaged Gemma-3-270M (the fast base model, most prone to loop),
    default settings but two threads, answering the first questions a newcomer asks."""
    from assistant.answers.rag import AnswerPolicy
    from tests.support.answering import answer
    from assistant.settings import Settings
    from ingest.pipeline import ingest_paths

    settings = Settings(data_dir=tmp_path / "data", backend="llamacpp",
                        llamacpp={"n_threads": 2, "packaged_model": "gemma-3-270m"})

    def fill(store):
        ingest_paths(store, embedder, [str(REPO / "docs"), str(REPO / "README.md")], "docs")

    services = make_services(settings, fill)

    async def ask(question: str) -> str:
        text = ""
        async for event in answer(question, "docs", retriever=services.retriever, backend=services.backend,
                                  policy=AnswerPolicy.of(settings)):
            assert event.type != "error", event.data
            if event.type == "done":
                text = event.data["answer"]
        return text

    async def all_questions() -> list[str]:
        try:
            return [await ask(q) for q in QUESTIONS]
        finally:
            await services.backend.aclose()

    answers = asyncio.run(all_questions())
    # The base model sometimes ends at once with a blank line (the completion prompt's stop), with or
    # without these defaults; that is not what is measured here, but most questions must get an answer.
    answered = [a for a in answers if a.strip()]
    assert len(answered) >= len(QUESTIONS) // 2, f"too few answers: {dict(zip(QUESTIONS, answers))}"
    loops = {q: repeated_lines(a, 2) for q, a in zip(QUESTIONS, answers) if repeated_lines(a, 2)}
    assert not loops, f"answers repeating a line more than twice: {loops}"
