"""`doctor` on the V100 situations of 2026, each a recorded fixture with the findings it gives kept beside it
(tests/fixtures/gpu/v100*/doctor.json): upstream vLLM 0.21 on sm_70, a llama-server built with CUDA 12.9
for sm_70, a CUDA 13 toolkit, and the V100 fork behind the openai backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.gpu.doctor import diagnose, intent_from
from assistant.gpu.smi import load_facts

FIXTURES = Path(__file__).parents[2] / "fixtures" / "gpu"


def finding(report: dict, rule: str) -> dict:
    return next(f for f in report["findings"] if f["rule"] == rule)


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("v100*")))
def test_each_fixture_gives_the_findings_kept_beside_it(name):
    report = diagnose(load_facts(FIXTURES / name))
    kept = json.loads((FIXTURES / name / "doctor.json").read_text())
    assert {"status": report["status"], "findings": report["findings"]} == kept


def test_vllm_0_21_on_v100s_fails_with_the_way_out():
    report = diagnose(load_facts(FIXTURES / "v100x2-32g-vllm-0.21"))
    f = finding(report, "vllm-version")
    assert report["status"] == "fail" and f["status"] == "fail"
    assert "vLLM 0.21.0 ships no kernels for sm_70" in f["saw"] and "vllm#42756" in f["saw"]
    assert "backend = llama-server" in f["fix"] and "v100x2-32g-1cat-awq" in f["fix"] and "vllm<0.21" in f["fix"]


def test_a_llama_server_built_with_cuda_12_9_for_sm70_is_a_warning_naming_the_issue_and_12_8():
    f = finding(diagnose(load_facts(FIXTURES / "v100-32g-llama-cuda-12.9")), "llama-server-cuda")
    assert f["status"] == "warn" and "llama.cpp#28416" in f["saw"] and "--nvcc /usr/local/cuda-12.8/bin/nvcc" in f["fix"]


def test_a_cuda_13_toolkit_on_v100s_is_refused():
    f = finding(diagnose(load_facts(FIXTURES / "v100x2-16g-cuda-13")), "llama-server-cuda")
    assert f["status"] == "fail" and "CUDA 13 dropped Volta" in f["saw"] and "CUDA 12.8" in f["fix"]


def test_the_v100_fork_behind_the_openai_backend_passes_where_upstream_vllm_would_not():
    facts = load_facts(FIXTURES / "v100x2-32g-1cat-fork")
    report = diagnose(facts)
    assert report["status"] == "pass"
    assert finding(report, "vllm-version")["status"] == "pass" and "openai backend" in finding(report, "vllm-version")["saw"]
    assert finding(report, "quant-kernels")["status"] == "pass"
    # the same machine asked for AWQ on upstream vLLM: its AWQ kernels need sm_75
    facts.intent = intent_from(quant="awq", base=facts.intent.__class__(tensor_parallel_size=2))
    assert finding(diagnose(facts), "quant-kernels")["status"] == "fail"
    # and the fork's preset says the same as the recorded intent
    preset = intent_from(preset="v100x2-32g-1cat-awq")
    assert (preset.engine, preset.quant, preset.tensor_parallel_size) == ("1cat-vllm", "awq", 2)
