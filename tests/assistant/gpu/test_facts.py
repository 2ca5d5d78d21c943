"""Parsing what real NVIDIA machines reported, and loading recorded facts."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from assistant.gpu.doctor import diagnose
from assistant.gpu.facts import Facts
from assistant.gpu.smi import load_facts
from assistant.gpu.hardware import GIB, MIB, arch_runs_on, capability_for
from assistant.gpu.smi import parse_df_bytes, parse_nvlink_status, parse_smi_xml, parse_topology
from tests.conftest import shared_path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "gpu"
H200_X2 = FIXTURES / "h200-x2"


def test_smi_xml_of_two_h200s():
    driver, cuda, gpus = parse_smi_xml((H200_X2 / "nvidia-smi-q.xml").read_text())
    assert (driver, cuda) == ("580.159.04", "13.0")
    assert [g.index for g in gpus] == [0, 1]
    g = gpus[0]
    assert g.name == "NVIDIA H200" and g.architecture == "Hopper" and g.compute_capability == (9, 0)
    assert g.pci_bus_id == "00000000:00:06.0" and gpus[1].pci_bus_id == "00000000:00:07.0"
    assert g.memory_total_bytes == 143771 * MIB and g.memory_used_bytes == 0
    assert g.utilization_pct == 0 and g.temperature_c == 33
    assert g.sm_clock_mhz == 345 and g.max_sm_clock_mhz == 1980
    assert g.power_w == 75.97 and g.power_limit_w == 700.0
    assert g.throttle_reasons == ["gpu_idle"]
    assert (g.pcie_gen, g.pcie_width) == (5, 16)
    assert g.slowdown_temp_c is None  # H200 reports thresholds relative to T.Limit, not in degrees


def test_topology_nvlink_and_shm_outputs():
    assert parse_topology((H200_X2 / "nvidia-smi-topo.txt").read_text()) == {"0-1": "NV18"}
    # GPU 1's list was cut short when recorded: the parser counts what is there
    assert parse_nvlink_status((H200_X2 / "nvidia-smi-nvlink.txt").read_text()) == {0: 18, 1: 10}
    assert parse_df_bytes((H200_X2 / "dev-shm.txt").read_text()) == 256 * GIB


def test_folder_merges_nvml_readings_with_smi_xml():
    facts = load_facts(H200_X2)
    assert facts.source == str(H200_X2) and facts.notes == []
    assert len(facts.gpus) == 2 and facts.driver_cuda == "13.0"
    g = facts.gpus[0]
    assert g.memory_total_bytes == 150_754_820_096  # NVML's figure wins over nvidia-smi's MiB
    assert g.nvlink_links_up == 18 and g.compute_capability == (9, 0)
    assert g.architecture == "Hopper"  # only nvidia-smi reports it: filled in from the XML
    assert facts.torch.version == "2.11.0+cu130" and "sm_70" not in facts.torch.arch_list
    assert facts.env == {"CUDA_VERSION": "13.0.2", "NCCL_VERSION": "2.28.3-1", "NVIDIA_VISIBLE_DEVICES": "0,1"}
    assert facts.nvlinked(0, 1) and facts.link(1, 0) == "NV18"


def test_doctor_on_the_recorded_h200s():
    report = diagnose(load_facts(H200_X2))
    status = {f["rule"]: f["status"] for f in report["findings"]}
    assert status["gpu-present"] == status["torch-kernels"] == status["shm"] == status["thermal"] == "pass"
    assert status["driver-cuda"] == "pass"
    assert status["nvlink-nccl"] == "warn"  # NV18 between the GPUs, NCCL_P2P_LEVEL not set


def test_the_recorded_torch_build_would_fail_on_a_v100():
    """The fixture's README: this torch (CUDA 13) has no sm_70 kernels."""
    facts = load_facts(H200_X2)
    facts.gpus = [replace(g, name="Tesla V100-SXM2-32GB", compute_capability=(7, 0)) for g in facts.gpus]
    f = next(f for f in diagnose(facts)["findings"] if f["rule"] == "torch-kernels")
    assert f["status"] == "fail" and "sm_70" in f["saw"] and "cu126" in f["fix"]


def test_recorded_intent_and_doctor_json_round_trip(tmp_path):
    folder = tmp_path / "rig"
    shutil.copytree(H200_X2, folder)
    (folder / "intent.json").write_text(json.dumps({"tensor_parallel_size": 4}))
    facts = load_facts(folder)
    assert facts.intent.tensor_parallel_size == 4
    report = diagnose(facts)
    saved = tmp_path / "doctor.json"
    saved.write_text(json.dumps(report))
    again = load_facts(saved)
    assert again.to_dict() | {"source": ""} == facts.to_dict() | {"source": ""}
    assert again.gpus[0].compute_capability == (9, 0)


