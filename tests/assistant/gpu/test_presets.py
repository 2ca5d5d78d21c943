"""Launch presets: the three V100 rigs in two modes for upstream vLLM, the V100 fork's two, and each one checked
by `plan` arithmetic."""

from __future__ import annotations

import pytest

from assistant.gpu.hardware import GPU_SPECS
from assistant.gpu.model import ModelInfo, ModelShape
from assistant.gpu.plan import PlanRequest, make_plan
from assistant.gpu.presets import fork_presets, get_preset, list_presets, presets_for
from tests.assistant.gpu.scenarios import CONFIG_27B


def test_three_rigs_two_modes():
    names = [p.name for p in list_presets()]
    assert names == [
        "v100x2-16g-nvlink-interactive", "v100x2-16g-nvlink-batch",
        "v100-32g-interactive", "v100-32g-batch",
        "v100x2-32g-nvlink-interactive", "v100x2-32g-nvlink-batch",
        "v100x2-32g-1cat-awq", "v100x4-32g-1cat-awq",
    ]  # fmt: skip


UPSTREAM = [p for p in list_presets() if p.engine == "vllm"]


@pytest.mark.parametrize("preset", fork_presets(), ids=lambda p: p.name)
def test_the_fork_presets_run_awq_on_their_own_and_fit(preset):
    assert preset.backend == "openai" and preset.quant == "awq" and preset.flags["dtype"] == "float16"
    assert preset.tensor_parallel_size == preset.gpus in (2, 4) and preset.gpu == "v100-32g"
    req = PlanRequest(GPU_SPECS[preset.gpu], preset.gpus, "awq", preset.max_model_len, preset.kv_cache_dtype,
                      preset.gpu_memory_utilization, max_num_seqs=preset.flags["max-num-seqs"])  # fmt: skip
    plan = make_plan(ModelInfo(ModelShape.from_config(CONFIG_27B), "MODEL"), req)
    assert plan.fits, plan.fit_reasons  # upstream vLLM's AWQ kernels need sm_75: the fork brings its own
    assert any("vLLM 0.21.0 and later ship no sm_70 kernels" in n for n in plan.notes)


@pytest.mark.parametrize("preset", UPSTREAM, ids=lambda p: p.name)
def test_mode_shapes_the_flags(preset):
    flags = preset.flags
    if preset.mode == "interactive":
        assert 8 <= flags["max-num-seqs"] <= 12 and flags["enable-prefix-caching"] is True
        assert "enable-chunked-prefill" not in flags
    else:
        assert flags["max-num-seqs"] >= 32 and flags["enable-chunked-prefill"] is True
    # what runs on sm_70: float16, GPTQ kernels (AWQ needs sm_75)
    assert flags["dtype"] == "float16" and flags["quantization"] == "gptq"
    assert preset.tensor_parallel_size == preset.gpus
    assert (preset.env.get("NCCL_P2P_LEVEL") == "NVL") == ("nvlink" in preset.name)


@pytest.mark.parametrize("preset", UPSTREAM, ids=lambda p: p.name)
def test_each_preset_fits_a_27b_model_on_its_rig(preset):
    req = PlanRequest(
        GPU_SPECS[preset.gpu], preset.gpus, preset.quant, preset.max_model_len, preset.kv_cache_dtype,
        preset.gpu_memory_utilization, max_num_seqs=preset.flags["max-num-seqs"],
        enforce_eager=bool(preset.flags.get("enforce-eager")),
    )  # fmt: skip
    plan = make_plan(ModelInfo(ModelShape.from_config(CONFIG_27B), "MODEL"), req)
    assert plan.fits and plan.supported, (plan.fit_reasons, plan.support_reasons)
    assert preset.name in plan.presets


def test_vllm_args_and_command():
    p = get_preset("v100x2-16g-nvlink-batch")
    args = p.vllm_args()
    assert args[:2] == ["--tensor-parallel-size", "2"]
    assert "--enforce-eager" in args and "True" not in args
    assert args[args.index("--max-num-seqs") + 1] == "32"
    assert p.command("/models/gemma-27b-gptq").startswith(
        "NCCL_P2P_LEVEL=NVL vllm serve /models/gemma-27b-gptq --tensor-parallel-size 2"
    )
    d = p.to_dict()
    assert d["vllm_args"] == args and d["env"] == {"NCCL_P2P_LEVEL": "NVL"}
    fp8 = get_preset("v100x2-32g-nvlink-interactive")
    assert fp8.kv_cache_dtype == "fp8" and fp8.max_model_len == 65536


def test_lookup():
    assert [p.name for p in presets_for("v100-32g", 1)] == ["v100-32g-interactive", "v100-32g-batch"]
    assert presets_for("h200", 1) == []
    with pytest.raises(KeyError, match="known: v100x2-16g-nvlink-interactive"):
        get_preset("a100-fast")


def test_presets_map_onto_the_vllm_settings():
    import assistant.settings as settings_module

    vllm_settings = getattr(settings_module, "VLLMSettings", None)
    if vllm_settings is None:
        pytest.skip("no vllm settings in this checkout")
    for p in list_presets():
        values = p.vllm_settings()
        assert set(values) <= set(vllm_settings.model_fields), p.name
        model = vllm_settings(**values)
        assert model.tensor_parallel_size == p.tensor_parallel_size and model.env == p.env
