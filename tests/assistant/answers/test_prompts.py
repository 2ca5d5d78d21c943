"""The prompt builder: stable prefix, numbered sources best-first, never over the token budget."""

from __future__ import annotations

import pytest

from assistant.backends.base import GenParams, completion_text
from assistant.backends.factory import create_backend
from assistant.backends.echo import EchoBackend
from assistant.answers.prompts import COMPLETION_PREFIX, EXAMPLE, REMINDER, SYSTEM_PROMPT, PromptTooLong, build_prompt, prompt_location
from indexes.location import FIELDS, Location
from indexes.retrieval.retriever import Hit

WORDS = "the quick brown fox jumps over the lazy dog while reading configuration files carefully".split()


def hit(i: int, n_words: int = 60, **kw) -> Hit:
    text = " ".join(f"{WORDS[(i + j) % len(WORDS)]}{i}" for j in range(n_words))
    values = dict(
        chunk_id=100 + i, document_id=i, collection="docs", path=f"docs/page{i}.md", title=f"Page {i}", kind="md",
        text=text, snippet=text[:80], heading_path=f"Guide > Part {i}", anchor=f"part-{i}", page=None,
        line_start=None, line_end=None, symbol="", score=1.0 / (i + 1),
    )
    values.update(kw)
    place = {name: values.pop(name) for name in FIELDS}
    return Hit(**values, location=Location(**place))


def test_chat_prompt_layout(settings_factory):
    backend = create_backend(settings_factory())
    hits = [hit(0), hit(1, path="src/app.py", line_start=10, line_end=42, symbol="make_app"), hit(2, page=3, path="a.pdf")]
    p = build_prompt("How do I start?", hits, backend, max_answer_tokens=64, margin=8)
    system, user = p.messages[0], p.messages[-1]
    assert system == {"role": "system", "content": SYSTEM_PROMPT} and p.messages[1:-1] == EXAMPLE  # a worked exchange
    # The sources sit in the question's own message, right before the question and a reminder in its language.
    assert user["role"] == "user" and user["content"].startswith("<sources>\n[1] Page 0 — docs/page0.md\n")
    assert "[2] Page 1 — src/app.py:10-42\nSection: Guide > Part 1\nSymbol: make_app\n" in user["content"]
    assert "[3] Page 2 — a.pdf:p.3\n" in user["content"]
    assert user["content"].endswith("\n</sources>\n\nQuestion: How do I start?\n\n" + REMINDER["en"])
    zh = build_prompt("年假有几天？", hits, backend, max_answer_tokens=64, margin=8)
    assert zh.messages[0] == system and zh.messages[-1]["content"].endswith("年假有几天？\n\n" + REMINDER["zh"])
    assert p.sources_used == hits and p.stop == [] and not p.truncated
    assert p.prompt_tokens == backend.count_tokens(p.messages) <= p.budget == backend.context_window - 64 - 8


def test_prompt_location_names_pages_and_lines():
    assert prompt_location("docs/a.md", Location(heading_path="Guide", anchor="guide")) == "docs/a.md"
    assert prompt_location("a.pdf", Location(page=3)) == "a.pdf:p.3"
    assert prompt_location("src/app.py", Location(line_start=10, line_end=42)) == "src/app.py:10-42"
    assert prompt_location("src/app.py", Location(line_start=10)) == "src/app.py:10-10"
    assert prompt_location("a.pdf", Location(page=2, line_start=5, line_end=9)) == "a.pdf:p.2:5-9"

def test_completion_prompt_layout_and_stops():
    backend = EchoBackend(context_window=2048, prompt_style="completion")
    history = [{"role": "user", "content": "What is it?"}, {"role": "assistant", "content": "A fox [1]."}]
    p = build_prompt("Why?", [hit(0)], backend, 64, 8, history=history)
    (message,) = p.messages
    text = message["content"]
    # what repeats from turn to turn first (the instructions, the earlier turns), this turn's sources last
    assert text.startswith(COMPLETION_PREFIX + "Question: What is it?\nAnswer: A fox [1].\n\nContext:\n<sources>\n[1] Page 0")
    assert text.endswith("</sources>\n\nQuestion: Why?\nAnswer:")
    later = history + [{"role": "user", "content": "Why?"}, {"role": "assistant", "content": "It is quick [1]."}]
    next_text = build_prompt("How?", [hit(1)], backend, 64, 8, history=later).messages[0]["content"]
    assert next_text.startswith(text.split("Context:")[0] + "Question: Why?\nAnswer: It is quick [1].\n\nContext:")
    assert p.stop == ["\n\n", "Question:"] and p.history_used == 2
    assert completion_text(p.messages) == text


def test_the_prefix_is_the_same_bytes_whatever_the_question():
    backend = EchoBackend(context_window=4096)
    a = build_prompt("first question", [hit(1)], backend, 64, 8)
    b = build_prompt("another one entirely", [hit(5), hit(6)], backend, 64, 8)
    assert a.messages[:-1] == b.messages[:-1] == [{"role": "system", "content": SYSTEM_PROMPT}, *EXAMPLE]


