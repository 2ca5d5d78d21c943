"""What doctor says about the engines: the llama-server build against the GPUs, and the in-process GPU crash."""

from __future__ import annotations

from assistant.engines.checks import engine_report
from assistant.gpu.facts import GpuFacts
from tests.support.llama_engine import write_build

V100 = GpuFacts(index=0, name="Tesla V100-SXM2-32GB", compute_capability=(7, 0))
H200 = GpuFacts(index=0, name="NVIDIA H200", compute_capability=(9, 0))


def findings(settings, gpus) -> dict[str, tuple[str, str, str]]:
    report = engine_report(settings, gpus)
    return {f["check"]: (f["status"], f["saw"], f["fix"]) for f in report["findings"]} | {"overall": (report["status"], "", "")}


def test_no_build_fails_only_when_the_llama_server_backend_is_chosen(settings_factory, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert findings(settings_factory(), [])["llama-server"][0] == "skip"
    chosen = findings(settings_factory(backend="llama-server"), [V100])
    assert chosen["llama-server"] == ("fail", "no llama-server built or on PATH", "assistant engine build llama-server --cuda-arch 70")
    assert chosen["overall"][0] == "fail"


def test_a_build_is_checked_against_the_gpus_compute_capabilities(settings_factory, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    write_build(tmp_path / "assistant" / "engines", "cuda-sm90", [90], cuda="12.4")
    on_v100 = findings(settings_factory(backend="llama-server"), [V100])
    assert on_v100["llama-server GPUs"][0] == "fail" and "no kernel image" in on_v100["llama-server GPUs"][1]
    assert findings(settings_factory(backend="llama-server"), [H200])["llama-server GPUs"][0] == "pass"


def test_a_cpu_build_on_a_gpu_machine_is_a_warning_with_the_cuda_build_command(settings_factory, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    write_build(tmp_path / "assistant" / "engines", "cpu", [])
    got = findings(settings_factory(backend="llama-server"), [H200])
    assert got["llama-server GPUs"][0] == "warn" and got["llama-server GPUs"][2] == "assistant engine build llama-server --cuda-arch 90"
    assert "llama-server GPUs" not in findings(settings_factory(backend="llama-server"), []), "no GPUs: nothing to match"


def test_in_process_gpu_offload_beside_the_embedder_is_warned_about(settings_factory, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    offload = findings(settings_factory(backend="llamacpp", llamacpp={"n_gpu_layers": -1}), [H200])
    assert offload["in-process GPU"][0] == "warn" and "backend = llama-server" in offload["in-process GPU"][2]
    assert "in-process GPU" not in findings(settings_factory(backend="llamacpp", llamacpp={"n_gpu_layers": 0}), [H200])
    assert "in-process GPU" not in findings(settings_factory(backend="llamacpp", llamacpp={"n_gpu_layers": -1}), [])
