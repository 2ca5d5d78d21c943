"""Parsers for what NVIDIA tools print: `nvidia-smi -q -x`, `topo -m`, `nvlink -s`, `df -B1`, NVML readings.

The live probe and the recorded fixtures go through the same functions, so the parsing tested on
real recorded output is the parsing that runs on a user's machine.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from assistant.gpu.facts import Facts, GpuFacts, Intent, TorchFacts, merge_gpus, relevant_env
from assistant.gpu.hardware import MIB, capability_for, decode_throttle_reasons

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def _number(text: str | None) -> float | None:
    """'143771 MiB' -> 143771.0; 'N/A' / missing -> None."""
    if not text:
        return None
    m = _NUMBER.search(text)
    return float(m.group()) if m else None


def _first(el: ET.Element, *paths: str) -> str | None:
    for p in paths:
        node = el.find(p)
        if node is not None and node.text and node.text.strip() not in ("N/A", "Not Found", "[N/A]"):
            return node.text.strip()
    return None


def cuda_version_str(value: int | None) -> str | None:
    """NVML's integer CUDA driver version (12020) -> '12.2'."""
    if not value:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def parse_smi_xml(text: str) -> tuple[str | None, str | None, list[GpuFacts]]:
    """`nvidia-smi -q -x` -> (driver version, driver CUDA version, GPUs in NVML order)."""
    root = ET.fromstring(text)
    driver = _first(root, "driver_version")
    cuda = _first(root, "cuda_version")
    gpus = []
    for index, g in enumerate(root.findall("gpu")):
        name = _first(g, "product_name") or "unknown GPU"
        arch = _first(g, "product_architecture")
        reasons_el = g.find("clocks_event_reasons")
        if reasons_el is None:
            reasons_el = g.find("clocks_throttle_reasons")  # drivers before 535
        reasons = []
        if reasons_el is not None:
            for child in reasons_el:
                if (child.text or "").strip() == "Active":
                    reasons.append(re.sub(r"^clocks_(event|throttle)_reason_", "", child.tag))
        total_mib = _number(_first(g, "fb_memory_usage/total"))
        used_mib = _number(_first(g, "fb_memory_usage/used"))
        slowdown = _number(_first(g, "temperature/gpu_temp_slow_threshold"))
        gen = _number(_first(g, "pci/pci_gpu_link_info/pcie_gen/current_link_gen"))
        width = _number(_first(g, "pci/pci_gpu_link_info/link_widths/current_link_width"))
        sm = _number(_first(g, "clocks/sm_clock"))
        max_sm = _number(_first(g, "max_clocks/sm_clock"))
        gpus.append(
            GpuFacts(
                index=index,
                name=name,
                uuid=_first(g, "uuid"),
                pci_bus_id=_first(g, "pci/pci_bus_id") or g.get("id"),
                architecture=arch,
                compute_capability=capability_for(name, arch),
                memory_total_bytes=int(total_mib * MIB) if total_mib is not None else None,
                memory_used_bytes=int(used_mib * MIB) if used_mib is not None else None,
                utilization_pct=_number(_first(g, "utilization/gpu_util")),
                temperature_c=_number(_first(g, "temperature/gpu_temp")),
                slowdown_temp_c=slowdown if slowdown and slowdown > 0 else None,
                sm_clock_mhz=int(sm) if sm is not None else None,
                max_sm_clock_mhz=int(max_sm) if max_sm is not None else None,
                power_w=_number(
                    _first(
                        g,
                        "gpu_power_readings/instant_power_draw",
                        "gpu_power_readings/power_draw",
                        "power_readings/power_draw",
                    )
                ),
                power_limit_w=_number(
                    _first(
                        g,
                        "gpu_power_readings/current_power_limit",
                        "gpu_power_readings/power_limit",
                        "power_readings/power_limit",
                    )
                ),
                throttle_reasons=reasons,
                pcie_gen=int(gen) if gen is not None else None,
                pcie_width=int(width) if width is not None else None,
            )
        )
    return driver, cuda, gpus


def parse_topology(text: str) -> dict[str, str]:
    """`nvidia-smi topo -m` -> {"0-1": "NV18", ...} for every pair of GPUs."""
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    header = next((line for line in lines if re.search(r"\tGPU\d+", line)), None)
    if header is None:
        return {}
    columns = [c.strip() for c in header.split("\t")]
    links: dict[str, str] = {}
    for line in lines:
        cells = [c.strip() for c in line.split("\t")]
        m = re.fullmatch(r"GPU(\d+)", cells[0]) if cells else None
        if not m:
            continue
        a = int(m.group(1))
        for col, value in zip(columns[1:], cells[1:], strict=False):
            mc = re.fullmatch(r"GPU(\d+)", col)
            if mc and int(mc.group(1)) != a and value and value != "X":
                b = int(mc.group(1))
                links[f"{min(a, b)}-{max(a, b)}"] = value
    return links


