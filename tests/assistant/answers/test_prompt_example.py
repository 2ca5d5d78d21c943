"""The worked exchange shows the answer the rules ask for: a question in the asker's words, with two parts
and a yes/no whose answer is a condition, answered in the source's words, the condition stated, both parts
answered, each sentence supported by the source it cites (the product's own check). A small model copies
this shape more than it follows the rules, so the shape is what is tested. And the instructions stay short
enough to leave most of the CPU prompt cap to the sources."""

from __future__ import annotations

import re

import pytest

from assistant.answers.prompts import EXAMPLE, EXAMPLE_SOURCES, REMINDER, SYSTEM_PROMPT
from assistant.answers.support import check_answer
from assistant.answers.text_units import units
from assistant.backends.base import Message

BLOCK = re.compile(r"\[(\d+)\] [^\n]*\n(.*?)(?=\n\n\[\d+\]|\n</sources>)", re.S)


def example_sources() -> dict[int, str]:
    return {int(n): text for n, text in BLOCK.findall(EXAMPLE_SOURCES)}


def example_question() -> str:
    return EXAMPLE[0]["content"].split("Question: ", 1)[1].split("\n\n", 1)[0]


def test_each_sentence_of_the_example_answer_is_supported_by_the_source_it_cites():
    sources = example_sources()
    check = check_answer(EXAMPLE[1]["content"], sources)
    assert len(sources) == 2 and len(check.sentences) == 2
    assert all(s.supported for s in check.sentences) and check.citation_precision == 1.0 and not check.abstained


def test_the_example_answer_uses_the_sources_words_not_the_askers():
    question, answer, source = example_question(), EXAMPLE[1]["content"], example_sources()[2]
    asked, said, held = set(units(question)), set(units(answer)), set(units(source))
    assert question.count(",") and question.endswith("?")  # two parts, one a yes/no
    # every word the answer says is the source's ("guest", "sign"), none only the question's ("friend", "check")
    assert said <= held and asked - held and not said & (asked - held)
    assert "only with" in answer and "only with" in source  # the condition, stated as the source states it


def test_the_rules_and_the_reminder_ask_for_the_sources_words():
    assert "every part of the question" in SYSTEM_PROMPT and "in their words" in SYSTEM_PROMPT
    assert "sources' own words" in REMINDER["en"] and EXAMPLE[0]["content"].endswith(REMINDER["en"])


@pytest.mark.slow
def test_the_instructions_leave_most_of_the_cpu_cap_to_the_sources():
    """Counted with the packaged model's own tokenizer and chat template (vocab only)."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from assistant.backends.llamacpp import CPU_PROMPT_TOKENS, LlamaCppBackend, packaged_model_path

    path = packaged_model_path()
    if not path.is_file():
        pytest.skip(f"the packaged model is not downloaded ({path})")
    backend = LlamaCppBackend(llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False), model=path.name)
    bare = backend.count_tokens([Message(role="system", content=SYSTEM_PROMPT), *EXAMPLE,
                                 Message(role="user", content=f"Question: ?\n\n{REMINDER['en']}")])
    assert bare <= 0.35 * CPU_PROMPT_TOKENS, bare
