"""The CMake flags for llama.cpp's CPU code on this CPU (scripts/llama-cpu-flags.sh, for Python callers).

llama.cpp's native build (-march=native) compiles its AMX kernels on CPUs that list AMX, and in some
virtual machines those CPUs list AMX while the first AMX instruction crashes the process (a segfault at
the first prompt of real length). There the native instruction sets are named one by one instead, AMX
left out; elsewhere nothing is added and the native build is kept.
"""

from __future__ import annotations

from pathlib import Path

# /proc/cpuinfo flag -> GGML option
INSTRUCTION_SETS = [
    ("avx", "AVX"), ("avx2", "AVX2"), ("fma", "FMA"), ("f16c", "F16C"), ("bmi2", "BMI2"), ("avx_vnni", "AVX_VNNI"),
    ("avx512f", "AVX512"), ("avx512vbmi", "AVX512_VBMI"), ("avx512_vnni", "AVX512_VNNI"), ("avx512_bf16", "AVX512_BF16"),
]  # fmt: skip
NO_AMX = ["-DGGML_NATIVE=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"]


def cpu_flags(cpuinfo: str | None = None) -> list[str]:
    """The flags for the CPU `cpuinfo` describes (this machine's /proc/cpuinfo by default)."""
    if cpuinfo is None:
        path = Path("/proc/cpuinfo")
        cpuinfo = path.read_text(errors="replace") if path.exists() else ""
    line = next((ln for ln in cpuinfo.splitlines() if ln.startswith("flags")), "")
    have = set(line.partition(":")[2].split())
    if "amx_tile" not in have:
        return []
    return NO_AMX + [f"-DGGML_{option}={'ON' if flag in have else 'OFF'}" for flag, option in INSTRUCTION_SETS]
