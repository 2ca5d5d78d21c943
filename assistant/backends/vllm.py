"""The `vllm` backend: a managed vLLM server (vllm_process) spoken to through the OpenAI-compatible client
(managed_server.py). The HTTP pool is sized to `max_num_seqs`.

Prompt tokens are counted with the model directory's own tokenizer and chat template when the model is
a local folder (exact, and no HTTP round trip per count), else with the server's `/tokenize`; the
context window is the server's `max_model_len` from `/v1/models`.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.backends.base import BackendError, Message, completion_text
from assistant.backends.managed_server import ManagedServerBackend
from assistant.backends.vllm_process import VLLMProcess, served_name

if TYPE_CHECKING:
    from assistant.settings import OpenAISettings, Settings, VLLMSettings

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


class VLLMBackend(ManagedServerBackend):
    """A vLLM server this process runs (or shares, when `process` is given) and talks to over HTTP."""

    name = "vllm"

    def __init__(self, settings: "Settings", process: VLLMProcess | None = None) -> None:
        self.cfg: VLLMSettings = settings.vllm
        own = process or VLLMProcess(self.cfg, settings.data_dir / "logs" / "vllm.log")
        super().__init__(own, process is None, self.cfg.prompt_style)
        self._tokenizer: LocalTokenizer | None = None
        folder = Path(self.cfg.model).expanduser()
        if (folder / "tokenizer.json").is_file() or (folder / "tokenizer_config.json").is_file():
            try:
                self._tokenizer = LocalTokenizer(folder)
            except Exception as exc:  # counting falls back to the server's /tokenize
                log.warning("cannot load the tokenizer of %s (%s): counting with the server", folder, exc)

    def client_settings(self) -> "OpenAISettings":
        from assistant.settings import OpenAISettings

        return OpenAISettings(
            base_url=f"{self.process.base_url}/v1",
            model=served_name(self.cfg),
            context_window=self.cfg.max_model_len or 4096,
            timeout_s=self.cfg.timeout_s,
            max_connections=self.cfg.max_num_seqs or VLLM_DEFAULT_MAX_NUM_SEQS,
            prompt_style=self.cfg.prompt_style,
            sampling=self.cfg.sampling,
        )

    @property
    def model(self) -> str:
        return served_name(self.cfg)

    @property
    def fallback_context_window(self) -> int:
        return self.cfg.max_model_len or 4096

    def count_tokens(self, messages: list[Message]) -> int:
        if self._tokenizer is not None:
            n = self._tokenizer.count(messages, self.prompt_style)
            if n is not None:
                return n
        return self.client.count_tokens(messages)


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
