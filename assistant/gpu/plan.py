"""`plan`: what fits on which GPUs, by arithmetic alone (config.json, safetensors headers, datasheets).

    KV bytes per token  = 2 x layers x KV heads x head_dim x bytes per value
    KV pool per GPU     = utilization x GPU memory - weights / GPUs - runtime reserve
    full-length seqs    = KV pool / (KV bytes per token per GPU x max-model-len)
    decode ceiling      = memory bandwidth / bytes read per generated token   (one stream)

The runtime reserve (CUDA context, CUDA graphs, NCCL buffers, activations, logits) is an estimate;
vLLM measures the real figure in its start-up profile run, so plans keep a margin rather than promise.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from assistant.gpu.hardware import GIB, GpuSpec, sm_name
from assistant.gpu.model import ModelInfo
from assistant.gpu.presets import presets_for
from assistant.gpu.support import engine_for, is_fp8, kernel_support
from assistant.gpu.volta import VLLM_SM70_SOURCE, VLLM_WITHOUT_SM70

CUDA_CONTEXT_BYTES = int(0.75 * GIB)
CUDA_GRAPHS_BYTES = int(0.5 * GIB)
NCCL_BYTES = int(0.25 * GIB)
SMALL_GPU_BYTES = 17 * GIB  # at or below this, --enforce-eager buys back the CUDA-graph memory


@dataclass(frozen=True)
class PlanRequest:
    gpu: GpuSpec
    gpus: int = 1
    quant: str = "fp16"
    max_model_len: int = 4096
    kv_cache_dtype: str = "auto"
    gpu_memory_utilization: float = 0.90
    max_num_batched_tokens: int = 2048
    max_num_seqs: int = 256
    enforce_eager: bool | None = None  # None = on for 16 GB cards
    free_bytes: tuple[int, ...] | None = None  # each GPU's free memory, when read (plan --facts): llama-server's -ts
    split_mode: str | None = None  # llama-server's -sm with several GPUs: layer | row | none


@dataclass
class Plan:
    model: str
    gpu: str
    gpus: int
    quant: str
    engine: str
    max_model_len: int
    kv_cache_dtype: str
    gpu_memory_utilization: float
    weights_bytes: int
    weights_source: str
    weights_per_gpu_bytes: int
    kv_bytes_per_token: int
    kv_bytes_per_token_per_gpu: int
    budget_per_gpu_bytes: int
    reserved_per_gpu_bytes: int
    kv_pool_bytes: int  # per GPU
    kv_pool_tokens: int
    max_concurrent_seqs: int
    bytes_read_per_token: int
    decode_ceiling_tok_s: float
    decode_ceiling_full_context_tok_s: float
    fits: bool
    fit_reasons: list[str]
    supported: bool
    support_reasons: list[str]
    notes: list[str]
    vllm_args: list[str]
    env: dict[str, str]
    command: str
    llama_server_args: list[str] = field(default_factory=list)
    options: list[dict[str, Any]] = field(default_factory=list)
    presets: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.fits and self.supported

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def kv_bytes_per_value(kv_cache_dtype: str, engine: str = "vllm") -> float:
    if is_fp8(kv_cache_dtype):
        return 8.5 / 8 if engine == "llama.cpp" else 1.0  # llama.cpp's nearest is q8_0
    return 2.0


def kv_cache_bytes(kv_bytes_per_token: int, tokens: int, seqs: int = 1) -> int:
    """KV cache for `seqs` sequences of `tokens` tokens each."""
    return kv_bytes_per_token * tokens * seqs


def decode_ceiling(bytes_per_token: float, bandwidth_bytes_s: float) -> float:
    """Single-stream tokens/s bound: every generated token reads these bytes from GPU memory once."""
    return bandwidth_bytes_s / bytes_per_token


def _reserved_bytes(model: ModelInfo, req: PlanRequest, tp: int, eager: bool) -> int:
    s = model.shape
    width = max(s.intermediate if not s.experts else s.experts_per_token * s.expert_intermediate, s.intermediate)
    activations = req.max_num_batched_tokens * (2 * width // tp + 4 * s.hidden) * 2
    logits = req.max_num_seqs * s.vocab * 4
    return (
        CUDA_CONTEXT_BYTES + (0 if eager else CUDA_GRAPHS_BYTES) + (NCCL_BYTES if tp > 1 else 0) + activations + logits
    )


def make_plan(model: ModelInfo, req: PlanRequest, with_options: bool = True) -> Plan:
    """The whole plan for one model on one rig; `options` lists changes that would make it work."""
    if req.gpus < 1 or req.max_model_len < 1 or not 0 < req.gpu_memory_utilization <= 1:
        raise ValueError("gpus and max-model-len must be positive and gpu-memory-utilization in (0, 1]")
    s = model.shape
    engine = engine_for(req.quant)
    tp = req.gpus
    eager = req.enforce_eager if req.enforce_eager is not None else req.gpu.memory_bytes <= SMALL_GPU_BYTES
    weights, source = model.weight_bytes(req.quant)
    weights_pg = math.ceil(weights / tp)
    kv_tok = s.kv_bytes_per_token(kv_bytes_per_value(req.kv_cache_dtype, engine))
    if engine == "vllm":  # tensor parallel: KV heads are split, or replicated when fewer than GPUs
        kv_tok_pg = int(2 * s.layers * math.ceil(s.kv_heads / tp) * s.head_dim * kv_bytes_per_value(req.kv_cache_dtype))
    else:  # llama.cpp splits layers: each GPU keeps the KV of its own layers
        kv_tok_pg = math.ceil(kv_tok / tp)
    budget = int(req.gpu_memory_utilization * req.gpu.memory_bytes)
    reserved = _reserved_bytes(model, req, tp, eager)
    pool = budget - weights_pg - reserved
    pool_tokens = max(pool, 0) // kv_tok_pg
    seqs = pool_tokens // req.max_model_len
    fits = seqs >= 1
    fit_reasons: list[str] = []
    if pool <= 0:
        fit_reasons.append(
            f"weights need {_gb(weights_pg)} per GPU but only {_gb(budget - reserved)} is left of the "
            f"{_gb(budget)} budget ({req.gpu_memory_utilization:.2f} x {_gb(req.gpu.memory_bytes)}) "
            f"after a {_gb(reserved)} runtime reserve"
        )
    elif not fits:
        fit_reasons.append(
            f"the KV pool ({_gb(pool)} per GPU) holds {pool_tokens:,} tokens, fewer than one "
            f"{req.max_model_len:,}-token sequence ({_gb(kv_tok_pg * req.max_model_len)} per GPU)"
        )
    if s.heads % tp and engine == "vllm":
        fit_reasons.append(f"{s.heads} attention heads do not divide over {tp} GPUs (vLLM needs heads % TP == 0)")
        fits = False
    support = kernel_support(req.quant, req.gpu.capability, req.kv_cache_dtype)
    notes = list(support.notes)
    if s.sliding_window:
        notes.append("sliding-window layers are counted as full attention: the KV figures are an upper bound")
    if s.mla:
        notes.append("multi-head latent attention is not modelled: the KV figures are an upper bound")
    label = {"awq": "AWQ", "gptq": "GPTQ", "int8": "INT8 (W8A8)"}.get(req.quant)
    if (
        label
        and s.checkpoint_quant != req.quant
        and not (req.quant == "int8" and s.checkpoint_quant == "compressed-tensors")
    ):
        now = (
            f"this checkpoint is {s.checkpoint_quant}-quantized"
            if s.checkpoint_quant
            else "this checkpoint is not quantized"
        )
        notes.append(f"{now}: --quant {req.quant} needs an {label} checkpoint of the model")
    bw = req.gpu.bandwidth_bytes_s * (tp if engine == "vllm" else 1)
    read = model.bytes_read_per_token(req.quant)
    plan = Plan(
        model=model.path,
        gpu=req.gpu.key,
        gpus=req.gpus,
        quant=req.quant,
        engine=engine,
        max_model_len=req.max_model_len,
        kv_cache_dtype=req.kv_cache_dtype,
        gpu_memory_utilization=req.gpu_memory_utilization,
        weights_bytes=weights,
        weights_source=source,
        weights_per_gpu_bytes=weights_pg,
        kv_bytes_per_token=kv_tok,
        kv_bytes_per_token_per_gpu=kv_tok_pg,
        budget_per_gpu_bytes=budget,
        reserved_per_gpu_bytes=reserved,
        kv_pool_bytes=max(pool, 0),
        kv_pool_tokens=pool_tokens,
        max_concurrent_seqs=seqs,
        bytes_read_per_token=read,
        decode_ceiling_tok_s=round(decode_ceiling(read, bw), 1),
        decode_ceiling_full_context_tok_s=round(decode_ceiling(read + kv_tok * req.max_model_len, bw), 1),
        fits=fits,
        fit_reasons=fit_reasons,
        supported=support.supported,
        support_reasons=support.reasons,
        notes=notes,
        vllm_args=[],
        env={},
        command="",
    )
    _launch_line(plan, model, req, eager)
    plan.llama_server_args = llama_server_args(plan.max_concurrent_seqs, req.max_model_len, req.gpus, os.cpu_count() or 1,
                                               list(req.free_bytes or []), req.split_mode)  # fmt: skip
    cc = req.gpu.capability
    if plan.engine == "vllm" and cc is not None and cc < (7, 5):
        plan.notes.append(f"upstream vLLM {'.'.join(map(str, VLLM_WITHOUT_SM70))} and later ship no {sm_name(cc)} kernels "
                          f"({VLLM_SM70_SOURCE}): pin vllm<0.21, or serve with backend = llama-server, or a V100 fork "
                          "behind backend = openai (presets ending -1cat-awq)")  # fmt: skip
    plan.presets = [p.name for p in presets_for(req.gpu.key, req.gpus)]
    if with_options and not plan.ok:
        plan.options = _options(model, req, plan, support.alternatives)
    return plan


LLAMA_SERVER_MAX_SLOTS = 64  # past this, one more slot adds little to a GPU's aggregate tokens/s


def llama_server_threads(cpus: int) -> int:
    """llama-server's CPU threads (-t) when every layer is on the GPUs: a quarter of the cores, 1 to 4.

    Its CPU threads then only sample and schedule; llama.cpp's default (a thread per core) would compete
    for every core with the server's retrieval and streaming on the same machine. The hand-started
    engine of docs/benchmarks.md ran with `-t 4` on 16 cores (runs 4-8), the managed one too (runs 12-14)."""
    return max(1, min(4, cpus // 4))


def split_shares(free_bytes: list[int]) -> list[float] | None:
    """-ts for several GPUs: each one's free memory in GiB (one decimal), so that llama.cpp gives a card
    already holding something a smaller share of the model; None for one GPU or none."""
    if len(free_bytes) < 2:
        return None
    return [round(max(free, 0) / GIB, 1) for free in free_bytes]


def llama_server_args(seqs: int, ctx_per_slot: int, gpus: int, cpus: int, free_bytes: list[int] | None = None,
                      split_mode: str | None = None) -> list[str]:
    """llama-server's flags for a plan: every layer on the GPUs, as many slots as full-length sequences
    fit (64 at most), the context of all slots together (-c = slots x context per slot), a few CPU threads;
    with several GPUs the split mode and -ts from each card's free memory (equal shares when not known)."""
    slots = min(LLAMA_SERVER_MAX_SLOTS, max(1, seqs))
    args = ["-ngl", "999", "-np", str(slots), "-c", str(slots * ctx_per_slot), "-fa", "on",
            "-t", str(llama_server_threads(cpus))]  # fmt: skip
    if gpus > 1:
        if split_mode:
            args += ["-sm", split_mode]
        shares = split_shares(free_bytes or []) if free_bytes and len(free_bytes) == gpus else [1.0] * gpus
        if split_mode != "none":
            args += ["-ts", ",".join(f"{s:g}" for s in shares or [])]
    return args


