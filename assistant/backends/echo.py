"""The `echo` backend: a fast, deterministic stand-in for a model, so the server can be tested quickly.

It answers "Echo: <question> [1]" (the citation only when the prompt carries numbered sources), or the
fixed reply its settings give for that question, word by word, and counts tokens with a fixed rule. It
goes through the same registry as real backends.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, AsyncIterator, Literal

import anyio

from assistant.backends.base import BackendHealth, GenParams, Message

if TYPE_CHECKING:
    from assistant.settings import Settings

SOURCE_LINE = re.compile(r"^\[1\] ", re.MULTILINE)


def echo_tokens(text: str) -> int:
    """A deterministic token count: one token per started 8 characters of every whitespace-separated word."""
    return sum(math.ceil(len(word) / 8) for word in text.split())


def question_of(messages: list[Message]) -> str:
    """The question the prompt asks: the last user message, or its final "Question: ..." in completion style."""
    users = [m["content"] for m in messages if m["role"] == "user"]
    last = users[-1] if users else ""
    tail = last.rstrip()
    if "Question: " in tail and tail.endswith("Answer:"):
        last = tail.rsplit("Question: ", 1)[1][: -len("Answer:")]
    elif "</sources>\n\nQuestion: " in tail:  # chat style: the sources, the question, then a reminder
        last = tail.rsplit("</sources>\n\nQuestion: ", 1)[1].split("\n\n", 1)[0]
    return " ".join(last.split())


class EchoBackend:
    name = "echo"
    model = "echo"

    def __init__(self, context_window: int = 4096, prompt_style: Literal["chat", "completion"] = "chat", delay_s: float = 0.0,
                 replies: dict[str, str] | None = None) -> None:
        self.context_window = context_window
        self.prompt_style = prompt_style
        self.delay_s = delay_s
        # fixed answers, keyed by the question with its whitespace collapsed (as question_of gives it)
        self.replies = {" ".join(q.split()): a for q, a in (replies or {}).items()}

    def count_tokens(self, messages: list[Message]) -> int:
        """Four tokens of framing per message plus `echo_tokens` of its content, and two to start the answer."""
        return sum(4 + echo_tokens(m["content"]) for m in messages) + 2

    def likely_tokens(self, messages: list[Message]) -> int | None:
        return None  # counting is local and cheap

    def reply_for(self, messages: list[Message]) -> str | None:
        """The fixed reply to the question the last user message asks (as all of it, or after "Question: ")."""
        users = [m["content"] for m in messages if m["role"] == "user"]
        last = " ".join(users[-1].split()) if users else ""
        asked = [q for q in self.replies if last == q or f"Question: {q}" in last]
        return self.replies[max(asked, key=len)] if asked else None

    def answer_for(self, messages: list[Message]) -> str:
        reply = self.reply_for(messages)
        if reply is not None:
            return reply
        text = f"Echo: {question_of(messages)}"
        # The question's own message (or the system prompt) holds its sources; a worked example before it does not count.
        if messages and any(SOURCE_LINE.search(m["content"]) for m in (messages[0], messages[-1])):
            text += " [1]"
        return text

    async def stream(self, messages: list[Message], params: GenParams) -> AsyncIterator[str]:
        words = self.answer_for(messages).split(" ")
        for i, word in enumerate(words[: params.max_tokens]):
            await anyio.sleep(self.delay_s)  # also a checkpoint: a closed or cancelled stream stops here
            yield word if i == 0 else " " + word

    async def health(self) -> BackendHealth:
        return BackendHealth(ok=True, detail="deterministic echo backend", model=self.model)

    async def aclose(self) -> None:
        return None


def create_echo(settings: "Settings") -> EchoBackend:
    e = settings.echo
    return EchoBackend(e.context_window, e.prompt_style, e.delay_s, e.replies)
