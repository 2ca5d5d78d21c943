"""llama.cpp's GPU settings reach the model: offload all layers when the build can, else none."""

from __future__ import annotations

import asyncio

import pytest

from assistant.backends.factory import create_backend
from assistant.backends.llamacpp import gpu_layers


def test_layers_default_to_all_on_a_gpu_build_and_none_on_a_cpu_build():
    from llama_cpp import llama_supports_gpu_offload

    assert gpu_layers(None) == (-1 if llama_supports_gpu_offload() else 0)
    assert gpu_layers(12) == 12 and gpu_layers(0) == 0


@pytest.mark.slow
def test_gpu_settings_are_passed_to_llama_cpp(settings_factory, gguf_path):
    from llama_cpp import llama_supports_gpu_offload

    settings = settings_factory(
        backend="llamacpp",
        llamacpp={"model_path": gguf_path, "n_ctx": 512, "n_threads": 1, "n_batch": 64, "main_gpu": 0,
                  "tensor_split": [1.0], "flash_attn": True},  # fmt: skip
    )
    backend = create_backend(settings)
    try:
        params = backend.llm.model_params
        # llama-cpp-python turns -1 (all layers) into INT32_MAX
        assert params.n_gpu_layers == (0x7FFFFFFF if llama_supports_gpu_offload() else 0)
        assert params.main_gpu == 0 and backend.llm.tensor_split == [1.0]
        assert backend.llm.n_batch == 64 and backend.context_window == 512
        assert backend.prompt_style == "completion", "the GGUF has no chat template: completion prompts"
    finally:
        asyncio.run(backend.aclose())


def test_the_prompt_is_capped_on_a_cpu_unless_set_otherwise():
    from assistant.backends.llamacpp import CPU_PROMPT_TOKENS, prompt_cap

    assert prompt_cap(None, 0) == CPU_PROMPT_TOKENS  # nothing offloaded: every prompt token is a CPU's wait
    assert prompt_cap(None, -1) is None and prompt_cap(None, 12) is None  # a GPU reads the window's quickly
    assert prompt_cap(1536, -1) == 1536 and prompt_cap(0, 0) is None  # as set; 0 = the window's
