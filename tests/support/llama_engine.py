"""The managed llama-server for the tests: the build `assistant engine build llama-server --cpu` made
(scripts/test.sh runs it once per machine and llama.cpp version), or a skip saying why and how."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from assistant.engines.llama_server import BINARY, Build, find_binary

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


def write_build(root: Path, variant: str, archs: list[int], built_at: str = "2026-12-03T10:00:00",
                binary: bool = True, cuda: str | None = None) -> Build:
    """A build record in the engines folder `root` (a placeholder binary unless `binary` is False), as
    `assistant engine build` leaves one."""
    folder = root / f"{BINARY}-0.3.36-{variant}"
    (folder / "bin").mkdir(parents=True)
    build = Build(folder=str(folder), llama_cpp_python="0.3.36", variant=variant, cuda_archs=archs, cuda=cuda,
                  built_at=built_at)  # fmt: skip
    if binary:
        build.binary.write_text("#!/bin/sh\n")
    (folder / "build.json").write_text(json.dumps(build.to_dict()))
    return build