def llama_server_slots(weights_bytes: int, kv_bytes_per_token: int, ctx_per_slot: int, free_bytes: list[int],
                       utilization: float = 0.90) -> int:
    """Slots of ctx_per_slot tokens that fit in the GPUs' free memory beside the weights (llama.cpp splits
    layers over GPUs, so their memory adds up), each GPU keeping a runtime reserve; 1 to 64."""
    budget = sum(int(utilization * free) - CUDA_CONTEXT_BYTES for free in free_bytes) - weights_bytes
    seqs = max(budget, 0) // max(1, kv_bytes_per_token * ctx_per_slot)
    return min(LLAMA_SERVER_MAX_SLOTS, max(1, seqs))


def _launch_line(plan: Plan, model: ModelInfo, req: PlanRequest, eager: bool) -> None:
    """The recommended command: `vllm serve ...`, or the llama.cpp backend for GGUF."""
    cc = req.gpu.capability
    pre_ampere = cc is not None and cc < (8, 0)
    seqs = min(256, max(8, plan.max_concurrent_seqs))
    if plan.engine == "llama.cpp":
        plan.env = {"ASSISTANT_LLAMACPP_N_GPU_LAYERS": "-1", "ASSISTANT_LLAMACPP_N_CTX": str(req.max_model_len)}
        env = " ".join(f"{k}={v}" for k, v in plan.env.items())
        plan.command = f"{env} assistant serve --backend llamacpp --model {model.path}/MODEL.gguf"
        return
    args: list[str] = []
    if req.gpus > 1:
        args += ["--tensor-parallel-size", str(req.gpus)]
        plan.notes.append("with NVLink between the GPUs set NCCL_P2P_LEVEL=NVL (field reports: ~30 % lower TP latency)")
    dtype = "bfloat16" if req.quant == "bf16" else "float16" if (req.quant == "fp16" or pre_ampere) else "auto"
    args += ["--dtype", dtype]
    if req.quant == "gptq" and pre_ampere:
        args += ["--quantization", "gptq"]
    args += ["--max-model-len", str(req.max_model_len), "--gpu-memory-utilization", f"{req.gpu_memory_utilization:.2f}"]
    args += ["--max-num-seqs", str(seqs)]
    if is_fp8(req.kv_cache_dtype):
        args += ["--kv-cache-dtype", "fp8"]
    if eager:
        args += ["--enforce-eager"]
    args += ["--enable-prefix-caching"]
    plan.vllm_args = args
    plan.command = " ".join(["vllm", "serve", model.path, *args])


