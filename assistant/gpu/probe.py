"""Gather facts from this machine: NVML (nvidia-ml-py), `nvidia-smi`, installed engines, /dev/shm, env.

Every source is optional: a missing library, driver or binary becomes a note, never an exception,
so `doctor` and `status` run on machines without GPUs. torch is imported only when GPUs exist (its
import costs seconds and its CUDA facts only matter then); otherwise package metadata suffices.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

from assistant.gpu.facts import Facts, GpuFacts, Intent, TorchFacts, merge_gpus, relevant_env
from assistant.gpu.smi import cuda_version_str, nvml_gpus, parse_smi_xml, parse_topology

SMI_TIMEOUT_S = 20


def _try(fn: Callable[..., Any], *args: Any) -> Any:
    """One NVML reading; a reading the GPU does not support is None, not an error."""
    import pynvml

    try:
        value = fn(*args)
    except pynvml.NVMLError:
        return None
    return value.decode() if isinstance(value, bytes) else value


def _read_device(pynvml: Any, index: int) -> dict[str, Any]:
    h = pynvml.nvmlDeviceGetHandleByIndex(index)
    mem = _try(pynvml.nvmlDeviceGetMemoryInfo, h)
    util = _try(pynvml.nvmlDeviceGetUtilizationRates, h)
    power = _try(pynvml.nvmlDeviceGetPowerUsage, h)
    limit = _try(pynvml.nvmlDeviceGetEnforcedPowerLimit, h)
    pci = _try(pynvml.nvmlDeviceGetPciInfo, h)
    reasons_fn = (
        getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
    )
    states = []
    for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
        state = _try(pynvml.nvmlDeviceGetNvLinkState, h, link)
        if state is None:
            break
        states.append(int(state))
    bus = pci.busId if pci is not None else None
    return {
        "index": index,
        "name": _try(pynvml.nvmlDeviceGetName, h),
        "uuid": _try(pynvml.nvmlDeviceGetUUID, h),
        "pci_bus_id": bus.decode() if isinstance(bus, bytes) else bus,
        "memory_total": mem.total if mem else None,
        "memory_used": mem.used if mem else None,
        "util_gpu": util.gpu if util else None,
        "temperature_c": _try(pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU),
        "slowdown_temp_c": _try(
            pynvml.nvmlDeviceGetTemperatureThreshold, h, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
        ),
        "sm_clock_mhz": _try(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_SM),
        "max_sm_clock_mhz": _try(pynvml.nvmlDeviceGetMaxClockInfo, h, pynvml.NVML_CLOCK_SM),
        "mem_clock_mhz": _try(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_MEM),
        "power_w": power / 1000 if power is not None else None,
        "power_limit_w": limit / 1000 if limit is not None else None,
        "throttle_reasons_bitmask": _try(reasons_fn, h),
        "compute_capability": list(_try(pynvml.nvmlDeviceGetCudaComputeCapability, h) or []) or None,
        "pcie_gen": _try(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, h),
        "pcie_width": _try(pynvml.nvmlDeviceGetCurrPcieLinkWidth, h),
        "nvlink_states": states,
    }


def read_nvml(notes: list[str]) -> dict[str, Any] | None:
    """Driver, CUDA driver version, per-GPU readings and NVLink pairs from NVML, or None (with a note)."""
    try:
        import pynvml
    except ImportError:
        notes.append("NVML: nvidia-ml-py is not installed (pip install 'local-rag-assistant[gpu]')")
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        notes.append(f"NVML: {exc}")
        return None
    try:
        count = pynvml.nvmlDeviceGetCount()
        gpus = [_read_device(pynvml, i) for i in range(count)]
        topology = {}
        for a in range(count):
            for b in range(a + 1, count):
                ha, hb = pynvml.nvmlDeviceGetHandleByIndex(a), pynvml.nvmlDeviceGetHandleByIndex(b)
                p2p = _try(pynvml.nvmlDeviceGetP2PStatus, ha, hb, pynvml.NVML_P2P_CAPS_INDEX_NVLINK)
                if p2p == pynvml.NVML_P2P_STATUS_OK:
                    topology[f"{a}-{b}"] = "NV"
        return {
            "driver": _try(pynvml.nvmlSystemGetDriverVersion),
            "cuda_driver_version": _try(pynvml.nvmlSystemGetCudaDriverVersion),
            "gpus": gpus,
            "topology": topology,
        }
    finally:
        pynvml.nvmlShutdown()


def run_smi(args: list[str], notes: list[str]) -> str | None:
    """Output of `nvidia-smi ARGS`, or None with a note saying why."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        notes.append("nvidia-smi: not on PATH")
        return None
    try:
        done = subprocess.run([exe, *args], capture_output=True, text=True, timeout=SMI_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        notes.append(f"nvidia-smi {' '.join(args)}: {exc}")
        return None
    if done.returncode != 0:
        notes.append(f"nvidia-smi {' '.join(args)}: {(done.stdout + done.stderr).strip()[:200]}")
        return None
    return done.stdout


def live_gpus(notes: list[str]) -> tuple[list[GpuFacts], dict[str, Any] | None]:
    """GPUs from NVML when it answers, else from `nvidia-smi -q -x` (and the raw NVML readings)."""
    nvml = read_nvml(notes)
    if nvml is not None:
        return nvml_gpus(nvml["gpus"]), nvml
    xml = run_smi(["-q", "-x"], notes)
    if xml is None:
        return [], None
    return parse_smi_xml(xml)[2], None


def _dist_version(name: str) -> str | None:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


def torch_facts(inspect: bool) -> TorchFacts | None:
    """torch's version from metadata; its CUDA build, arch list and NCCL by importing it when asked."""
    version = _dist_version("torch")
    if version is None:
        return None
    local = version.partition("+")[2]
    cuda = None
    if m := re.fullmatch(r"cu(\d+)(\d)", local):
        cuda = f"{m.group(1)}.{m.group(2)}"
    facts = TorchFacts(version=version, cuda=cuda)
    if not inspect:
        return facts  # an untagged wheel's CUDA build stays unknown (None) until inspected
    import torch

    facts.cuda = torch.version.cuda
    facts.arch_list = list(torch.cuda.get_arch_list()) if torch.version.cuda else []
    try:
        nccl = torch.cuda.nccl.version() if torch.version.cuda else None
        facts.nccl = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else (str(nccl) if nccl else None)
    except Exception:  # noqa: BLE001 - a build without NCCL simply has none to report
        facts.nccl = None
    return facts


def shm_bytes(path: str = "/dev/shm") -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_blocks * st.f_frsize


def collect_facts(env: Mapping[str, str] | None = None, intent: Intent | None = None) -> Facts:
    """Everything `doctor` checks, from this machine."""
    facts = Facts(source="live", env=relevant_env(dict(os.environ if env is None else env)), intent=intent or Intent())
    nvml = read_nvml(facts.notes)
    xml = run_smi(["-q", "-x"], facts.notes)
    xml_gpus: list[GpuFacts] = []
    if xml:
        facts.driver_version, facts.driver_cuda, xml_gpus = parse_smi_xml(xml)
    if nvml is not None:
        facts.driver_version = nvml["driver"] or facts.driver_version
        facts.driver_cuda = cuda_version_str(nvml["cuda_driver_version"]) or facts.driver_cuda
        facts.topology = dict(nvml["topology"])
    facts.gpus = merge_gpus(nvml_gpus(nvml["gpus"]) if nvml else [], xml_gpus)
    if len(facts.gpus) > 1 and (topo := run_smi(["topo", "-m"], facts.notes)):
        facts.topology.update(parse_topology(topo))
    facts.shm_bytes = shm_bytes()
    has_gpu = bool(facts.gpus)
    facts.torch = torch_facts(inspect=has_gpu)
    facts.vllm_version = _dist_version("vllm")
    facts.llama_cpp_version = _dist_version("llama_cpp_python")
    if has_gpu and facts.llama_cpp_version:
        try:
            import llama_cpp

            facts.llama_cpp_gpu_offload = bool(llama_cpp.llama_supports_gpu_offload())
        except Exception as exc:  # noqa: BLE001 - a broken build is a fact to report, not a crash
            facts.notes.append(f"llama_cpp: {exc}")
    return facts
