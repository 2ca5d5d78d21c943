"""The backend interface, and `create_backend`, which builds any backend of the registry (registry.py),
the echo test backend included."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, AsyncIterator, Literal, Protocol, TypedDict

if TYPE_CHECKING:
    from assistant.settings import Settings


class Message(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass
class GenParams:
    max_tokens: int = 384
    temperature: float = 0.2
    stop: list[str] = field(default_factory=list)
    progress: bool = False  # a backend that can tells how far it has read the prompt (PromptProgress pieces)
    # A short request beside the answers (a follow-up's rewrite): an engine that holds one prompt at a time
    # keeps the one it held, so the next answer reuses its start.
    aside: bool = False


@dataclass(frozen=True)
class PromptProgress:
    """How much of the prompt the engine has read before its first token: `done` of `total` tokens, `cached`
    of them kept from an earlier prompt. A stream asked for it (`GenParams.progress`) yields these between its
    text pieces; one that cannot tell yields none."""

    done: int
    total: int
    cached: int = 0


@dataclass
class BackendHealth:
    ok: bool
    detail: str = ""
    model: str = ""


class BackendError(RuntimeError):
    """The backend failed or cannot be reached; the message is safe to show to the user."""


class BackendBusy(BackendError):
    """The backend's queue is full: try again after `retry_after` seconds."""

    def __init__(self, message: str, retry_after: int = 5) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Backend(Protocol):
    name: str
    model: str
    context_window: int
    # "chat": messages go through a chat template. "completion": a base model without one; the
    # prompt builder then writes a plain completion prompt and stop sequences.
    prompt_style: Literal["chat", "completion"]

    def count_tokens(self, messages: list[Message]) -> int:
        """Exact prompt tokens for these messages, as the backend will render them."""
        ...

    def likely_tokens(self, messages: list[Message]) -> int | None:
        """A cautious guess from the exact counts made so far, where an exact count is a trip to a server
        (the prompt may then be sent first and counted beside the engine's prefill); else None."""
        ...

    def stream(self, messages: list[Message], params: GenParams) -> AsyncIterator[str]:
        """Text pieces of the answer as they are generated; closing the iterator aborts the request. With
        `params.progress`, PromptProgress items may come before the first piece."""
        ...

    async def health(self) -> BackendHealth: ...

    async def aclose(self) -> None: ...


def completion_text(messages: list[Message]) -> str:
    """The raw text a completion-style backend (a base model, no chat template) is given.

    One message is passed through as it is (the prompt builder writes complete completion prompts);
    several become a plain transcript that ends where the assistant's answer begins.
    """
    if len(messages) == 1:
        return messages[0]["content"]
    lines = [m["content"] if m["role"] == "system" else f"{m['role'].capitalize()}: {m['content']}" for m in messages]
    return "\n\n".join(lines) + "\n\nAssistant:"
