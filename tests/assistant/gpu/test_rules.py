"""Every doctor rule on facts that trigger it and facts that pass it, and the field scenarios end to end."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assistant.gpu.doctor import diagnose, intent_from
from assistant.gpu.facts import Facts, Intent, TorchFacts
from assistant.gpu.hardware import GIB, MIB
from assistant.gpu.rules import RULES
from tests.assistant.gpu.scenarios import CONFIG_27B, TORCH_CU130, h200, rig


def with_gpu(facts: Facts, index: int = 0, **changes) -> Facts:
    facts.gpus[index] = replace(facts.gpus[index], **changes)
    return facts


def finding(facts: Facts, rule_id: str):
    return next(f for f in diagnose(facts)["findings"] if f["rule"] == rule_id)


# rule id -> [(case, facts builder, expected status, text the finding must contain)]
CASES: dict[str, list[tuple[str, object, str, str]]] = {
    "gpu-present": [
        (
            "no GPU",
            lambda: Facts(notes=["NVML: NVML Shared Library Not Found", "nvidia-smi: not on PATH"]),
            "warn",
            "llama.cpp",
        ),
        ("V100s", lambda: rig(), "pass", "Tesla V100-SXM2-16GB (sm_70"),
    ],
    "torch-kernels": [
        ("CUDA 13 torch on sm_70", lambda: rig(torch=TORCH_CU130), "fail", "no kernel image is available"),
        ("CPU-only torch", lambda: rig(torch=TorchFacts("2.13.0+cpu")), "warn", "CPU-only"),
        ("cu126 torch on sm_70", lambda: rig(), "pass", "sm_70"),
        ("cu130 torch on sm_90", lambda: h200(), "pass", "sm_90"),
    ],
    "vllm-version": [
        ("V0-era vLLM on Volta", lambda: rig(vllm_version="0.9.2"), "warn", "0.10.2"),
        ("vLLM 0.10.2 on Volta", lambda: rig(), "pass", "vLLM 0.10.2"),
        ("old vLLM on Hopper", lambda: h200(vllm_version="0.9.2"), "pass", "sm_90"),
        ("vLLM 0.21 on Volta", lambda: rig(vllm_version="0.21.0"), "fail", "ships no kernels for sm_70"),
        ("vLLM 0.21 on Hopper", lambda: h200(vllm_version="0.21.0"), "pass", "sm_90"),
        ("the V100 fork", lambda: rig(vllm_version="0.21.0", intent=Intent(engine="1cat-vllm")), "pass", "openai backend"),
    ],
    "llama-server-cuda": [
        ("CUDA 13 nvcc on Volta", lambda: rig(nvcc_cuda="13.0"), "fail", "CUDA 13 dropped Volta"),
        ("CUDA 12.9 nvcc on Volta", lambda: rig(nvcc_cuda="12.9"), "warn", "llama.cpp#28416"),
        ("a CUDA 12.9 sm_70 build", lambda: rig(llama_server_build={"cuda": "12.9", "cuda_archs": [70]}), "warn", "built here"),
        ("CUDA 12.8 nvcc on Volta", lambda: rig(nvcc_cuda="12.8"), "pass", "CUDA 12.8"),
        ("CUDA 13 nvcc on Hopper", lambda: h200(nvcc_cuda="13.0"), "pass", "CUDA 13.0"),
    ],
    "quant-kernels": [
        ("AWQ on sm_70", lambda: rig(intent=Intent(quant="awq")), "fail", "7.5"),
        ("INT8 W8A8 on sm_70", lambda: rig(intent=Intent(quant="int8")), "fail", "7.5"),
        ("GPTQ on sm_70", lambda: rig(intent=Intent(quant="gptq")), "pass", "gptq"),
        ("AWQ on sm_90", lambda: h200(intent=Intent(quant="awq")), "pass", "sm_90"),
    ],
    "bf16": [
        ("bf16 asked on sm_70", lambda: rig(intent=Intent(dtype="bfloat16")), "fail", "--dtype float16"),
        ("bf16 weights, dtype auto", lambda: rig(intent=Intent(model_config=CONFIG_27B)), "warn", "cast to float16"),
        ("float16 on sm_70", lambda: rig(intent=Intent(dtype="float16", model_config=CONFIG_27B)), "pass", "float16"),
        ("bf16 on sm_90", lambda: h200(intent=Intent(dtype="bfloat16")), "pass", "native BF16"),
    ],
    "fp8-kv": [
        ("fp8 KV on sm_70", lambda: rig(intent=Intent(kv_cache_dtype="fp8")), "warn", "8 % slower"),
        ("auto KV on sm_70", lambda: rig(intent=Intent(kv_cache_dtype="auto")), "pass", "auto"),
        ("fp8 KV on sm_90", lambda: h200(intent=Intent(kv_cache_dtype="fp8")), "pass", "native"),
    ],
    "nvlink-nccl": [
        ("NVLink, NCCL_P2P_LEVEL unset", lambda: rig(), "warn", "NCCL_P2P_LEVEL is unset"),
        ("NVLink, P2P disabled", lambda: rig(env={"NCCL_P2P_DISABLE": "1"}), "fail", "NCCL_P2P_DISABLE=1"),
        ("NVLink, NCCL_P2P_LEVEL=NVL", lambda: rig(env={"NCCL_P2P_LEVEL": "NVL"}), "pass", "NV2"),
        ("PCIe only", lambda: rig(nvlink=False), "pass", "PCIe"),
    ],
    "shm": [
        ("Docker's 64 MB", lambda: rig(shm_bytes=64 * MIB), "fail", "--shm-size"),
        ("8 GiB", lambda: rig(shm_bytes=8 * GIB), "warn", "16 GiB"),
        ("32 GiB", lambda: rig(), "pass", "32.00 GiB"),
    ],
    "visible-devices": [
        (
            "TP 2 with one GPU visible",
            lambda: rig(env={"CUDA_VISIBLE_DEVICES": "0"}, intent=Intent(tensor_parallel_size=2)),
            "fail",
            "1 GPU(s) visible",
        ),
        (
            "unknown GPU listed",
            lambda: rig(env={"CUDA_VISIBLE_DEVICES": "0,7"}, intent=Intent(tensor_parallel_size=2)),
            "fail",
            "names 7",
        ),
        ("every GPU hidden", lambda: rig(env={"CUDA_VISIBLE_DEVICES": ""}), "fail", "hides every GPU"),
        ("TP 2 of 4 GPUs", lambda: rig(gpus=4, intent=Intent(tensor_parallel_size=2)), "warn", "2 stay idle"),
        ("TP 2 on two GPUs", lambda: rig(intent=Intent(tensor_parallel_size=2)), "pass", "tensor-parallel size 2"),
        (
            "by UUID",
            lambda: rig(env={"CUDA_VISIBLE_DEVICES": "GPU-00000001"}, intent=Intent(tensor_parallel_size=1)),
            "pass",
            "1 visible",
        ),
    ],
    "driver-cuda": [
        (
            "driver CUDA 12.2, torch cu130",
            lambda: rig(torch=TORCH_CU130, driver_cuda="12.2", driver_version="535.183.01"),
            "fail",
            "R580",
        ),
        (
            "driver CUDA 12.2, torch cu126",
            lambda: rig(driver_cuda="12.2", driver_version="535.183.01"),
            "warn",
            "minor-version",
        ),
        ("driver CUDA 12.6, torch cu126", lambda: rig(), "pass", "built for CUDA 12.6"),
    ],
    "thermal": [
        (
            "thermal slowdown",
            lambda: with_gpu(rig(), 1, temperature_c=88, throttle_reasons=["hw_thermal_slowdown"], sm_clock_mhz=900),
            "fail",
            "GPU1 88 C, throttling: hw_thermal_slowdown, SM 900/1530 MHz",
        ),
        ("power cap", lambda: with_gpu(rig(), 0, throttle_reasons=["sw_power_cap"]), "warn", "sw_power_cap"),
        ("hot, not yet slowed", lambda: with_gpu(rig(), 0, temperature_c=84, throttle_reasons=[]), "warn", "GPU0 84 C"),
        ("cool and idle", lambda: rig(), "pass", "(idle)"),
    ],
    "memory-fit": [
        (
            "27B FP16 on 2 x V100-16G",
            lambda: rig(
                intent=Intent(tensor_parallel_size=2, quant="fp16", max_model_len=8192, model_config=CONFIG_27B)
            ),
            "fail",
            "weights need 27.0 GB per GPU",
        ),
        (
            "another process holds memory",
            lambda: with_gpu(
                rig(1, 32, intent=Intent(quant="gptq", max_model_len=8192, model_config=CONFIG_27B)),
                0,
                memory_used_bytes=10 * GIB,
            ),
            "fail",
            "lower --gpu-memory-utilization",
        ),
        (
            "27B GPTQ on 1 x V100-32G",
            lambda: rig(1, 32, intent=Intent(quant="gptq", max_model_len=8192, model_config=CONFIG_27B)),
            "pass",
            "full-length sequence(s) of 8,192 tokens fit",
        ),
    ],
    "llamacpp-cuda": [
        (
            "CPU build of llama-cpp-python",
            lambda: rig(llama_cpp_gpu_offload=False),
            "warn",
            "CMAKE_CUDA_ARCHITECTURES=70",
        ),
        ("CUDA build", lambda: rig(), "pass", "offloads"),
    ],
}


def test_every_rule_has_a_triggering_and_a_passing_case():
    assert set(CASES) == {r.id for r in RULES}
    for rule_id, cases in CASES.items():
        statuses = {status for _, _, status, _ in cases}
        assert "pass" in statuses and statuses & {"warn", "fail"}, rule_id


@pytest.mark.parametrize(
    "rule_id,case,build,status,text",
    [(rid, case, build, status, text) for rid, cases in CASES.items() for case, build, status, text in cases],
    ids=[f"{rid}: {case}" for rid, cases in CASES.items() for case, *_ in cases],
)
def test_rule(rule_id, case, build, status, text):
    f = finding(build(), rule_id)
    assert f["status"] == status, f
    assert text in f["saw"] + " " + f["fix"], f
    if status in ("warn", "fail"):
        assert f["fix"], "a finding that is not a pass says what to do"


def test_without_a_gpu_only_the_presence_rule_speaks():
    report = diagnose(Facts(notes=["NVML: NVML Shared Library Not Found"]))
    assert report["status"] == "warn" and report["gpu_count"] == 0
    assert "llama.cpp" in report["summary"]
    assert [f["rule"] for f in report["findings"] if f["status"] != "skip"] == ["gpu-present"]


def test_scenario_2x_v100_16g_nvlink_fp16_27b():
    """Field report: FP16 27B with TP=2 does not fit; NCCL_P2P_LEVEL=NVL cut TP latency."""
    facts = rig(
        2, 16, intent=intent_from(model=None, dtype="float16", tensor_parallel_size=2, quant="fp16", max_model_len=8192)
    )
    facts.intent.model_config = CONFIG_27B
    report = diagnose(facts)
    status = {f["rule"]: f["status"] for f in report["findings"]}
    assert report["status"] == "fail"
    assert status["memory-fit"] == "fail" and status["nvlink-nccl"] == "warn"
    assert "--quant gptq" in finding(facts, "memory-fit")["fix"]


def test_scenario_1x_v100_32g_awq_27b():
    """Field report: 27B AWQ on one V100-32G: fits in memory, but vLLM has no AWQ kernels for sm_70."""
    facts = rig(1, 32, intent=Intent(quant="awq", max_model_len=16384, model_config=CONFIG_27B))
    status = {f["rule"]: f["status"] for f in diagnose(facts)["findings"]}
    assert status["memory-fit"] == "pass"
    assert status["quant-kernels"] == "fail"
    assert "GPTQ" in finding(facts, "quant-kernels")["fix"] and "GGUF" in finding(facts, "quant-kernels")["fix"]
    assert status["nvlink-nccl"] == "skip"


def test_scenario_2x_v100_32g_bridge_awq_64k_fp8():
    """Field report: 2 x V100-32G PCIe with an NVLink bridge, TP=2, AWQ, 64k context, FP8 KV."""
    intent = Intent(
        tensor_parallel_size=2, quant="awq", max_model_len=65536, kv_cache_dtype="fp8", model_config=CONFIG_27B
    )
    facts = rig(2, 32, intent=intent)
    status = {f["rule"]: f["status"] for f in diagnose(facts)["findings"]}
    assert status["fp8-kv"] == "warn" and status["quant-kernels"] == "fail" and status["nvlink-nccl"] == "warn"
    assert status["memory-fit"] == "pass"
    # the rig's preset, with NCCL told about NVLink, leaves only the FP8 trade-off to mention
    fixed = rig(2, 32, env={"NCCL_P2P_LEVEL": "NVL"}, intent=intent_from("v100x2-32g-nvlink-interactive"))
    fixed.intent.model_config = CONFIG_27B
    report = diagnose(fixed)
    assert report["status"] == "warn"
    assert [f["rule"] for f in report["findings"] if f["status"] in ("warn", "fail")] == ["fp8-kv"]


def test_intent_layers_preset_then_flags(tmp_path):
    (tmp_path / "config.json").write_text('{"num_hidden_layers": 2, "num_attention_heads": 2, "hidden_size": 8}')
    intent = intent_from("v100-32g-batch", model=str(tmp_path), max_model_len=4096)
    assert intent.quant == "gptq" and intent.dtype == "float16" and intent.max_model_len == 4096
    assert intent.model_config["num_hidden_layers"] == 2
    assert intent.source == "preset v100-32g-batch, flags"
    with pytest.raises(KeyError, match="unknown preset"):
        intent_from("nope")
    with pytest.raises(FileNotFoundError):
        intent_from(model=str(tmp_path / "missing"))
