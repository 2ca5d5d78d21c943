"""Which kernels run on which compute capability: memory fit and kernel support are separate answers.

The thresholds are the engines' own (vLLM's `get_min_capability()` per quantization method and its
BF16 check); recipes/gpu-facts.md lists the issues they come from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant.gpu.hardware import sm_name

# vLLM's minimum compute capability per quantization (as major*10+minor).
VLLM_MIN_CAPABILITY = {"fp16": 70, "bf16": 80, "int8": 75, "awq": 75, "gptq": 60}
MARLIN_MIN_CAPABILITY = 80
NATIVE_FP8_CAPABILITY = 89
NATIVE_BF16_CAPABILITY = 80
VLLM_V1_ON_VOLTA = (0, 10, 2)  # first vLLM release whose V1 engine runs on compute capability < 8.0


def engine_for(quant: str) -> str:
    return "llama.cpp" if quant.startswith("gguf") else "vllm"


def is_fp8(kv_cache_dtype: str | None) -> bool:
    return bool(kv_cache_dtype) and kv_cache_dtype.startswith("fp8")


@dataclass
class Support:
    """Whether the kernels for a configuration exist on a GPU, why not, and what would run instead."""

    supported: bool = True
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    alternatives: list[str] = field(default_factory=list)  # other --quant values that would run


def kernel_support(quant: str, capability: tuple[int, int] | None, kv_cache_dtype: str = "auto") -> Support:
    """Kernel support for `quant` (and the KV-cache dtype) on a GPU of this compute capability."""
    out = Support()
    if capability is None:
        out.notes.append("compute capability unknown: kernel support not checked")
        return out
    cc = capability[0] * 10 + capability[1]
    sm = sm_name(capability)
    if engine_for(quant) == "llama.cpp":
        out.notes.append(f"GGUF runs on llama.cpp; its CUDA build must include {sm} (CMAKE_CUDA_ARCHITECTURES={cc})")
    else:
        need = VLLM_MIN_CAPABILITY[quant]
        if cc < 70:
            out.supported = False
            out.reasons.append(f"vLLM needs compute capability 7.0 or newer; this GPU is {sm}")
            out.alternatives = ["gguf-q4_k_m", "gguf-q8_0"]
        elif cc < need:
            out.supported = False
            if quant == "bf16":
                out.reasons.append(
                    f"BF16 is not native on {sm}: vLLM stops with 'Bfloat16 is only supported on GPUs with compute "
                    "capability of at least 8.0'; use float16 (--dtype half)"
                )
                out.alternatives = ["fp16", "gptq", "gguf-q8_0"]
            else:
                method = "w8a8 int8" if quant == "int8" else quant
                out.reasons.append(
                    f"vLLM's {quant.upper()} kernels need compute capability {need // 10}.{need % 10}; "
                    f"this GPU is {sm} ('The quantization method {method} is not supported for the current GPU')"
                )
                out.alternatives = ["gptq", "gguf-q4_k_m"] if quant == "awq" else ["gptq", "gguf-q8_0"]
        if quant == "gptq" and need <= cc < MARLIN_MIN_CAPABILITY:
            out.notes.append(f"GPTQ-Marlin needs sm_80; on {sm} vLLM uses its plain GPTQ kernels (--quantization gptq)")
        if cc < NATIVE_BF16_CAPABILITY and quant in ("fp16", "int8", "awq", "gptq"):
            out.notes.append(f"{sm} has no native BF16: run activations in float16 (--dtype float16)")
        if cc < 80:
            v = ".".join(map(str, VLLM_V1_ON_VOLTA))
            out.notes.append(f"vLLM's V1 engine runs on compute capability < 8.0 from vLLM {v} on")
    if is_fp8(kv_cache_dtype) and cc < NATIVE_FP8_CAPABILITY:
        out.notes.append(
            f"FP8 KV cache on {sm} has no hardware FP8: values are converted in software "
            "(field reports on V100: about 8 % slower, twice the context)"
        )
    return out