def parse_nvlink_status(text: str) -> dict[int, int]:
    """`nvidia-smi nvlink -s` -> links up per GPU index (inactive links print '<inactive>')."""
    counts: dict[int, int] = {}
    current: int | None = None
    for line in text.splitlines():
        m = re.match(r"GPU (\d+):", line)
        if m:
            current = int(m.group(1))
            counts[current] = 0
        elif current is not None and re.match(r"\s*Link \d+: [0-9.]+ GB/s", line):
            counts[current] += 1
    return counts


def parse_df_bytes(text: str) -> int | None:
    """`df -B1 /dev/shm` -> the filesystem's size in bytes."""
    for line in text.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 2 and parts[1].isdigit():
            return int(parts[1])
    return None


def nvml_gpus(readings: list[dict[str, Any]]) -> list[GpuFacts]:
    """GPUs from NVML readings (the dicts probe.read_nvml() writes, recorded as torch-nvml.json)."""
    gpus = []
    for index, r in enumerate(readings):
        cc = r.get("compute_capability")
        states = r.get("nvlink_states")
        bitmask = r.get("throttle_reasons_bitmask")
        gpus.append(
            GpuFacts(
                index=r.get("index", index),
                name=r.get("name") or "unknown GPU",
                uuid=r.get("uuid"),
                pci_bus_id=r.get("pci_bus_id"),
                compute_capability=tuple(cc) if cc else capability_for(r.get("name") or ""),
                memory_total_bytes=r.get("memory_total"),
                memory_used_bytes=r.get("memory_used"),
                utilization_pct=r.get("util_gpu"),
                temperature_c=r.get("temperature_c"),
                slowdown_temp_c=r.get("slowdown_temp_c"),
                sm_clock_mhz=r.get("sm_clock_mhz"),
                max_sm_clock_mhz=r.get("max_sm_clock_mhz"),
                power_w=r.get("power_w"),
                power_limit_w=r.get("power_limit_w"),
                throttle_reasons=decode_throttle_reasons(bitmask) if bitmask is not None else [],
                nvlink_links_up=sum(1 for s in states if s) if states is not None else None,
                pcie_gen=r.get("pcie_gen"),
                pcie_width=r.get("pcie_width"),
            )
        )
    return gpus


def torch_facts(data: dict[str, Any] | None) -> TorchFacts | None:
    if not data or not data.get("version"):
        return None
    return TorchFacts(
        version=data["version"], cuda=data.get("cuda"), arch_list=data.get("arch_list"), nccl=data.get("nccl")
    )


def load_raw_folder(folder: Path) -> Facts:
    """Facts from a folder of recorded tool outputs; a missing file is a missing source, noted."""
    facts = Facts(source=str(folder))
    xml_gpus: list[GpuFacts] = []
    if (folder / "nvidia-smi-q.xml").is_file():
        facts.driver_version, facts.driver_cuda, xml_gpus = parse_smi_xml((folder / "nvidia-smi-q.xml").read_text())
    else:
        facts.notes.append("nvidia-smi -q -x: not recorded")
    nvml: list[GpuFacts] = []
    if (folder / "torch-nvml.json").is_file():
        data = json.loads((folder / "torch-nvml.json").read_text())
        facts.torch = torch_facts(data.get("torch"))
        nv = data.get("nvml") or {}
        nvml = nvml_gpus(nv.get("gpus") or [])
        facts.driver_version = nv.get("driver") or facts.driver_version
        facts.driver_cuda = cuda_version_str(nv.get("cuda_driver_version")) or facts.driver_cuda
        facts.env = relevant_env(data.get("env") or {})
        for key in ("vllm_version", "llama_cpp_version", "llama_cpp_gpu_offload"):
            if key in data:
                setattr(facts, key, data[key])
    else:
        facts.notes.append("NVML/torch readings: not recorded")
    facts.gpus = merge_gpus(nvml, xml_gpus)
    if (folder / "nvidia-smi-topo.txt").is_file():
        facts.topology = parse_topology((folder / "nvidia-smi-topo.txt").read_text())
    if (folder / "nvidia-smi-nvlink.txt").is_file():
        for index, up in parse_nvlink_status((folder / "nvidia-smi-nvlink.txt").read_text()).items():
            for gpu in facts.gpus:
                if gpu.index == index and gpu.nvlink_links_up is None:
                    gpu.nvlink_links_up = up
    if (folder / "dev-shm.txt").is_file():
        facts.shm_bytes = parse_df_bytes((folder / "dev-shm.txt").read_text())
    return facts


def load_facts(path: str | Path) -> Facts:
    """Recorded facts: a facts.json file, or a folder of raw probe outputs (plus optional facts.json
    and intent.json, which win over what the raw files say)."""
    path = Path(path)
    if path.is_file():
        data = json.loads(path.read_text())
        facts = Facts.from_dict(data.get("facts", data))  # `doctor --json` output, or bare facts
        facts.source = str(path)
        return facts
    if not path.is_dir():
        raise FileNotFoundError(f"no recorded facts at {path}")
    facts = load_raw_folder(path)
    if (path / "facts.json").is_file():
        recorded = json.loads((path / "facts.json").read_text())
        facts = Facts.from_dict({**facts.to_dict(), **recorded})
    if (path / "intent.json").is_file():
        facts.intent = Intent(**json.loads((path / "intent.json").read_text()))
    facts.source = str(path)
    return facts
