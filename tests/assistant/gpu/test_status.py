"""Live GPU status from recorded output, from this machine, and the running server's backend."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from assistant.gpu.facts import Facts
from assistant.gpu.smi import load_facts
from assistant.gpu.hardware import MIB, decode_throttle_reasons
from assistant.gpu.probe import collect_facts, read_nvml
from assistant.gpu.smi import nvml_gpus, parse_smi_xml
from assistant.gpu.status import gpu_status, server_status
from tests.support.loopback import serving

H200_X2 = Path(__file__).resolve().parents[2] / "fixtures" / "gpu" / "h200-x2"
KEYS = {
    "memory_used_bytes",
    "memory_total_bytes",
    "utilization_pct",
    "temperature_c",
    "sm_clock_mhz",
    "power_w",
    "power_limit_w",
    "throttle_reasons",
}


def test_status_from_recorded_smi_xml():
    _, _, gpus = parse_smi_xml((H200_X2 / "nvidia-smi-q.xml").read_text())
    rows = gpu_status(Facts(gpus=gpus))
    assert [r["index"] for r in rows] == [0, 1]
    r = rows[1]
    assert KEYS <= set(r)
    assert r["memory_total_bytes"] == 143771 * MIB and r["memory_used_pct"] == 0.0
    assert r["temperature_c"] == 35 and r["sm_clock_mhz"] == 345 and r["power_limit_w"] == 700.0
    assert r["throttle_reasons"] == ["gpu_idle"] and r["slowed"] is False
    assert r["compute_capability"] == "9.0"
    json.dumps(rows)


def test_status_from_recorded_nvml_readings():
    readings = json.loads((H200_X2 / "torch-nvml.json").read_text())["nvml"]["gpus"]
    readings[0] = readings[0] | {"throttle_reasons_bitmask": 0x44, "temperature_c": 90}
    rows = gpu_status(Facts(gpus=nvml_gpus(readings)))
    assert rows[0]["throttle_reasons"] == ["sw_power_cap", "hw_thermal_slowdown"] and rows[0]["slowed"]
    assert rows[1]["memory_used_bytes"] == 648_347_648 and rows[1]["power_w"] == 77.4


def test_throttle_bits_decode_to_nvidia_smi_names():
    assert decode_throttle_reasons(0) == []
    assert decode_throttle_reasons(0x1 | 0x8 | 0x80) == ["gpu_idle", "hw_slowdown", "hw_power_brake_slowdown"]


def test_live_status_on_this_machine_is_a_list():
    notes: list[str] = []
    has_nvml = read_nvml(notes) is not None
    rows = gpu_status()
    assert isinstance(rows, list)
    facts = collect_facts()
    if not has_nvml and not facts.gpus:
        assert rows == [] and any(n.startswith("NVML") for n in facts.notes)
    for r in rows:
        assert KEYS <= set(r)


def test_recorded_folder_status_matches_its_gpus():
    assert len(gpu_status(load_facts(H200_X2))) == 2


@pytest.fixture
def status_server():
    body = json.dumps(
        {"backend": {"name": "echo", "model": "echo", "context_window": 4096, "healthy": True, "in_flight": 0}}
    )

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            ok = self.path == "/api/status"
            self.send_response(200 if ok else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode() if ok else b"{}")

        def log_message(self, *args):
            pass

    with serving(Handler) as port:
        yield f"http://127.0.0.1:{port}"


def test_server_status_reads_api_status(status_server):
    assert server_status(status_server)["backend"]["name"] == "echo"
    assert server_status(status_server + "/api/status")["backend"]["in_flight"] == 0


def test_server_status_is_none_when_nothing_answers(status_server):
    assert server_status("http://127.0.0.1:9", timeout_s=0.5) is None
    assert server_status(status_server + "/elsewhere") is None
