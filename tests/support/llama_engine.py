"""The managed llama-server for the tests: the build `assistant engine build llama-server --cpu` made
(scripts/test.sh runs it once per machine and llama.cpp version), or a skip saying why and how."""

from __future__ import annotations

import re

import httpx
import pytest

from assistant.engines.llama_server import find_binary

ALIAS = "gemma-3-270m"


def require_llama_server() -> str:
    """The built llama-server's path, or a skip with the command that builds it."""
    binary, build = find_binary()
    if binary is None or build is None:
        pytest.skip("no llama-server built: run `assistant engine build llama-server --cpu` (scripts/test.sh does, "
                    "printing the build's log when it fails)")  # fmt: skip
    return str(binary)


def engine_settings(**overrides) -> dict:
    """`llama_server` settings (a dict for Settings(llama_server=...)) that start the packaged Gemma on this
    CPU: 16 slots of 512 tokens, completion prompts (a base model without a chat template)."""
    values = {
        "binary": require_llama_server(), "alias": ALIAS, "parallel": 16, "ctx_per_slot": 512, "threads": 2,
        "prompt_style": "completion", "start_timeout_s": 120.0, "restart_backoff_s": 0.5, "timeout_s": 300.0,
    }  # fmt: skip
    values.update(overrides)
    return values


def busy_slots(process) -> int:
    """Slots of the engine generating now (its /slots)."""
    slots = process.slots(timeout_s=5.0)
    return slots["busy"] if slots else 0


def engine_counter(process, name: str) -> float:
    """A counter of the engine's Prometheus /metrics, e.g. `llamacpp:requests_processing`."""
    text = httpx.get(f"{process.base_url}/metrics", timeout=5).text
    m = re.search(rf"^{re.escape(name)}(?:\{{[^}}]*\}})? ([0-9.e+-]+)$", text, re.M)
    assert m, f"llama-server's /metrics has {name}"
    return float(m.group(1))
