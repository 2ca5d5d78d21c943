"""`plan` arithmetic: KV bytes, weights, what fits, the decode ceiling, and the options offered."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from assistant.gpu.hardware import GIB, GPU_SPECS, parse_gpu_arg
from assistant.gpu.model import ModelInfo, ModelShape, load_model, read_safetensors_header
from assistant.gpu.plan import PlanRequest, decode_ceiling, kv_cache_bytes, make_plan
from tests.assistant.gpu.scenarios import CONFIG_27B, CONFIG_MOE_30B, CONFIG_QWEN_32B


def model(config: dict, path: str = "MODEL") -> ModelInfo:
    return ModelInfo(ModelShape.from_config(config), path)


def plan(config: dict, gpu: str, gpus: int, quant: str, max_model_len: int = 8192, **kw):
    return make_plan(model(config), PlanRequest(parse_gpu_arg(gpu), gpus, quant, max_model_len, **kw))


def test_kv_cache_reproduces_the_12_gib_example():
    # 4096 tokens x 32 sequences x 48 layers x 4 KV heads x 128 x 2 B x 2 = 12 GiB
    shape = ModelShape.from_config(
        {
            "num_hidden_layers": 48,
            "num_attention_heads": 32,
            "num_key_value_heads": 4,
            "head_dim": 128,
            "hidden_size": 2048,
        }
    )
    per_token = shape.kv_bytes_per_token(2)
    assert per_token == 2 * 48 * 4 * 128 * 2
    assert kv_cache_bytes(per_token, tokens=4096, seqs=32) == 12 * GIB


def test_qwen_32b_kv_bytes_per_token_fp16_and_fp8():
    fp16 = plan(CONFIG_QWEN_32B, "a100-80g", 1, "fp16")
    fp8 = plan(CONFIG_QWEN_32B, "a100-80g", 1, "fp16", kv_cache_dtype="fp8")
    assert fp16.kv_bytes_per_token == 262_144
    assert fp8.kv_bytes_per_token == 131_072


def test_qwen_32b_parameter_count_matches_the_published_size():
    # Qwen2.5-32B is published as 32.8B parameters.
    assert ModelShape.from_config(CONFIG_QWEN_32B).total_params() == pytest.approx(32.76e9, rel=0.005)


def test_decode_ceiling_for_15_5_gb_on_900_gb_s_is_about_58():
    assert decode_ceiling(15.5e9, 900e9) == pytest.approx(58.06, abs=0.01)


def test_27b_at_4_bits_on_one_v100_32g_has_a_ceiling_near_58():
    p = plan(CONFIG_27B, "v100-32g", 1, "gptq", 16384)
    assert 15.5e9 < p.weights_bytes < 16.5e9  # "~16 GB of weights"
    assert 54 < p.decode_ceiling_tok_s < 59
    assert p.decode_ceiling_full_context_tok_s < p.decode_ceiling_tok_s


def test_27b_fp16_does_not_fit_on_two_v100_16g():
    p = plan(CONFIG_27B, "v100-16g", 2, "fp16")
    assert p.weights_bytes == pytest.approx(54e9, rel=0.01)  # "54 GB of weights"
    assert not p.fits and p.supported
    assert p.max_concurrent_seqs == 0 and p.kv_pool_bytes == 0
    assert "weights need 27.0 GB per GPU" in p.fit_reasons[0]
    changes = [o["change"] for o in p.options]
    assert "--quant gptq" in changes and "--quant gguf-q4_k_m" in changes
    assert "--quant awq" not in changes and "--quant int8" not in changes  # no kernels on sm_70


def test_27b_awq_fits_two_v100_16g_but_is_unsupported_on_sm70():
    p = plan(CONFIG_27B, "v100-16g", 2, "awq")
    assert p.fits and p.max_concurrent_seqs >= 1
    assert not p.supported
    assert "7.5" in p.support_reasons[0] and "sm_70" in p.support_reasons[0]
    assert [o["change"] for o in p.options][:2] == ["--quant gptq", "--quant gguf-q4_k_m"]
    assert all(o["max_concurrent_seqs"] >= 1 for o in p.options)


def test_awq_runs_where_kernels_exist():
    p = plan(CONFIG_27B, "h100-80g", 1, "awq")
    assert p.fits and p.supported and p.options == []


def test_bf16_is_unsupported_on_volta_and_fp16_offered():
    p = plan(CONFIG_QWEN_32B, "v100-32g", 4, "bf16")
    assert not p.supported and "Bfloat16" in p.support_reasons[0]
    assert any(o["quant"] == "fp16" for o in p.options)


def test_kv_limited_plan_offers_shorter_context_and_more_gpus():
    p = plan(CONFIG_27B, "v100-32g", 1, "gptq", 65536)
    assert p.supported and not p.fits
    assert "fewer than one 65,536-token sequence" in p.fit_reasons[0]
    changes = {o["change"]: o for o in p.options}
    shorter = next(o for c, o in changes.items() if c.startswith("--max-model-len"))
    assert shorter["max_model_len"] <= p.kv_pool_tokens
    assert "--gpus 2" in changes


def test_json_keys_and_recommended_vllm_line():
    p = plan(CONFIG_27B, "v100-32g", 2, "gptq", 65536, kv_cache_dtype="fp8").to_dict()
    for key in (
        "weights_bytes",
        "kv_bytes_per_token",
        "kv_pool_bytes",
        "max_concurrent_seqs",
        "decode_ceiling_tok_s",
        "fits",
        "vllm_args",
    ):
        assert key in p
    args = p["vllm_args"]
    assert args[args.index("--tensor-parallel-size") + 1] == "2"
    assert args[args.index("--dtype") + 1] == "float16"
    assert args[args.index("--quantization") + 1] == "gptq"
    assert args[args.index("--kv-cache-dtype") + 1] == "fp8"
    assert p["presets"] == ["v100x2-32g-nvlink-interactive", "v100x2-32g-nvlink-batch", "v100x2-32g-1cat-awq"]
    assert any("vllm<0.21" in n for n in p["notes"]), "upstream vLLM >= 0.21 has no sm_70 kernels"
    json.dumps(p)  # JSON-ready


def test_attention_heads_must_divide_over_gpus():
    p = plan(CONFIG_QWEN_32B, "h200", 3, "fp16")
    assert not p.fits and any("40 attention heads" in r for r in p.fit_reasons)


def test_tensor_parallel_beyond_kv_heads_replicates_them():
    shape = {**CONFIG_QWEN_32B, "num_key_value_heads": 2}
    p = plan(shape, "h200", 8, "fp16")
    assert p.kv_bytes_per_token_per_gpu == 2 * 64 * 1 * 128 * 2


def test_gguf_plans_for_the_llama_cpp_backend():
    p = plan(CONFIG_27B, "v100-16g", 2, "gguf-q4_k_m")
    assert p.engine == "llama.cpp" and p.vllm_args == []
    assert "--backend llamacpp" in p.command and p.env["ASSISTANT_LLAMACPP_N_GPU_LAYERS"] == "-1"
    # layers are split, not tensors: the GPUs take turns, so one card's bandwidth bounds a stream
    assert p.decode_ceiling_tok_s == pytest.approx(900e9 / p.bytes_read_per_token, abs=0.1)


def test_moe_reads_only_active_experts_per_token():
    m = model(CONFIG_MOE_30B)
    assert m.shape.total_params() == pytest.approx(30.5e9, rel=0.01)  # published: 30.5B total
    active = m.shape.linear_params(active_only=True) + m.shape.embedding_params()
    assert active == pytest.approx(3.3e9, rel=0.02)  # published: 3.3B activated
    # a decode step reads the active experts and the LM head, but one row of the input embedding
    input_table = m.shape.vocab * m.shape.hidden
    assert m.bytes_read_per_token("fp16") == 2 * (active - input_table)


def test_gpu_argument_accepts_known_keys_and_custom_figures():
    assert parse_gpu_arg("V100-16G") is GPU_SPECS["v100-16g"]
    custom = parse_gpu_arg("24,936")
    assert custom.memory_bytes == 24 * GIB and custom.bandwidth_gbs == 936 and custom.capability is None
    with pytest.raises(ValueError, match="unknown GPU"):
        parse_gpu_arg("rtx-1")


def _tiny_config() -> dict:
    return {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 64,
            "intermediate_size": 128, "vocab_size": 1000, "tie_word_embeddings": False}  # fmt: skip


def _tiny_tensors() -> dict[str, np.ndarray]:
    t = {
        "model.embed_tokens.weight": np.zeros((1000, 64), np.float16),
        "lm_head.weight": np.zeros((1000, 64), np.float16),
    }
    for i in range(2):
        p = f"model.layers.{i}."
        t[p + "self_attn.q_proj.weight"] = np.zeros((64, 64), np.float16)
        t[p + "self_attn.k_proj.weight"] = np.zeros((32, 64), np.float16)
        t[p + "self_attn.v_proj.weight"] = np.zeros((32, 64), np.float16)
        t[p + "self_attn.o_proj.weight"] = np.zeros((64, 64), np.float16)
        for name in ("gate_proj", "up_proj"):
            t[p + f"mlp.{name}.weight"] = np.zeros((128, 64), np.float16)
        t[p + "mlp.down_proj.weight"] = np.zeros((64, 128), np.float16)
        t[p + "input_layernorm.weight"] = np.zeros((64,), np.float16)
    return t


def test_weights_from_safetensors_headers(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(_tiny_config()))
    tensors = _tiny_tensors()
    save_file(tensors, str(tmp_path / "model.safetensors"))
    m = load_model(tmp_path)
    header = read_safetensors_header(tmp_path / "model.safetensors")
    assert set(header) - {"__metadata__"} == set(tensors)
    fp16, source = m.weight_bytes("fp16")
    assert source.startswith("safetensors headers")
    assert fp16 == sum(a.nbytes for a in tensors.values())
    # the config estimate leaves out only the norms
    assert m.shape.total_params() * 2 == fp16 - 2 * 64 * 2
    # 4-bit: linear layers shrink, embeddings, LM head and norms stay 16-bit
    awq, _ = m.weight_bytes("awq")
    linear = m.shape.linear_params()
    assert awq == int(linear * (4 + 20 / 128) / 8 + (2 * 1000 * 64 + 2 * 64) * 2)


def test_sharded_checkpoint_and_already_quantized_weights(tmp_path):
    config = {**_tiny_config(), "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    shard1 = {"model.embed_tokens.weight": np.zeros((1000, 64), np.float16)}
    shard2 = {
        "model.layers.0.mlp.down_proj.qweight": np.zeros((128, 8), np.int32),
        "lm_head.weight": np.zeros((1000, 64), np.float16),
    }
    save_file(shard1, str(tmp_path / "model-00001-of-00002.safetensors"))
    save_file(shard2, str(tmp_path / "model-00002-of-00002.safetensors"))
    weight_map = {k: "model-00001-of-00002.safetensors" for k in shard1} | {
        k: "model-00002-of-00002.safetensors" for k in shard2
    }
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    m = load_model(tmp_path / "config.json")
    stored = sum(a.nbytes for a in [*shard1.values(), *shard2.values()])
    assert m.weight_bytes("awq") == (stored, "safetensors headers (checkpoint already quantized)")
    # another format cannot reuse the stored sizes: back to the config estimate
    assert m.weight_bytes("gptq")[1] == "config.json estimate"


def test_bad_inputs_are_reported(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path)
    with pytest.raises(ValueError, match="num_hidden_layers"):
        ModelShape.from_config({"hidden_size": 8})
    with pytest.raises(ValueError, match="unknown quantization"):
        model(CONFIG_27B).weight_bytes("int3")
    with pytest.raises(ValueError):
        plan(CONFIG_27B, "h200", 0, "fp16")
