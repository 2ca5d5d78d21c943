"""Rules about software: the GPUs' presence, torch/vLLM/llama.cpp builds vs compute capability, the
driver's CUDA version, and dtypes and quantizations the kernels support.

Field experience quoted here comes from reports of 27B models on V100s; where those reports and the
engines disagree, the engines' own checks win (recipes/gpu-facts.md).
"""

from __future__ import annotations

from assistant.gpu.facts import Facts, GpuFacts
from assistant.gpu.hardware import GIB, arch_runs_on, sm_name
from assistant.gpu.presets import fork_presets
from assistant.gpu.rules.base import NO_GPU, Status, min_cc, rule, version_tuple
from assistant.gpu.support import (
    NATIVE_BF16_CAPABILITY,
    NATIVE_FP8_CAPABILITY,
    VLLM_V1_ON_VOLTA,
    is_fp8,
    kernel_support,
)
from assistant.gpu.volta import (
    CUDA_SM70_GOOD,
    V100_FORK,
    V100_FORK_TITLE,
    VLLM_SM70_SOURCE,
    sm70_toolkit_warning,
    vllm_lacks_sm70,
    vllm_way_out,
)

CPU_DEFAULT = (
    "nothing to do for the default setup: the llama.cpp backend runs the packaged GGUF on the CPU "
    "(backend = llamacpp, llamacpp.n_gpu_layers = 0)"
)
TORCH_FOR_VOLTA = (
    "install a torch whose torch.cuda.get_arch_list() includes {sm}: for sm_70 that is the CUDA 12.6 build "
    "(pip install torch --index-url https://download.pytorch.org/whl/cu126); CUDA 13 builds, and CUDA 12.8 builds "
    "from torch 2.11 on, carry no Volta kernels"
)
REBUILD_SM70 = (
    f"install CUDA {CUDA_SM70_GOOD} and build with it: assistant engine build llama-server --cuda-arch 70 "
    f"--nvcc /usr/local/cuda-{CUDA_SM70_GOOD}/bin/nvcc --force"
)
# Oldest driver branch shipped with each CUDA toolkit.
DRIVER_FOR_CUDA = {
    (11, 8): "520", (12, 0): "525", (12, 1): "530", (12, 2): "535", (12, 3): "545", (12, 4): "550",
    (12, 5): "555", (12, 6): "560", (12, 8): "570", (12, 9): "575", (13, 0): "580",
}  # fmt: skip


@rule("gpu-present", "NVIDIA GPUs")
def gpu_present(facts: Facts) -> tuple[Status, str, str]:
    if not facts.gpus:
        why = "; ".join(facts.notes) or "neither NVML nor nvidia-smi reported one"
        return "warn", f"no NVIDIA GPU found ({why})", CPU_DEFAULT + "; the GPU checks were skipped"
    names = sorted({f"{g.name} ({g.sm or 'sm_?'}, {(g.memory_total_bytes or 0) / GIB:.1f} GiB)" for g in facts.gpus})
    driver = f"; driver {facts.driver_version} (CUDA {facts.driver_cuda})" if facts.driver_version else ""
    return "pass", f"{len(facts.gpus)} x {', '.join(names)}{driver}", ""


@rule("torch-kernels", "torch carries kernels for these GPUs", on_visible_gpus=True)
def torch_kernels(facts: Facts, gpus: list[GpuFacts]) -> tuple[Status, str, str]:
    t = facts.torch
    if t is None:
        return "skip", "torch is not installed", ""
    if not t.cuda:
        sm = sm_name(min_cc(gpus) or (7, 0))
        return (
            "warn",
            f"torch {t.version} is a CPU-only build: GPU engines need a CUDA build",
            TORCH_FOR_VOLTA.format(sm=sm),
        )
    if t.arch_list is None:
        return "skip", f"torch {t.version} (CUDA {t.cuda}): arch list not inspected", ""
    missing = sorted(
        {
            g.sm
            for g in gpus
            if g.compute_capability and not any(arch_runs_on(a, g.compute_capability) for a in t.arch_list)
        }
    )
    carried = " ".join(t.arch_list) or "no CUDA architectures"
    if missing:
        return (
            "fail",
            f"torch {t.version} (CUDA {t.cuda}) carries {carried}: nothing runs on {', '.join(missing)} "
            "-> 'no kernel image is available for execution on the device'",
            TORCH_FOR_VOLTA.format(sm=missing[0]),
        )
    return "pass", f"torch {t.version} (CUDA {t.cuda}) carries {carried}", ""


