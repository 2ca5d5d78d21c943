"""What runs on V100s (sm_70) at the end of 2026, with the sources: `doctor`, `plan`, `presets` and
`engine build` read these, and docs/gpu-support.md tabulates them.

- Upstream vLLM ships no sm_70 kernels from 0.21.0 on: its wheels are cu129/cu130 only (vllm#42756), PR
  #39878 made CUDA 13.0 the default and dropped 7.0 from the Docker arch list, and its docs ask for
  compute capability 7.5 or newer.
- llama.cpp still builds for sm_70 (flash attention for Volta since PR #17505), but builds made with
  CUDA 12.9.x fail to allocate the weights on a V100-32GB while 12.8 works (llama.cpp#28416, open).
- CUDA 13 dropped Volta altogether (engines/cuda.py refuses such a build).
- The community fork 1Cat-vLLM (CUDA 12.8, torch 2.9.1+cu128, AWQ kernels for V100, a
  `FLASH_ATTN_V100` attention backend) serves Qwen3.5/3.6-27B-AWQ on 2 or 4 V100-32GB; it speaks the
  OpenAI API, so the product reaches it through the `openai` backend.
"""

from __future__ import annotations

import re

VLLM_WITHOUT_SM70 = (0, 21, 0)  # first upstream vLLM release with no sm_70 kernels
VLLM_SM70_SOURCE = "vllm#42756 (0.21.0 wheels are cu129/cu130 only), vllm PR #39878 (CUDA 13.0 default, 7.0 dropped)"
VLLM_LAST_FOR_VOLTA = "0.20"

CUDA_SM70_BAD = (12, 9)  # sm_70 llama.cpp builds of this toolkit fail to allocate weights on V100-32GB
CUDA_SM70_GOOD = "12.8"
LLAMA_CPP_SM70_ISSUE = "llama.cpp#28416"
LLAMA_CPP_VOLTA_FA = "llama.cpp PR #17505"

V100_FORK = "1cat-vllm"  # Intent.engine / Preset.engine for the fork
V100_FORK_TITLE = "1Cat-vLLM (CUDA 12.8, torch 2.9.1+cu128, V100 AWQ kernels, FLASH_ATTN_V100)"


def vllm_lacks_sm70(version: str) -> bool:
    """Whether an upstream vLLM release ships no kernels for compute capability 7.0."""
    parts = tuple(int(x) for x in re.findall(r"\d+", version.split("+")[0])[:3])
    return parts >= VLLM_WITHOUT_SM70


def vllm_way_out(presets: list[str]) -> str:
    """What a V100 owner runs instead of upstream vLLM >= 0.21."""
    named = f" (preset {', '.join(presets)})" if presets else ""
    return (f"serve with backend = llama-server (`assistant engine build llama-server --cuda-arch 70` with CUDA "
            f"{CUDA_SM70_GOOD}); or the V100 fork {V100_FORK_TITLE} behind the openai backend{named}; "
            f"or pin vllm<0.21 with a cu126 torch")  # fmt: skip


def sm70_toolkit_warning(cuda: tuple[int, int], archs: list[int]) -> str | None:
    """The warning for a llama.cpp build for sm_70 with this CUDA toolkit, or None."""
    if 70 not in archs or cuda[:2] != CUDA_SM70_BAD:
        return None
    return (f"CUDA {cuda[0]}.{cuda[1]} builds for sm_70 fail to allocate the weights on a V100-32GB "
            f"({LLAMA_CPP_SM70_ISSUE}, open); CUDA {CUDA_SM70_GOOD} works: install it and pass "
            f"--nvcc /usr/local/cuda-{CUDA_SM70_GOOD}/bin/nvcc")  # fmt: skip
