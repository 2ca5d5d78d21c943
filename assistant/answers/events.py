"""What an answer says while it is made: one type per event, a union the doors match on.

In order: `Retrieved` (the prompt's sources, none cited yet) before the backend's first token, `Progress`
while the engine reads the prompt (a door that asks for it), `Token` pieces, `Sources` (cited first, each
with its support), then `Done`, or one `Failed` that ends the stream. Each event has the `type` and `data` its wire form takes (`retrieved`, `progress`, `token`,
`sources`, `done`, `error`), so that a door serialises every event in one place (routes/sse.py for /api/ask).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Union

# A plain event's wire form is its fields as they are (read-only), read with no call of ours (`vars`): a
# token's passes here for every piece of every answer.
FIELDS = property(vars, doc="the event's fields, as its wire form")


@dataclass(frozen=True)
class Retrieved:
    """The sources the prompt shows the model, in prompt order, every `cited` false."""

    sources: list[dict]
    type: ClassVar[str] = "retrieved"

    data = FIELDS


@dataclass(frozen=True)
class Progress:
    """How far the engine has read the prompt before its first token (`done` of `total` tokens, `cached` of
    them kept from an earlier prompt): only for a door that asked for it (the page's stream), and only
    from a backend that can tell (the in-process llama.cpp, llama-server)."""

    done: int
    total: int
    cached: int = 0
    type: ClassVar[str] = "progress"

    data = FIELDS


@dataclass(frozen=True)
class Token:
    """A piece of the answer's text, as the model wrote it (citations renumbered)."""

    text: str
    type: ClassVar[str] = "token"

    data = FIELDS


@dataclass(frozen=True)
class Sources:
    """The prompt's sources once the answer is checked: the cited ones first, each with its `support`."""

    sources: list[dict]
    type: ClassVar[str] = "sources"

    data = FIELDS


@dataclass(frozen=True)
class Done:
    """The answer as the client shows it (`answer`: the model's checked text, or the statement that replaced
    it), with its counts, timings and check; `extra` holds what some answers add (a document's mode, the
    conversation's turn, `model_answer`)."""

    answer: str
    model: str | None
    prompt_tokens: int
    timings: dict
    check: dict | None = None
    completion_tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    type: ClassVar[str] = "done"

    @property
    def data(self) -> dict:
        out: dict[str, Any] = {"answer": self.answer, "prompt_tokens": self.prompt_tokens}
        if self.completion_tokens is not None:
            out["completion_tokens"] = self.completion_tokens
        out["model"] = self.model
        out["timings"] = self.timings
        if self.check is not None:
            out["check"] = self.check
        out.update(self.extra)
        return out

    def get(self, key: str, default: Any = None) -> Any:
        """A field of the wire form, for readers that take what is there (`model_answer`, `document_mode`…)."""
        return self.data.get(key, default)

    def with_extra(self, **extra: Any) -> "Done":
        return Done(self.answer, self.model, self.prompt_tokens, self.timings, self.check, self.completion_tokens,
                    {**self.extra, **extra})


@dataclass(frozen=True)
class Failed:
    """The failure that ends an answer: a message safe to show, and the machine `code` of errors.py's
    vocabulary (`busy` with `retry_after`)."""

    message: str
    code: str
    retry_after: int | None = None
    type: ClassVar[str] = "error"

    @property
    def data(self) -> dict:
        out: dict[str, Any] = {"message": self.message, "code": self.code}
        if self.retry_after is not None:
            out["retry_after"] = self.retry_after
        return out


Event = Union[Retrieved, Progress, Token, Sources, Done, Failed]
