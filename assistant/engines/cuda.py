"""Which CUDA toolkit a GPU build would use, and whether it can build for the GPUs asked.

CUDA 13 dropped Maxwell, Pascal and Volta: its nvcc has no sm_70 target, and a llama.cpp built with it
fails on a V100 with "no kernel image is available for execution on the device". Hopper (sm_90) needs
11.8 or newer. A build for such a pair is refused before it starts, saying which toolkit would do. A CUDA
12.9 build for sm_70 is made but warned about: it fails to allocate the weights on a V100-32GB (gpu/volta.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from assistant.gpu.volta import CUDA_SM70_GOOD, sm70_toolkit_warning

# the lowest compute capability (without the dot) each CUDA major version still compiles for
LOWEST_ARCH = {13: 75, 12: 50, 11: 35}
# the first CUDA version (major, minor) that compiles for an architecture, where it matters
FIRST_CUDA = {90: (11, 8), 89: (11, 8), 100: (12, 8), 120: (12, 8)}
VERSION = re.compile(r"release (\d+)\.(\d+)")


@dataclass(frozen=True)
class Toolkit:
    nvcc: str
    version: tuple[int, int]

    @property
    def label(self) -> str:
        return f"CUDA {self.version[0]}.{self.version[1]} ({self.nvcc})"


class BuildRefused(Exception):
    """A build that cannot give a working engine, with the reason and the fix."""


def find_nvcc(given: str | None = None) -> str | None:
    """nvcc as given (that one only), else $CUDACXX, else on PATH, else /usr/local/cuda/bin/nvcc."""
    candidates = [given] if given else [os.environ.get("CUDACXX"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def parse_version(nvcc_output: str) -> tuple[int, int] | None:
    """(major, minor) from `nvcc --version` ("Cuda compilation tools, release 12.4, V12.4.131")."""
    m = VERSION.search(nvcc_output)
    return (int(m.group(1)), int(m.group(2))) if m else None


def find_toolkit(given: str | None = None) -> Toolkit | None:
    nvcc = find_nvcc(given)
    if nvcc is None:
        return None
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = parse_version(out)
    return Toolkit(nvcc, version) if version else None


def check_archs(toolkit: Toolkit | None, archs: list[int]) -> None:
    """Raise BuildRefused when this toolkit cannot build for one of these architectures."""
    if toolkit is None:
        raise BuildRefused(
            "no CUDA toolkit found (no nvcc on PATH, in $CUDACXX or /usr/local/cuda/bin): install one "
            "(a 12.x toolkit for V100s) and point CUDACXX at its nvcc, or build for the CPU with --cpu"
        )
    major, minor = toolkit.version
    lowest = LOWEST_ARCH.get(major, 75 if major > 13 else 35)
    too_old = [a for a in archs if a < lowest]
    if too_old:
        names = ", ".join(f"sm_{a}" for a in too_old)
        raise BuildRefused(
            f"{toolkit.label} cannot build for {names}: CUDA {major} dropped GPUs below sm_{lowest} (V100s are "
            f"sm_70). Install CUDA {CUDA_SM70_GOOD}, which still builds for them (12.9 builds fail on V100-32GB), "
            f"and point CUDACXX at its nvcc or pass --nvcc, e.g. --nvcc /usr/local/cuda-{CUDA_SM70_GOOD}/bin/nvcc"
        )
    for arch in archs:
        first = FIRST_CUDA.get(arch)
        if first and (major, minor) < first:
            raise BuildRefused(f"{toolkit.label} cannot build for sm_{arch}: that needs CUDA {first[0]}.{first[1]} or newer")


def build_warnings(toolkit: Toolkit, archs: list[int]) -> list[str]:
    """What a build this toolkit can make still gets wrong on these architectures (the build goes on)."""
    warning = sm70_toolkit_warning(toolkit.version, archs)
    return [warning] if warning else []


def gpu_archs(gpus: Iterable[Any]) -> list[int]:
    """The compute capabilities (70 for 7.0) of these GPUs (gpu/facts.py's GpuFacts), each once, sorted."""
    return sorted({g.compute_capability[0] * 10 + g.compute_capability[1] for g in gpus if g.compute_capability})


def parse_arch(value: str) -> int:
    """A compute capability as given to --cuda-arch: 70, 7.0 or sm_70."""
    text = value.strip().lower().removeprefix("sm_").replace(".", "")
    if not text.isdigit() or not 30 <= int(text) <= 200:
        raise ValueError(f"--cuda-arch takes a compute capability such as 70, 7.0 or sm_70, not {value!r}")
    return int(text)