@rule("driver-cuda", "driver new enough for torch's CUDA")
def driver_cuda(facts: Facts) -> tuple[Status, str, str]:
    if not facts.gpus:
        return NO_GPU
    t = facts.torch
    if t is None or not t.cuda or not facts.driver_cuda:
        return "skip", "torch's CUDA build or the driver's CUDA version is not known", ""
    drv, built = version_tuple(facts.driver_cuda)[:2], version_tuple(t.cuda)[:2]
    need = DRIVER_FOR_CUDA.get(built, "newer")
    saw = f"driver {facts.driver_version} supports CUDA {facts.driver_cuda}; "
    saw += f"torch {t.version} was built for CUDA {t.cuda}"
    if drv[0] < built[0]:
        return (
            "fail",
            saw,
            f"upgrade the driver to R{need} or newer, or install a torch built for CUDA {facts.driver_cuda} or older",
        )
    if drv < built:
        return (
            "warn",
            saw + " (minor-version compatibility runs most kernels; PTX JIT and newer features fail)",
            f"upgrade the driver to R{need} or newer",
        )
    return "pass", saw, ""


@rule("vllm-version", "vLLM release runs on these GPUs", on_visible_gpus=True)
def vllm_version(facts: Facts, gpus: list[GpuFacts]) -> tuple[Status, str, str]:
    cc = min_cc(gpus)
    if facts.intent.engine == V100_FORK:
        return "pass", (f"served by {V100_FORK_TITLE} in its own environment, reached through the openai backend; "
                        "the vLLM installed here is not used"), ""  # fmt: skip
    if not facts.vllm_version:
        return "skip", "vLLM is not installed (pip install 'local-rag-assistant[vllm]')", ""
    v = facts.vllm_version
    if cc and cc < (7, 5) and vllm_lacks_sm70(v):
        return (
            "fail",
            f"vLLM {v} ships no kernels for {sm_name(cc)} ({VLLM_SM70_SOURCE}; its docs ask for compute capability "
            "7.5 or newer): it stops at the first kernel with 'no kernel image is available for execution on the device'",
            vllm_way_out([p.name for p in fork_presets(len(gpus))]),
        )
    if cc and cc < (7, 0):
        return (
            "fail",
            f"vLLM {v} needs compute capability 7.0 or newer; this GPU is {sm_name(cc)}",
            "serve GGUF models with the llama.cpp backend",
        )
    if cc and cc < (8, 0) and version_tuple(v) < VLLM_V1_ON_VOLTA:
        need = ".".join(map(str, VLLM_V1_ON_VOLTA))
        return (
            "warn",
            f"vLLM {v} predates V1-engine support for compute capability < 8.0 ({need}): "
            f"on {sm_name(cc)} it runs the V0 engine, which later releases removed",
            f"pip install 'vllm>={need}' with a torch that carries {sm_name(cc)}",
        )
    return "pass", f"vLLM {v} on {sm_name(cc) if cc else 'these GPUs'}", ""


@rule("llamacpp-cuda", "llama.cpp can offload to the GPUs", on_visible_gpus=True)
def llamacpp_cuda(facts: Facts, gpus: list[GpuFacts]) -> tuple[Status, str, str]:
    if not facts.llama_cpp_version or facts.llama_cpp_gpu_offload is None:
        return "skip", "llama-cpp-python not installed or not inspected", ""
    if not facts.llama_cpp_gpu_offload:
        archs = (
            ";".join(
                sorted({f"{g.compute_capability[0]}{g.compute_capability[1]}" for g in gpus if g.compute_capability})
            )
            or "70"
        )
        return (
            "warn",
            f"llama-cpp-python {facts.llama_cpp_version} is a CPU build: GGUF models will not use the GPUs",
            f"CMAKE_ARGS='-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES={archs}' "
            "pip install --force-reinstall --no-binary llama-cpp-python llama-cpp-python",
        )
    return "pass", f"llama-cpp-python {facts.llama_cpp_version} offloads to GPUs", ""


@rule("quant-kernels", "quantization kernels exist for these GPUs", on_visible_gpus=True)
def quant_kernels(facts: Facts, gpus: list[GpuFacts]) -> tuple[Status, str, str]:
    q = facts.intent.quant
    if not q or q in ("fp16", "bf16"):
        return "skip", "no quantization requested (give --quant or --preset)", ""
    cc = min_cc(gpus)
    if facts.intent.engine == V100_FORK and q == "awq" and cc and cc >= (7, 0):
        return "pass", f"AWQ through {V100_FORK_TITLE}: its own AWQ kernels run on {sm_name(cc)}", ""
    s = kernel_support(q, cc, facts.intent.kv_cache_dtype or "auto")
    if not s.supported:
        alts = {
            "gptq": "GPTQ 4-bit (vLLM's plain GPTQ kernels run on sm_70)",
            "gguf-q4_k_m": "GGUF Q4_K_M on llama.cpp",
            "gguf-q8_0": "GGUF Q8_0 on llama.cpp",
            "fp16": "float16",
        }
        return "fail", "; ".join(s.reasons), "use " + " or ".join(alts.get(a, a) for a in s.alternatives)
    return "pass", f"{q} kernels run on {sm_name(min_cc(gpus)) if min_cc(gpus) else 'these GPUs'}", ""