def test_visible_gpus_follow_cuda_visible_devices():
    facts = load_facts(H200_X2)
    facts.gpus[1] = replace(facts.gpus[1], uuid="GPU-11111111-0000-0000-0000-000000000000")
    for value, indices, unknown in [
        ("1", [1], []),
        ("GPU-1111", [1], []),
        ("1,0", [1, 0], []),
        ("0,3,1", [0], ["3"]),
        ("-1", [], []),
    ]:
        facts.env["CUDA_VISIBLE_DEVICES"] = value
        visible, missing = facts.visible_gpus()
        assert [g.index for g in visible] == indices and missing == unknown, value


def test_older_driver_xml_names():
    """Drivers before 535 say clocks_throttle_reasons and power_readings, and give degrees for slowdown."""
    xml = """<nvidia_smi_log><driver_version>470.82.01</driver_version><cuda_version>11.4</cuda_version>
    <gpu id="00000000:00:1E.0"><product_name>Tesla V100-SXM2-16GB</product_name>
    <fb_memory_usage><total>16160 MiB</total><used>15000 MiB</used></fb_memory_usage>
    <clocks_throttle_reasons><clocks_throttle_reason_gpu_idle>Not Active</clocks_throttle_reason_gpu_idle>
    <clocks_throttle_reason_hw_thermal_slowdown>Active</clocks_throttle_reason_hw_thermal_slowdown></clocks_throttle_reasons>
    <temperature><gpu_temp>86 C</gpu_temp><gpu_temp_slow_threshold>87 C</gpu_temp_slow_threshold></temperature>
    <power_readings><power_draw>290.10 W</power_draw><power_limit>300.00 W</power_limit></power_readings>
    </gpu></nvidia_smi_log>"""
    driver, cuda, [g] = parse_smi_xml(xml)
    assert (driver, cuda) == ("470.82.01", "11.4")
    assert g.compute_capability == (7, 0) and g.pci_bus_id == "00000000:00:1E.0"
    assert g.throttle_reasons == ["hw_thermal_slowdown"]
    assert (g.temperature_c, g.slowdown_temp_c, g.power_w, g.power_limit_w) == (86, 87, 290.1, 300.0)
    assert g.memory_free_bytes == 1160 * MIB


def test_arch_compatibility_and_names():
    assert arch_runs_on("sm_80", (8, 6)) and not arch_runs_on("sm_86", (8, 0))
    assert not arch_runs_on("sm_75", (7, 0)) and arch_runs_on("compute_70", (9, 0))
    assert arch_runs_on("sm_90a", (9, 0)) and not arch_runs_on("sm_90a", (10, 0))
    assert capability_for("Tesla V100S-PCIE-32GB") == (7, 0)
    assert capability_for("Some Future GPU", "Blackwell") == (10, 0)
    assert capability_for("Mystery") is None


@pytest.mark.parametrize("name", ["gpu-probe-h200", "gpu-probe-h200-x2"])
def test_shared_recordings_parse(name):
    folder = shared_path("fixtures", name)
    facts = load_facts(folder)
    expected = json.loads((folder / "torch-nvml.json").read_text())
    assert len(facts.gpus) == expected["torch"]["device_count"] == len(expected["nvml"]["gpus"])
    assert all(g.compute_capability == (9, 0) and g.memory_total_bytes for g in facts.gpus)
    assert facts.shm_bytes and facts.shm_bytes >= 16 * GIB
    assert bool(facts.topology) == (len(facts.gpus) > 1)
    _, _, xml_gpus = parse_smi_xml((folder / "nvidia-smi-q.xml").read_text())
    assert [g.memory_total_bytes for g in xml_gpus] == [143771 * MIB] * len(facts.gpus)


def test_copied_subset_matches_the_shared_recording():
    shared = shared_path("fixtures", "gpu-probe-h200-x2")
    for f in H200_X2.iterdir():
        assert f.read_bytes() == (shared / f.name).read_bytes(), f.name


def test_from_dict_ignores_unknown_keys():
    data = Facts().to_dict() | {"recorded_by": "someone"}
    data["gpus"] = [{"index": 0, "name": "NVIDIA H200", "compute_capability": [9, 0], "future_field": 1}]
    facts = Facts.from_dict(data)
    assert facts.gpus[0].compute_capability == (9, 0)


def test_environment_keeps_gpu_settings_and_drops_credentials():
    from assistant.gpu.facts import relevant_env

    env = {"NCCL_P2P_LEVEL": "NVL", "CUDA_VISIBLE_DEVICES": "0,1", "VLLM_API_KEY": "s3cret", "HF_TOKEN": "t",
           "NVIDIA_REQUIRE_CUDA": "cuda>=13.0 brand=tesla,driver>=535", "PATH": "/usr/bin"}  # fmt: skip
    assert relevant_env(env) == {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_P2P_LEVEL": "NVL"}
