"""Facts for the V100 rigs of the field reports, and model configs written out by hand (no downloads)."""

from __future__ import annotations

from assistant.gpu.facts import Facts, GpuFacts, Intent, TorchFacts
from assistant.gpu.hardware import GIB, MIB

# A Gemma-3-27B-shaped config: 62 layers, 32 heads, 16 KV heads, head_dim 128, tied embeddings.
CONFIG_27B = {
    "architectures": ["Gemma3ForConditionalGeneration"],
    "model_type": "gemma3",
    "torch_dtype": "bfloat16",
    "tie_word_embeddings": True,
    "text_config": {
        "model_type": "gemma3_text",
        "hidden_size": 5376,
        "intermediate_size": 21504,
        "num_hidden_layers": 62,
        "num_attention_heads": 32,
        "num_key_value_heads": 16,
        "head_dim": 128,
        "vocab_size": 262208,
        "sliding_window": 1024,
    },
}

# Qwen2.5-32B-shaped: 64 layers, 40 heads, 8 KV heads, hidden 5120 (head_dim 128 from hidden / heads).
CONFIG_QWEN_32B = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "torch_dtype": "bfloat16",
    "hidden_size": 5120,
    "intermediate_size": 27648,
    "num_hidden_layers": 64,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "vocab_size": 152064,
    "tie_word_embeddings": False,
}

# Qwen3-30B-A3B-shaped MoE: 128 experts, 8 active per token.
CONFIG_MOE_30B = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "vocab_size": 151936,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}

TORCH_CU126 = TorchFacts(
    version="2.7.1+cu126",
    cuda="12.6",
    arch_list=["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
    nccl="2.21.5",
)
TORCH_CU130 = TorchFacts(
    version="2.11.0+cu130",
    cuda="13.0",
    arch_list=["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"],
    nccl="2.28.9",
)


def v100(index: int, mem_gib: int = 16, **kw) -> GpuFacts:
    values = dict(
        index=index,
        name=f"Tesla V100-SXM2-{mem_gib}GB",
        uuid=f"GPU-0000000{index}-0000-0000-0000-000000000000",
        architecture="Volta",
        compute_capability=(7, 0),
        memory_total_bytes=(16160 if mem_gib == 16 else 32510) * MIB,
        memory_used_bytes=0,
        utilization_pct=0,
        temperature_c=38,
        slowdown_temp_c=87,
        sm_clock_mhz=135,
        max_sm_clock_mhz=1530,
        power_w=42.0,
        power_limit_w=300.0,
        throttle_reasons=["gpu_idle"],
        nvlink_links_up=6,
        pcie_gen=3,
        pcie_width=16,
    )
    values.update(kw)
    return GpuFacts(**values)


def rig(
    gpus: int = 2, mem_gib: int = 16, nvlink: bool = True, env: dict | None = None, intent: Intent | None = None, **kw
) -> Facts:
    """A healthy V100 machine; tests change one fact at a time."""
    facts = Facts(
        gpus=[v100(i, mem_gib) for i in range(gpus)],
        driver_version="560.35.03",
        driver_cuda="12.6",
        torch=TORCH_CU126,
        vllm_version="0.10.2",
        llama_cpp_version="0.3.16",
        llama_cpp_gpu_offload=True,
        shm_bytes=32 * GIB,
        env=dict(env or {}),
        topology={f"{a}-{b}": ("NV2" if nvlink else "PHB") for a in range(gpus) for b in range(a + 1, gpus)},
        intent=intent or Intent(),
        source="scenario",
    )
    for k, v in kw.items():
        setattr(facts, k, v)
    return facts


def h200(**kw) -> Facts:
    """One H200 with a CUDA 13 torch (healthy for Hopper)."""
    gpu = GpuFacts(
        index=0, name="NVIDIA H200", compute_capability=(9, 0), memory_total_bytes=143771 * MIB, memory_used_bytes=0,
        temperature_c=35, throttle_reasons=["gpu_idle"],
    )  # fmt: skip
    facts = Facts(gpus=[gpu], driver_version="580.159.04", driver_cuda="13.0", torch=TORCH_CU130, shm_bytes=128 * GIB)
    for k, v in kw.items():
        setattr(facts, k, v)
    return facts
