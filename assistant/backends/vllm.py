"""The `vllm` backend: a managed vLLM server (vllm_process) spoken to through the OpenAI-compatible client.

vLLM batches every request it is given, so nothing here queues or locks: the HTTP pool is sized to
`max_num_seqs` and each question is its own streaming request (closing it aborts the engine request).
Prompt tokens are counted with the model directory's own tokenizer and chat template when the model is
a local folder (exact, and no HTTP round trip per count), else with the server's `/tokenize`; the
context window is the server's `max_model_len` from `/v1/models`.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, AsyncIterator, Literal

import anyio

from assistant.backends.base import BackendError, BackendHealth, GenParams, Message, completion_text
from assistant.backends.openai_compat import OpenAIBackend, RemoteAnswer
from assistant.backends.vllm_process import VLLMProcess, served_name

if TYPE_CHECKING:
    from assistant.settings import Settings, VLLMSettings

log = logging.getLogger(__name__)
VLLM_DEFAULT_MAX_NUM_SEQS = 256


class LocalTokenizer:
    """The model folder's tokenizer: counts exactly what vLLM will count, without asking it."""

    def __init__(self, folder: Path) -> None:
        from transformers import AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        self.has_template = bool(getattr(self.tok, "chat_template", None))

    def count(self, messages: list[Message], style: str) -> int | None:
        if style == "chat":
            if not self.has_template:
                return None
            ids = self.tok.apply_chat_template(list(messages), tokenize=True, add_generation_prompt=True)
            ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
            return len(ids)
        return len(self.tok(completion_text(messages))["input_ids"])  # with <bos>, as vLLM's /v1/completions


class VLLMBackend:
    """A vLLM server this process runs (or shares, when `process` is given) and talks to over HTTP."""

    name = "vllm"

    def __init__(self, settings: "Settings", process: VLLMProcess | None = None) -> None:
        self.cfg: VLLMSettings = settings.vllm
        self.process = process or VLLMProcess(self.cfg)
        self._owns_process = process is None
        self.prompt_style: Literal["chat", "completion"] = self.cfg.prompt_style
        self._generation = settings.generation
        self._client: OpenAIBackend | None = None
        self._client_port: int | None = None
        self._tokenizer: LocalTokenizer | None = None
        folder = Path(self.cfg.model).expanduser()
        if (folder / "tokenizer.json").is_file() or (folder / "tokenizer_config.json").is_file():
            try:
                self._tokenizer = LocalTokenizer(folder)
            except Exception as exc:  # counting falls back to the server's /tokenize
                log.warning("cannot load the tokenizer of %s (%s): counting with the server", folder, exc)

    # --- the OpenAI-compatible client, rebuilt if the managed server moved to another port --------

    @property
    def client(self) -> OpenAIBackend:
        if self._client is None or self._client_port != self.process.port:
            from assistant.settings import OpenAISettings

            old = self._client
            self._client = OpenAIBackend(
                OpenAISettings(
                    base_url=f"{self.process.base_url}/v1",
                    model=served_name(self.cfg),
                    context_window=self.cfg.max_model_len or 4096,
                    timeout_s=self.cfg.timeout_s,
                    max_connections=self.cfg.max_num_seqs or VLLM_DEFAULT_MAX_NUM_SEQS,
                    prompt_style=self.cfg.prompt_style,
                    sampling=self.cfg.sampling,
                )
            )
            self._client_port = self.process.port
            if old is not None:
                old.server.close_sync_client()
        return self._client

    @property
    def model(self) -> str:
        return served_name(self.cfg)

    @property
    def base_url(self) -> str:
        """The managed server's OpenAI-compatible /v1 URL (for clients that go straight to it)."""
        return f"{self.process.base_url}/v1"

    @property
    def context_window(self) -> int:
        return self.client.context_window if self.process.ready else (self.cfg.max_model_len or 4096)

    def count_tokens(self, messages: list[Message]) -> int:
        if self._tokenizer is not None:
            n = self._tokenizer.count(messages, self.prompt_style)
            if n is not None:
                return n
        return self.client.count_tokens(messages)

    # --- generation ----------------------------------------------------------------------------

    def _not_ready(self) -> BackendError:
        return BackendError(f"the vLLM server is not ready ({self.process.state}): {self.process.detail}")

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
        if not self.process.ready:
            return BackendHealth(ok=False, model=self.model, detail=f"vLLM {self.process.state}: {self.process.detail}")
        h = await self.client.health()
        h.detail = f"managed vLLM (pid {self.process.pid}); {h.detail}"
        return h

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        if self._owns_process:
            await anyio.to_thread.run_sync(self.process.stop)


def create_vllm(settings: "Settings") -> VLLMBackend:
    """Start the managed server and wait for it (or its first failure); later failures restart it."""
    cfg = settings.vllm
    if not cfg.model:
        raise BackendError("the vllm backend needs a model: `serve --backend vllm --model PATH` or ASSISTANT_VLLM_MODEL")
    python = cfg.python or None
    if python and not os.access(python, os.X_OK):
        raise BackendError(f"the Python for vLLM ({python}) is not an executable file")
    backend = VLLMBackend(settings)
    backend.process.start()
    if not backend.process.wait_ready(cfg.start_timeout_s, give_up_on_exit=True):
        log.warning("vLLM is not ready yet: %s", backend.process.detail)
    return backend
