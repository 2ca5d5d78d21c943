"""Run vLLM's OpenAI-compatible server as a child process (engine_process.py supervises it).

The server is `python -m vllm.entrypoints.openai.api_server` (the module works for every vLLM
distribution, `vllm serve` only for the one named `vllm`), started with the interpreter of vLLM's own
environment.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.backends.engine_process import HOST, EngineProcess

if TYPE_CHECKING:
    from assistant.settings import VLLMSettings

# VLLMSettings field -> vLLM flag, for the optional ones passed only when set.
VALUE_FLAGS = {
    "max_model_len": "--max-model-len",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "kv_cache_dtype": "--kv-cache-dtype",
    "swap_space": "--swap-space",
    "quantization": "--quantization",
}
SWITCH_FLAGS = {"enable_chunked_prefill": "enable-chunked-prefill", "enable_prefix_caching": "enable-prefix-caching"}


def served_name(cfg: "VLLMSettings") -> str:
    return cfg.served_model_name or os.path.basename(cfg.model.rstrip("/")) or cfg.model


def build_command(cfg: "VLLMSettings", port: int, host: str = HOST) -> list[str]:
    """The full command line for these settings (pure: tested without starting anything)."""
    cmd = [
        cfg.python or sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", cfg.model,
        "--served-model-name", served_name(cfg),
        "--host", host,
        "--port", str(port),
        "--dtype", cfg.dtype,
        "--tensor-parallel-size", str(cfg.tensor_parallel_size),
        "--disable-uvicorn-access-log",
    ]  # fmt: skip
    for field, flag in VALUE_FLAGS.items():
        value = getattr(cfg, field)
        if value is not None:
            cmd += [flag, str(value)]
    for field, flag in SWITCH_FLAGS.items():
        value = getattr(cfg, field)
        if value is not None:
            cmd.append(f"--{flag}" if value else f"--no-{flag}")
    if cfg.enforce_eager:
        cmd.append("--enforce-eager")
    return cmd + list(cfg.extra_args)


class VLLMProcess(EngineProcess):
    """One managed vLLM server."""

    label = "vLLM"
    log = logging.getLogger("assistant.vllm")

    def __init__(self, cfg: "VLLMSettings", log_file: Path | None = None) -> None:
        if not cfg.model:
            raise ValueError("the vllm backend needs a model: --model PATH or ASSISTANT_VLLM_MODEL")
        super().__init__(cfg, log_file)
        self.cfg: VLLMSettings = cfg

    def command(self) -> list[str]:
        return build_command(self.cfg, self.port)