def _options(model: ModelInfo, req: PlanRequest, plan: Plan, alternatives: list[str]) -> list[dict[str, Any]]:
    """Changes that make a failing plan fit and run, each checked by planning it."""
    out: list[dict[str, Any]] = []

    def attempt(change: str, **kw: Any) -> bool:
        alt = make_plan(model, replace(req, **kw), with_options=False)
        if alt.ok:
            out.append(
                {"change": change, "quant": alt.quant, "gpus": alt.gpus, "max_model_len": alt.max_model_len,
                 "kv_cache_dtype": alt.kv_cache_dtype, "weights_bytes": alt.weights_bytes,
                 "max_concurrent_seqs": alt.max_concurrent_seqs, "decode_ceiling_tok_s": alt.decode_ceiling_tok_s,
                 "command": alt.command}
            )  # fmt: skip
        return alt.ok

    smaller = ["int8", "gptq", "awq", "gguf-q8_0", "gguf-q4_k_m"]
    candidates = alternatives + [q for q in smaller if q not in alternatives and q != req.quant]
    if not plan.fits:
        candidates = [q for q in candidates if model.weight_bytes(q)[0] < plan.weights_bytes]
    tried = 0
    for q in candidates:
        if tried < 3 and q != req.quant and attempt(f"--quant {q}", quant=q):
            tried += 1
    if plan.supported:
        for n in (2, 4, 8):
            if n > req.gpus and attempt(f"--gpus {n}", gpus=n):
                break
        if not is_fp8(req.kv_cache_dtype):
            attempt("--kv-cache-dtype fp8", kv_cache_dtype="fp8")
        if plan.kv_pool_tokens >= 1024:
            shorter = plan.kv_pool_tokens // 1024 * 1024
            if shorter < req.max_model_len:
                attempt(f"--max-model-len {shorter}", max_model_len=shorter)
        if plan.kv_pool_bytes == 0 and plan.engine == "vllm":
            need = plan.weights_per_gpu_bytes - (plan.budget_per_gpu_bytes - plan.reserved_per_gpu_bytes)
            need += plan.kv_bytes_per_token_per_gpu * req.max_model_len
            gb = math.ceil(need / 1e9) + 1
            out.append(
                {"change": f"--cpu-offload-gb {gb}", "quant": req.quant, "gpus": req.gpus,
                 "max_model_len": req.max_model_len, "kv_cache_dtype": req.kv_cache_dtype,
                 "note": "offloaded weights cross PCIe for every token: expect a small fraction of the ceiling"}
            )  # fmt: skip
    return out


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB"
