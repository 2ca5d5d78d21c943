"""A follow-up's prompt starts with what its first turn's prompt started with (the rules and the worked
example), counted in the default packaged model's own tokens through its own chat template: the in-process
llama.cpp backend keeps the longest common prefix of the last prompt, so that part is not read again. The
first turn's sources are not in the follow-up (its history holds the questions and answers only), so the
shared part ends where the first turn's question message began."""

from __future__ import annotations

import pytest

from assistant.answers.prompts import EXAMPLE, SYSTEM_PROMPT, render
from assistant.backends.base import Message

pytestmark = pytest.mark.slow

FIRST_SOURCES = ["[1] Leave — handbook/leave.md\nAnnual leave is twenty-eight days a year, bank holidays included."]
FOLLOW_SOURCES = ["[1] Leave — handbook/leave.md\nUp to five unused days may be carried over with the manager's approval."]
Q1, A1 = "How many days of annual leave are there?", "Annual leave is twenty-eight days a year, bank holidays included [1]."
Q2 = "Can unused days be carried over?"


@pytest.fixture(scope="module")
def backend():
    """The default packaged model's tokenizer and chat template alone (vocab only: about a second)."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from assistant.backends.llamacpp import LlamaCppBackend, packaged_model_path

    path = packaged_model_path()
    if not path.is_file():
        pytest.skip(f"the packaged model is not downloaded ({path})")
    return LlamaCppBackend(llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False), model=path.name)


def shared(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_the_follow_up_starts_with_the_first_turns_rules_and_example(backend):
    first = render("chat", FIRST_SOURCES, [], Q1)
    history = [Message(role="user", content=Q1), Message(role="assistant", content=A1)]
    follow = render("chat", FOLLOW_SOURCES, history, Q2)
    first_tokens, follow_tokens = backend.render(first)[0], backend.render(follow)[0]
    n = shared(first_tokens, follow_tokens)
    common = backend.llm.detokenize(first_tokens[:n]).decode("utf-8", "replace")
    assert SYSTEM_PROMPT.strip() in common and all(m["content"] in common for m in EXAMPLE), common[-200:]
    # nothing of either turn's own part is in the shared prefix: it ends where the first turn's question began
    assert "<sources>\n[1] Leave" not in common and Q1 not in common
    rest = backend.llm.detokenize(follow_tokens[n:]).decode("utf-8", "replace")
    assert rest.index(Q1) < rest.index(A1) < rest.index(Q2)  # then the history, oldest first, then the new turn
    # the stable part is the most of the first turn's prompt that any follow-up can share
    stable = backend.render([Message(role="system", content=SYSTEM_PROMPT), *EXAMPLE])[0]
    assert n >= shared(stable, first_tokens) and n > len(first_tokens) // 2, (n, len(first_tokens))
