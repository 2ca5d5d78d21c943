"""The facts `doctor` and `status` reason about, kept apart from how they were gathered.

Facts come from a live probe (probe.py) or from a recorded folder: the raw outputs of `nvidia-smi -q -x`,
`nvidia-smi topo -m`, `nvidia-smi nvlink -s`, `df -B1 /dev/shm` and an NVML/torch JSON, or a
`facts.json` written by `doctor --json` / by hand for a scenario. Either way the rules see the same
dataclasses, so every rule can be tested on recorded facts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from assistant.gpu.hardware import sm_name

# Environment variables worth reporting; anything that looks like a credential is never recorded.
ENV_PREFIXES = ("NCCL_", "VLLM_")
ENV_NAMES = {
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_VERSION", "NVIDIA_VISIBLE_DEVICES",
    "PYTORCH_CUDA_ALLOC_CONF", "TORCH_CUDA_ARCH_LIST",
}  # fmt: skip
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def relevant_env(env: dict[str, str]) -> dict[str, str]:
    """The GPU-related part of an environment, without credentials."""
    return {
        k: v
        for k, v in sorted(env.items())
        if (k in ENV_NAMES or k.startswith(ENV_PREFIXES)) and not any(s in k.upper() for s in _SECRET_MARKERS)
    }


@dataclass
class GpuFacts:
    """One GPU as NVML or nvidia-smi saw it. None = not reported."""

    index: int
    name: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    architecture: str | None = None
    compute_capability: tuple[int, int] | None = None
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    utilization_pct: float | None = None
    temperature_c: float | None = None
    slowdown_temp_c: float | None = None
    sm_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    throttle_reasons: list[str] = field(default_factory=list)
    nvlink_links_up: int | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None

    @property
    def memory_free_bytes(self) -> int | None:
        if self.memory_total_bytes is None or self.memory_used_bytes is None:
            return None
        return self.memory_total_bytes - self.memory_used_bytes

    @property
    def sm(self) -> str | None:
        return sm_name(self.compute_capability) if self.compute_capability else None


@dataclass
class TorchFacts:
    """The installed torch: its version, the CUDA toolkit it was built for, the kernels it carries."""

    version: str
    cuda: str | None = None  # None = a CPU-only build
    arch_list: list[str] | None = None  # None = not inspected
    nccl: str | None = None


@dataclass
class Intent:
    """What the user means to run (from flags, a preset or a recorded scenario); rules check it."""

    dtype: str | None = None  # auto | float16 | bfloat16 | float32
    kv_cache_dtype: str | None = None  # auto | fp8 | fp8_e4m3 | fp8_e5m2
    tensor_parallel_size: int | None = None
    quant: str | None = None  # fp16 | bf16 | int8 | awq | gptq | gguf-q4_k_m | gguf-q8_0
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    model: str | None = None
    model_config: dict[str, Any] | None = None  # the model's config.json
    engine: str | None = None  # vllm (upstream) | 1cat-vllm (the V100 fork, behind the openai backend)
    source: str = ""


@dataclass
class Facts:
    """Everything one probe saw."""

    gpus: list[GpuFacts] = field(default_factory=list)
    driver_version: str | None = None
    driver_cuda: str | None = None  # the newest CUDA the driver supports, e.g. "12.2"
    torch: TorchFacts | None = None
    vllm_version: str | None = None
    llama_cpp_version: str | None = None
    llama_cpp_gpu_offload: bool | None = None
    nvcc_cuda: str | None = None  # the CUDA toolkit `engine build` would use, e.g. "12.9"
    llama_server_build: dict[str, Any] | None = None  # the built llama-server's record: cuda, cuda_archs
    shm_bytes: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    topology: dict[str, str] = field(default_factory=dict)  # "0-1" -> "NV2" | "PHB" | "SYS" | ...
    intent: Intent = field(default_factory=Intent)
    notes: list[str] = field(default_factory=list)  # why a source was missing
    source: str = "live"

    def link(self, a: int, b: int) -> str | None:
        """How GPUs a and b are connected, as `nvidia-smi topo -m` put it."""
        return self.topology.get(f"{min(a, b)}-{max(a, b)}")

    def nvlinked(self, a: int, b: int) -> bool:
        link = self.link(a, b)
        return bool(link and link.startswith("NV"))

    def visible_gpus(self) -> tuple[list[GpuFacts], list[str]]:
        """The GPUs CUDA_VISIBLE_DEVICES leaves visible, and the entries of it that match no GPU."""
        raw = self.env.get("CUDA_VISIBLE_DEVICES")
        if raw is None:
            return list(self.gpus), []
        visible: list[GpuFacts] = []
        unknown: list[str] = []
        for entry in [e.strip() for e in raw.split(",") if e.strip()]:
            if entry.lstrip("-").isdigit() and int(entry) < 0:
                break  # CUDA stops at the first invalid ordinal
            match = next(
                (
                    g
                    for g in self.gpus
                    if (entry.isdigit() and g.index == int(entry)) or (g.uuid and g.uuid.startswith(entry))
                ),
                None,
            )
            if match is None:
                unknown.append(entry)
                break
            visible.append(match)
        return visible, unknown

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Facts:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["gpus"] = [gpu_from_dict(g) for g in data.get("gpus", [])]
        if data.get("torch"):
            values["torch"] = TorchFacts(**data["torch"])
        values["intent"] = Intent(**(data.get("intent") or {}))
        return cls(**values)


def gpu_from_dict(data: dict[str, Any]) -> GpuFacts:
    values = {k: v for k, v in data.items() if k in {f.name for f in fields(GpuFacts)}}
    if values.get("compute_capability") is not None:
        values["compute_capability"] = tuple(values["compute_capability"])
    return GpuFacts(**values)


def merge_gpus(primary: list[GpuFacts], secondary: list[GpuFacts]) -> list[GpuFacts]:
    """Per GPU index, the primary source's readings with the gaps filled from the secondary."""
    by_index = {g.index: g for g in secondary}
    merged = []
    for gpu in primary:
        other = by_index.pop(gpu.index, None)
        if other is not None:
            for f in fields(GpuFacts):
                if getattr(gpu, f.name) in (None, [], "") and getattr(other, f.name) not in (None, [], ""):
                    setattr(gpu, f.name, getattr(other, f.name))
        merged.append(gpu)
    merged.extend(by_index.values())
    return sorted(merged, key=lambda g: g.index)