@rule("bf16", "BF16 only where it is native", on_visible_gpus=True)
def bf16(facts: Facts, gpus: list[GpuFacts]) -> tuple[Status, str, str]:
    cc = min_cc(gpus)
    intent = facts.intent
    explicit = (intent.dtype or "").lower() in ("bfloat16", "bf16") or intent.quant == "bf16"
    model_dtype = str((intent.model_config or {}).get("torch_dtype") or (intent.model_config or {}).get("dtype") or "")
    native = cc is not None and cc[0] * 10 + cc[1] >= NATIVE_BF16_CAPABILITY
    if not explicit and not intent.dtype and not model_dtype:
        return "skip", "no dtype or model given", ""
    if native:
        return "pass", f"{sm_name(cc)} has native BF16", ""
    where = sm_name(cc) if cc else "this GPU"
    if explicit:
        return (
            "fail",
            f"bfloat16 requested on {where}: vLLM stops with "
            "'Bfloat16 is only supported on GPUs with compute capability of at least 8.0'",
            "use --dtype float16 (half); the V100 presets do",
        )
    if model_dtype == "bfloat16" and (intent.dtype or "auto") == "auto":
        return (
            "warn",
            f"the model's weights are bfloat16 and --dtype is auto: on {where} they are cast to float16",
            "pass --dtype float16 explicitly so the cast is chosen, not discovered",
        )
    return "pass", f"dtype {intent.dtype or model_dtype} on {where}", ""


@rule("fp8-kv", "FP8 KV cache", on_visible_gpus=True)
def fp8_kv(facts: Facts, gpus: list[GpuFacts]) -> tuple[Status, str, str]:
    kv = facts.intent.kv_cache_dtype
    if not kv:
        return "skip", "no KV-cache dtype given", ""
    if not is_fp8(kv):
        return "pass", f"KV cache dtype {kv}", ""
    cc = min_cc(gpus)
    if cc and cc[0] * 10 + cc[1] < NATIVE_FP8_CAPABILITY:
        return (
            "warn",
            f"--kv-cache-dtype {kv} on {sm_name(cc)}: no hardware FP8, values are converted in software "
            "(field reports on V100: about 8 % slower, twice the context)",
            "keep it when the context matters more than speed; otherwise --kv-cache-dtype auto",
        )
    return "pass", f"--kv-cache-dtype {kv} is native on {sm_name(cc) if cc else 'these GPUs'}", ""


@rule("llama-server-cuda", "CUDA toolkit for a llama-server build on these GPUs", on_visible_gpus=True)
def llama_server_cuda(facts: Facts, gpus: list[GpuFacts]) -> tuple[Status, str, str]:
    """llama.cpp on V100s: CUDA 13 cannot build for sm_70, and CUDA 12.9 builds fail on V100-32GB."""
    cc = min_cc(gpus)
    volta = cc is not None and cc < (7, 5)
    build = facts.llama_server_build or {}
    if build.get("cuda") and build.get("cuda_archs"):
        made = version_tuple(str(build["cuda"]))[:2]
        archs = [int(a) for a in build["cuda_archs"]]
        warning = sm70_toolkit_warning(made, archs) if volta else None  # type: ignore[arg-type]
        if warning:
            return "warn", f"the llama-server built here: {warning}", REBUILD_SM70
        return "pass", f"the llama-server built here: CUDA {build['cuda']} for sm_{', sm_'.join(map(str, archs))}", ""
    if not facts.nvcc_cuda:
        return "skip", "no CUDA toolkit found and no CUDA llama-server built", ""
    tk = version_tuple(facts.nvcc_cuda)[:2]
    if volta and tk[0] >= 13:
        return (
            "fail",
            f"nvcc is CUDA {facts.nvcc_cuda}: CUDA 13 dropped Volta, `engine build --cuda-arch 70` is refused",
            REBUILD_SM70,
        )
    warning = sm70_toolkit_warning(tk, [70]) if volta else None  # type: ignore[arg-type]
    if warning:
        return "warn", f"nvcc is CUDA {facts.nvcc_cuda}: {warning}", REBUILD_SM70
    return "pass", f"nvcc is CUDA {facts.nvcc_cuda}", ""
