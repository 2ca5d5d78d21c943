"""A backend over an engine server this process runs (engine_process.py): vLLM, llama.cpp's llama-server.

The engine batches every request it is given, so nothing here queues or locks: each question is its own
streaming request through the OpenAI-compatible client (openai_compat.py: the engine's token counts, its
`/tokenize`, its context window, the usage chunk), rebuilt when a restart moved the engine to another
port. While the engine is not ready a question fails at once with the reason, and health says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, AsyncIterator, Literal

import anyio

from assistant.backends.base import BackendError, BackendHealth, GenParams, Message
from assistant.backends.engine_process import EngineProcess
from assistant.backends.openai_compat import OpenAIBackend, RemoteAnswer

if TYPE_CHECKING:
    from assistant.settings import OpenAISettings


class ManagedServerBackend:
    """The engine process and the OpenAI-compatible client that talks to it."""

    name = "managed"
    tokenize_route: str | None = None  # how the engine counts prompts, when known (openai_server.py)

    def __init__(self, process: EngineProcess, owns_process: bool, prompt_style: Literal["chat", "completion"]) -> None:
        self.process = process
        self._owns_process = owns_process
        self.prompt_style: Literal["chat", "completion"] = prompt_style
        self._client: OpenAIBackend | None = None
        self._client_port: int | None = None

    # --- what a subclass says about its engine ---------------------------------------------------

    @property
    def model(self) -> str:
        raise NotImplementedError

    def client_settings(self) -> "OpenAISettings":
        """The client's settings for the engine at its current port."""
        raise NotImplementedError

    @property
    def fallback_context_window(self) -> int:
        """The context window said while the engine cannot be asked."""
        raise NotImplementedError

    # --- the client, rebuilt if the managed server moved to another port -------------------------

    @property
    def client(self) -> OpenAIBackend:
        if self._client is None or self._client_port != self.process.port:
            old = self._client
            self._client = OpenAIBackend(self.client_settings(), tokenize_route=self.tokenize_route)
            self._client_port = self.process.port
            if old is not None:
                old.server.close_sync_client()
        return self._client

    @property
    def base_url(self) -> str:
        """The managed server's OpenAI-compatible /v1 URL (for clients that go straight to it)."""
        return f"{self.process.base_url}/v1"

    @property
    def context_window(self) -> int:
        return self.client.context_window if self.process.ready else self.fallback_context_window

    def count_tokens(self, messages: list[Message]) -> int:
        return self.client.count_tokens(messages)

    def likely_tokens(self, messages: list[Message]) -> int | None:
        return self.client.likely_tokens(messages)

    # --- generation ----------------------------------------------------------------------------

    def _not_ready(self) -> BackendError:
        return BackendError(f"{self.process.label} is not ready ({self.process.state}): {self.process.detail}")

    def stream(self, messages: list[Message], params: GenParams) -> RemoteAnswer:
        answer = self.client.stream(messages, params)  # keeps the engine's token count for the caller
        answer.pieces = self._when_ready(answer.pieces)
        return answer

    async def _when_ready(self, pieces: AsyncIterator[str]) -> AsyncIterator[str]:
        try:
            if not self.process.ready:
                raise self._not_ready()
            async for piece in pieces:
                yield piece
        finally:
            await pieces.aclose()  # type: ignore[attr-defined]  # closed at once: the engine aborts the request

    async def health(self) -> BackendHealth:
        label = self.process.label
        if not self.process.ready:
            return BackendHealth(ok=False, model=self.model, detail=f"{label} {self.process.state}: {self.process.detail}")
        h = await self.client.health()
        h.detail = f"managed {label} (pid {self.process.pid}); {h.detail}"
        return h

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        if self._owns_process:
            await anyio.to_thread.run_sync(self.process.stop)
