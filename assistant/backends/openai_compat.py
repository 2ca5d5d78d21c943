"""Any OpenAI-compatible server (vLLM, llama.cpp's server, SGLang, Ollama...) through the `openai` client.

The server batches concurrent requests itself, so nothing here serializes them. What the server says
about itself (the model, the context window, prompt token counts, health) is openai_server.py's; this
module streams the answers.

A request asked for progress (`GenParams.progress`) of a server known to be llama-server (its tokenize
route) sends `return_progress`, and the `prompt_progress` of its chunks comes out as PromptProgress.

Every streamed request asks for the usage chunk (`stream_options.include_usage`): the engine's own
count of the tokens it generated is then the answer's `completion_tokens`, whatever the text shown.

Several base URLs (replicas of one model) share the load: each request goes to the replica with the
fewest requests in flight; one that cannot be reached is skipped for a while (see replicas.py) and a
request that could not connect moves on to the next. Each request has a total deadline (`timeout_s`)
besides the per-read one, and a connection lost mid-answer is a BackendError like any other failure.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Literal

from assistant.backends.base import BackendError, BackendHealth, GenParams, Message, PromptProgress, completion_text
from assistant.backends.openai_server import OpenAIServer, request_error, upstream_refusal
from assistant.backends.replicas import Replica
from assistant.security.redaction import redact_text

if TYPE_CHECKING:
    from assistant.settings import OpenAISettings, Settings


class OpenAIBackend:
    """Answers streamed from an OpenAI-compatible server, the least busy replica first; the model, the
    window and the counts are what `server` (openai_server.py) learns from it."""

    name = "openai"

    def __init__(self, cfg: "OpenAISettings", tokenize_route: str | None = None) -> None:
        import httpx
        import openai

        self._openai = openai
        self._httpx = httpx
        self.cfg = cfg
        self.server = OpenAIServer(cfg, tokenize_route)
        self.replicas = self.server.replicas
        self.prompt_style: Literal["chat", "completion"] = cfg.prompt_style

    @property
    def tokenize_route(self) -> str | None:
        """How prompts are counted: "vllm", "llama-server" or "llamacpp" (the server's endpoint),
        "estimate", or None before the first count."""
        return self.server.tokenize_route

    @property
    def base_url(self) -> str:
        """The first replica's /v1 URL (the only one, usually)."""
        return self.replicas.all[0].base_url

    @property
    def client(self) -> Any:
        return self.replicas.all[0].client

    @property
    def model(self) -> str:
        return self.server.model

    @property
    def context_window(self) -> int:
        return self.server.context_window

    def count_tokens(self, messages: list[Message]) -> int:
        """Exact when the server has a tokenize endpoint that fits the prompt style, else estimated."""
        return self.server.count_tokens(messages)

    def likely_tokens(self, messages: list[Message]) -> int | None:
        return self.server.likely_tokens(messages)

    # --- generation -----------------------------------------------------------------------------

    async def _open(self, replica: Replica, messages: list[Message], params: GenParams) -> Any:
        args: dict[str, Any] = dict(
            model=await self.server.served_model(replica), max_tokens=params.max_tokens, temperature=params.temperature, stream=True
        )
        if params.stop:
            args["stop"] = params.stop[:4]  # the OpenAI API accepts at most four
        extra = dict(self.cfg.sampling)
        if params.progress and self.tokenize_route == "llama-server":
            extra["return_progress"] = True  # llama-server's chunks then say how far it has read the prompt
        if extra:
            args["extra_body"] = extra
        args["stream_options"] = {"include_usage": True}
        # The raw streaming response: the client builds and sends the request and maps its errors; the
        # chunks are read as plain JSON (a typed object per token costs more than the rest of the path).
        if self.prompt_style == "chat":
            return await replica.client.chat.completions.with_raw_response.create(messages=messages, **args)
        return await replica.client.completions.with_raw_response.create(prompt=completion_text(messages), **args)

    def stream(self, messages: list[Message], params: GenParams) -> "RemoteAnswer":
        """Stream from the least busy replica; one that cannot be reached is set aside and the next tried."""
        answer = RemoteAnswer()
        answer.pieces = self._pieces(answer, messages, params)
        return answer

    async def _pieces(self, answer: "RemoteAnswer", messages: list[Message], params: GenParams
                      ) -> AsyncIterator[str | PromptProgress]:
        o = self._openai
        deadline = time.monotonic() + self.cfg.timeout_s
        response, replica, failure = None, None, None
        for candidate in self.replicas.candidates():
            self.replicas.acquire(candidate)
            try:
                response = await self._open(candidate, messages, params)
            except (o.APIConnectionError, o.APITimeoutError) as exc:  # not reached: nothing was generated
                self.replicas.release(candidate)
                self.replicas.mark_down(candidate, str(request_error(exc, candidate.shown_url)))
                failure = request_error(exc, candidate.shown_url if len(self.replicas.all) == 1 else self.replicas.shown)
                continue
            except o.APIError as exc:
                self.replicas.release(candidate)
                raise request_error(exc, candidate.shown_url) from exc
            except BaseException:
                self.replicas.release(candidate)
                raise
            replica = candidate
            break
        if replica is None:
            raise failure or BackendError(f"backend unreachable at {self.replicas.shown}")
        chat = self.prompt_style == "chat"
        try:
            async for line in response.http_response.aiter_lines():
                if time.monotonic() > deadline:
                    raise BackendError(f"the answer took longer than {self.cfg.timeout_s:g} s (timeout_s) at {replica.shown_url}")
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                chunk = json.loads(data)
                if chunk.get("error"):
                    error = chunk["error"]
                    message = error.get("message", error) if isinstance(error, dict) else error
                    raise upstream_refusal(replica.shown_url, error.get("code") if isinstance(error, dict) and
                                           isinstance(error.get("code"), int) else None, message)
                if params.progress and (progress := prompt_progress(chunk.get("prompt_progress"))):
                    yield progress
                usage = chunk.get("usage")
                if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                    answer.completion_tokens = usage["completion_tokens"]
                choices = chunk.get("choices")
                if not choices:
                    continue
                text = (choices[0].get("delta") or {}).get("content") if chat else choices[0].get("text")
                if text:
                    yield text
        except (o.APIError, self._httpx.HTTPError) as exc:
            if isinstance(exc, (o.APIConnectionError, self._httpx.TransportError)):
                self.replicas.mark_down(replica, redact_text(f"{type(exc).__name__}: {exc}"))
            raise request_error(exc, replica.shown_url) from exc
        finally:
            self.replicas.release(replica)
            await response.http_response.aclose()  # on early close too: the server sees the disconnect and aborts

    async def health(self) -> BackendHealth:
        """GET /v1/models of every replica with a short timeout; BackendError when none can be reached."""
        return await self.server.health()

    async def aclose(self) -> None:
        await self.server.aclose()


def prompt_progress(sent: Any) -> PromptProgress | None:
    """llama-server's `prompt_progress` ({total, cache, processed, time_ms}: `processed` counts the cached
    tokens too) as a PromptProgress; None for anything else."""
    if not isinstance(sent, dict):
        return None
    total, cache, processed = sent.get("total"), sent.get("cache", 0), sent.get("processed")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (total, cache, processed)) or not total:
        return None
    return PromptProgress(min(processed, total), total, min(cache, total))


class RemoteAnswer:
    """The text pieces of one remote answer. `completion_tokens` is the engine's own count, known once
    its usage chunk arrived (None from a server that sends none); `aclose()` aborts the request."""

    def __init__(self) -> None:
        self.completion_tokens: int | None = None
        self.pieces: Any = None  # the async generator that reads the server's stream

    def __aiter__(self) -> "RemoteAnswer":
        return self

    async def __anext__(self) -> str | PromptProgress:
        return await self.pieces.__anext__()

    async def aclose(self) -> None:
        await self.pieces.aclose()


def create_openai(settings: "Settings") -> OpenAIBackend:
    try:
        import httpx  # noqa: F401
        import openai  # noqa: F401
    except ImportError:
        raise BackendError("the openai backend needs the `openai` package: pip install openai") from None
    return OpenAIBackend(settings.openai)
