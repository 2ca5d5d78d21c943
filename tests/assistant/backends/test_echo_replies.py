"""The echo backend's fixed replies: a test states the answer a question gets, through the real prompt."""

from __future__ import annotations

from assistant.answers.prompts import render
from assistant.backends.base import GenParams
from assistant.backends.factory import create_backend

BLOCKS = ["[1] Lighthouse — lighthouse.md:1-4\nThe lighthouse was built in 1874."]
REPLY = "The lighthouse was built in 1874. [1] Its keeper's cat won a prize. [1]"


async def answer(backend, messages) -> list[str]:
    return [piece async for piece in backend.stream(messages, GenParams(max_tokens=100))]


async def test_a_question_with_a_fixed_reply_gets_it_word_by_word_in_both_prompt_styles(settings_factory):
    for style in ("chat", "completion"):
        backend = create_backend(settings_factory(
            backend="echo", echo={"prompt_style": style, "replies": {"When was  the lighthouse built?": REPLY}}))
        pieces = await answer(backend, render(style, BLOCKS, [], "When was the lighthouse built?"))
        assert "".join(pieces) == REPLY, style
        assert pieces[:2] == ["The", " lighthouse"]


async def test_other_questions_are_echoed(settings_factory):
    backend = create_backend(settings_factory(backend="echo", echo={"replies": {"When was the lighthouse built?": REPLY}}))
    assert "".join(await answer(backend, [{"role": "user", "content": "Who keeps it?"}])) == "Echo: Who keeps it?"
