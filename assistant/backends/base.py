"""The backend interface and the registry every backend (the echo test backend included) goes through."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, AsyncIterator, Callable, Literal, Protocol, TypedDict

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

    def stream(self, messages: list[Message], params: GenParams) -> AsyncIterator[str]:
        """Text pieces of the answer as they are generated; closing the iterator aborts the request."""
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


BackendFactory = Callable[["Settings"], Backend]
BACKENDS: dict[str, BackendFactory] = {}


def register(name: str) -> Callable[[BackendFactory], BackendFactory]:
    def deco(factory: BackendFactory) -> BackendFactory:
        BACKENDS[name] = factory
        return factory

    return deco


def create_backend(settings: "Settings") -> Backend:
    """Build the backend the settings name. Heavy libraries are imported by the factory, lazily."""
    import assistant.backends  # noqa: F401  (registers the built-in backends)

    try:
        factory = BACKENDS[settings.backend]
    except KeyError:
        raise BackendError(f"unknown backend {settings.backend!r}; known: {', '.join(sorted(BACKENDS))}") from None
    return factory(settings)
