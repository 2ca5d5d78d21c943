"""What `assistant doctor` says about the engines: the llama-server binary, the GPUs it was built for, and
an in-process GPU setup known to crash.

The in-process llama.cpp backend offloading layers to a GPU shares its process with the embedder
(FAISS, torch, ONNX Runtime); on an H200 that crashed with a segfault in every order the libraries were
loaded (docs/benchmarks.md). The managed llama-server runs the engine in a process of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assistant.engines.cuda import find_toolkit, gpu_archs
from assistant.engines.llama_server import Build, find_binary

if TYPE_CHECKING:
    from assistant.gpu.facts import Facts, GpuFacts
    from assistant.settings import Settings

BUILD_CPU = "assistant engine build llama-server --cpu"
STATUS_ORDER = ["pass", "skip", "warn", "fail"]


def build_command(gpus: list["GpuFacts"]) -> str:
    archs = gpu_archs(gpus)
    return "assistant engine build llama-server " + " ".join(f"--cuda-arch {a}" for a in archs) if archs else BUILD_CPU


def _finding(check: str, status: str, saw: str, fix: str = "") -> dict[str, str]:
    return {"check": check, "status": status, "saw": saw, "fix": fix}


def binary_finding(settings: "Settings", gpus: list["GpuFacts"]) -> tuple[dict[str, str], Build | None]:
    binary, build = find_binary(settings.llama_server.binary)
    needed = settings.backend == "llama-server"
    if binary is None or not binary.is_file():
        saw = f"llama_server.binary {binary} is not a file" if binary else "no llama-server built or on PATH"
        return _finding("llama-server", "fail" if needed else "skip", saw, build_command(gpus)), None
    what = f"{binary}" + (f" ({build.variant}, llama-cpp-python {build.llama_cpp_python})" if build else " (not built here)")
    return _finding("llama-server", "pass", what), build


def arch_finding(build: Build | None, gpus: list["GpuFacts"]) -> dict[str, str] | None:
    """The build's CUDA architectures against the GPUs' compute capabilities."""
    if build is None or not gpus:
        return None
    caps = gpu_archs(gpus)
    if not build.cuda_archs:
        return _finding("llama-server GPUs", "warn", f"a CPU build on a machine with GPUs (sm_{', sm_'.join(map(str, caps))})",
                        build_command(gpus))  # fmt: skip
    missing = [c for c in caps if c < min(build.cuda_archs)]
    built = ", ".join(f"sm_{a}" for a in build.cuda_archs)
    if missing:
        return _finding("llama-server GPUs", "fail",
                        f"built for {built} (CUDA {build.cuda}); GPUs sm_{', sm_'.join(map(str, missing))} have no kernels in it "
                        "(no kernel image is available for execution on the device)", build_command(gpus))  # fmt: skip
    other = [c for c in caps if c not in build.cuda_archs]
    if other:
        return _finding("llama-server GPUs", "warn", f"built for {built}; GPUs sm_{', sm_'.join(map(str, other))} run "
                        "it through PTX compiled at the first start (slower start, older kernels)", build_command(gpus))  # fmt: skip
    return _finding("llama-server GPUs", "pass", f"built for {built} (CUDA {build.cuda}), the GPUs' own")


def in_process_offload(settings: "Settings", gpus: list["GpuFacts"]) -> dict[str, str] | None:
    """The in-process backend set to put layers on GPUs, in the process that also loads the embedder."""
    if settings.backend != "llamacpp" or not gpus:
        return None
    layers = settings.llamacpp.n_gpu_layers
    if layers == 0:
        return None
    if layers is None:
        try:
            import llama_cpp

            offload = bool(llama_cpp.llama_supports_gpu_offload())
        except Exception:
            offload = False
        if not offload:
            return None
    return _finding(
        "in-process GPU", "warn",
        "the llamacpp backend offloads layers to a GPU in the process that also loads the embedder (FAISS, "
        "torch, ONNX Runtime): on an H200 that crashed at the first question in every load order",
        f"run the engine in its own process: {build_command(gpus)}, then serve with backend = llama-server",
    )  # fmt: skip


def add_toolkit_facts(settings: "Settings", facts: "Facts") -> None:
    """The CUDA toolkit a build would use and the built llama-server's record, for doctor's toolkit rule."""
    toolkit = find_toolkit()
    facts.nvcc_cuda = f"{toolkit.version[0]}.{toolkit.version[1]}" if toolkit else None
    _, build = find_binary(settings.llama_server.binary)
    if build is not None and build.cuda:
        facts.llama_server_build = {"cuda": build.cuda, "cuda_archs": list(build.cuda_archs)}


def engine_report(settings: "Settings", gpus: list["GpuFacts"]) -> dict[str, Any]:
    """The findings and their worst status."""
    first, build = binary_finding(settings, gpus)
    findings = [f for f in (first, arch_finding(build, gpus), in_process_offload(settings, gpus)) if f]
    status = max((f["status"] for f in findings), key=STATUS_ORDER.index)
    return {"status": status, "findings": findings}