@pytest.mark.parametrize("style", ["chat", "completion"])
@pytest.mark.parametrize("window", [460, 500, 560, 700, 1000, 1400])  # from just above the instructions
def test_fills_best_first_and_never_exceeds_the_budget(style, window):
    backend = EchoBackend(context_window=window, prompt_style=style)
    hits = [hit(i) for i in range(6)]
    p = build_prompt("Which fox jumps over the lazy dog?", hits, backend, max_answer_tokens=48, margin=16)
    assert p.prompt_tokens == backend.count_tokens(p.messages) <= window - 48 - 16
    assert p.sources_used == hits[: len(p.sources_used)]  # a prefix of the ranking: best first
    if len(p.sources_used) < len(hits):  # something was left out: the budget is (nearly) used up
        assert p.prompt_tokens > p.budget - 40


class CountingEcho(EchoBackend):
    """The echo backend, counting how often the whole prompt is tokenized (each is a full pass, or HTTP)."""

    calls = 0

    def count_tokens(self, messages):
        self.calls += 1
        return super().count_tokens(messages)


def test_prompt_is_tokenized_once_when_every_source_fits_and_few_times_otherwise():
    roomy = CountingEcho(context_window=8192)
    hits = [hit(i) for i in range(8)]
    p = build_prompt("Which fox jumps?", hits, roomy, 64, 8)
    assert roomy.calls == 1 and p.sources_used == hits and not p.truncated
    tight = CountingEcho(context_window=700)
    p = build_prompt("Which fox jumps?", hits, tight, 64, 8)
    assert 0 < len(p.sources_used) < len(hits) and p.prompt_tokens <= p.budget
    assert tight.calls <= 1 + 1 + 3 + 12  # all, bare, bisection over 8, the cut's bisection


def test_a_source_too_big_alone_is_cut_not_dropped():
    backend = EchoBackend(context_window=600)
    big = hit(0, n_words=2000)
    p = build_prompt("What does the fox do?", [big, hit(1)], backend, 64, 8)
    assert p.sources_used == [big] and p.truncated
    assert p.prompt_tokens <= p.budget
    shown = p.messages[-1]["content"]
    assert " …\n</sources>\n\nQuestion: " in shown and big.text[:200] in shown and big.text not in shown


def test_question_alone_too_long_is_an_error():
    backend = EchoBackend(context_window=300)
    with pytest.raises(PromptTooLong, match="prompt tokens but only"):
        build_prompt("word " * 400, [hit(0)], backend, 64, 8)
    with pytest.raises(PromptTooLong):
        build_prompt("short", [hit(0)], backend, max_answer_tokens=300, margin=8)


def test_old_history_gives_way_to_sources():
    backend = EchoBackend(context_window=900)
    history = []
    for i in range(30):
        history += [{"role": "user", "content": f"question {i} " + "pad " * 10}, {"role": "assistant", "content": f"answer {i}"}]
    p = build_prompt("latest?", [hit(0), hit(1)], backend, 64, 8, history=history)
    kept = p.messages[1 + len(EXAMPLE):-1]
    assert 0 < len(kept) < len(history) and kept == history[-len(kept):] and kept[0]["role"] == "user"
    assert len(p.sources_used) == 2 and p.prompt_tokens <= p.budget


def test_no_hits_still_gives_a_prompt():
    backend = EchoBackend()
    p = build_prompt("anything?", [], backend, 64, 8)
    assert p.sources_used == [] and "(no sources were found)" in p.messages[-1]["content"]


@pytest.mark.slow
async def test_real_llama_tokenizer_counts_and_budget(llama):
    """With the real GGUF tokenizer (n_ctx 512): exact counts, under budget, sources cut to fit, and it runs."""
    hits = [hit(i, n_words=120) for i in range(5)]
    p = build_prompt("Which fox jumps over the lazy dog?", hits, llama, max_answer_tokens=32, margin=8)
    (message,) = p.messages  # the packaged base model has no chat template: one completion prompt
    tokens = llama.llm.tokenize(message["content"].encode("utf-8"), add_bos=True, special=True)
    assert p.prompt_tokens == len(tokens) <= 512 - 32 - 8
    assert 1 <= len(p.sources_used) < len(hits) and p.truncated
    assert p.prompt_tokens > p.budget - 40  # the cut source filled the budget
    stream = llama.stream(p.messages, GenParams(max_tokens=32, temperature=0, stop=p.stop))
    pieces = [piece async for piece in stream]  # no context overflow
    assert stream.prompt_tokens == p.prompt_tokens and all(isinstance(x, str) for x in pieces)


def test_a_backends_prompt_cap_is_the_budget_when_below_the_windows():
    backend = EchoBackend(context_window=4096)
    hits = [hit(i) for i in range(8)]
    whole = build_prompt("Which fox jumps over the lazy dog?", hits, backend, max_answer_tokens=48, margin=16)
    backend.max_prompt_tokens = 700  # what the in-process llama.cpp sets on a CPU
    capped = build_prompt("Which fox jumps over the lazy dog?", hits, backend, max_answer_tokens=48, margin=16)
    assert whole.budget == 4096 - 48 - 16 and whole.prompt_tokens > 700
    assert capped.budget == 700 and capped.prompt_tokens <= 700 and capped.sources_used == hits[: len(capped.sources_used)]
    backend.max_prompt_tokens = 9000  # a cap above the window's changes nothing
    assert build_prompt("Which fox jumps over the lazy dog?", hits, backend, 48, 16).budget == whole.budget
