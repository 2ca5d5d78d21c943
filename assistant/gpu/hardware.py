"""What the product knows about NVIDIA GPUs without asking them: compute capability, memory, bandwidth.

`nvidia-smi -q -x` does not report the compute capability and nothing reports memory bandwidth, so
both come from this table (datasheet figures). Memory sizes are what `nvidia-smi` shows for the card.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GIB = 1 << 30
MIB = 1 << 20


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model, as far as planning is concerned."""

    key: str
    name: str
    memory_bytes: int
    bandwidth_gbs: float  # HBM/GDDR bandwidth in GB/s (10^9 bytes)
    capability: tuple[int, int] | None

    @property
    def bandwidth_bytes_s(self) -> float:
        return self.bandwidth_gbs * 1e9


# Keys accepted by `plan --gpu`.
GPU_SPECS: dict[str, GpuSpec] = {
    s.key: s
    for s in [
        GpuSpec("v100-16g", "Tesla V100 16GB", 16160 * MIB, 900.0, (7, 0)),
        GpuSpec("v100-32g", "Tesla V100 32GB", 32510 * MIB, 900.0, (7, 0)),
        GpuSpec("a100-80g", "A100 80GB SXM", 81920 * MIB, 2039.0, (8, 0)),
        GpuSpec("h100-80g", "H100 80GB SXM", 81559 * MIB, 3350.0, (9, 0)),
        GpuSpec("h200", "H200 141GB", 143771 * MIB, 4800.0, (9, 0)),
    ]
}

# Product-name fragments -> (compute capability, bandwidth GB/s); first match wins, so the more
# specific fragment comes first.
_BY_NAME: list[tuple[str, tuple[int, int], float]] = [
    ("V100S", (7, 0), 1134.0),
    ("V100", (7, 0), 900.0),
    ("TITAN V", (7, 0), 653.0),
    ("T4", (7, 5), 320.0),
    ("RTX 2080 Ti", (7, 5), 616.0),
    ("A100-SXM4-80GB", (8, 0), 2039.0),
    ("A100 80GB PCIe", (8, 0), 1935.0),
    ("A100", (8, 0), 1555.0),
    ("A30", (8, 0), 933.0),
    ("A40", (8, 6), 696.0),
    ("A10", (8, 6), 600.0),
    ("RTX 3090", (8, 6), 936.0),
    ("RTX A6000", (8, 6), 768.0),
    ("L40", (8, 9), 864.0),
    ("L4", (8, 9), 300.0),
    ("RTX 4090", (8, 9), 1008.0),
    ("H100 PCIe", (9, 0), 2000.0),
    ("H100", (9, 0), 3350.0),
    ("H200", (9, 0), 4800.0),
    ("GH200", (9, 0), 4000.0),
    ("B200", (10, 0), 8000.0),
    ("RTX 5090", (12, 0), 1792.0),
]

_BY_ARCHITECTURE = {
    "volta": (7, 0),
    "turing": (7, 5),
    "ampere": (8, 0),
    "ada lovelace": (8, 9),
    "hopper": (9, 0),
    "blackwell": (10, 0),
}

# NVML clocks-event ("throttle") reason bits -> the names nvidia-smi uses in its XML.
THROTTLE_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clocks_setting",
    0x200: "board_limit",
    0x400: "reliability",
}

# Reasons that cost speed under load (idle, application clocks and sync boost are benign).
SLOWING_REASONS = {
    "sw_power_cap",
    "hw_slowdown",
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "board_limit",
    "reliability",
}
THERMAL_REASONS = {"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}


def decode_throttle_reasons(bitmask: int) -> list[str]:
    """NVML's clocks-event bitmask -> reason names, lowest bit first."""
    return [name for bit, name in THROTTLE_BITS.items() if bitmask & bit]


def capability_for(name: str, architecture: str | None = None) -> tuple[int, int] | None:
    """Compute capability from a product name (or, failing that, the architecture nvidia-smi reports)."""
    for fragment, cc, _ in _BY_NAME:
        if fragment.lower() in name.lower():
            return cc
    if architecture:
        return _BY_ARCHITECTURE.get(architecture.strip().lower())
    return None


def bandwidth_for(name: str) -> float | None:
    """Datasheet memory bandwidth in GB/s for a product name, when known."""
    for fragment, _, bw in _BY_NAME:
        if fragment.lower() in name.lower():
            return bw
    return None


def parse_gpu_arg(value: str) -> GpuSpec:
    """`plan --gpu`: a known key (v100-16g, ...) or `<GiB>,<GB/s>` for any other card."""
    key = value.strip().lower()
    if key in GPU_SPECS:
        return GPU_SPECS[key]
    m = re.fullmatch(r"\s*([0-9.]+)\s*,\s*([0-9.]+)\s*", value)
    if not m:
        known = ", ".join(GPU_SPECS)
        raise ValueError(f"unknown GPU {value!r}: use one of {known}, or '<GiB>,<GB/s>' such as '24,936'")
    mem_gib, bw = float(m.group(1)), float(m.group(2))
    if mem_gib <= 0 or bw <= 0:
        raise ValueError(f"GPU memory and bandwidth must be positive, got {value!r}")
    return GpuSpec(f"{mem_gib:g}g", f"custom {mem_gib:g} GiB, {bw:g} GB/s", int(mem_gib * GIB), bw, None)


def sm_name(cc: tuple[int, int]) -> str:
    return f"sm_{cc[0]}{cc[1]}"


def arch_runs_on(arch: str, cc: tuple[int, int]) -> bool:
    """Whether one entry of torch's arch list (sm_XY cubin or compute_XY PTX) can run on this device.

    A cubin runs on the same major version with an equal or higher minor; PTX is JIT-compiled for any
    device at least as new.
    """
    m = re.fullmatch(r"(sm|compute)_(\d+)([a-z]?)", arch.strip())
    if not m:
        return False
    digits = m.group(2)
    major, minor = int(digits[:-1]), int(digits[-1])
    if m.group(3):  # sm_90a / sm_100a: architecture-specific, that exact device only
        return (major, minor) == cc
    if m.group(1) == "compute":
        return (major, minor) <= cc
    return major == cc[0] and minor <= cc[1]
