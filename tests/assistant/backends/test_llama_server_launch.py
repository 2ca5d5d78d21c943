"""How the managed llama-server is started: its command line, and the slots and layers derived from the GPUs'
free memory and the GGUF (no engine started here; tests/assistant/backends/test_llama_server.py runs it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assistant.backends.base import BackendError
from assistant.backends.llama_server import CPU_SLOTS, Launch, build_command, resolve_launch
from assistant.gpu.gguf import GGUFError, read_metadata, read_model
from assistant.gpu.hardware import GIB
from assistant.gpu.plan import llama_server_args, llama_server_slots, llama_server_threads
from assistant.gpu.smi import load_facts


@pytest.fixture
def binary(tmp_path):
    path = tmp_path / "llama-server"
    path.write_text("#!/bin/sh\n")
    return str(path)


def test_the_command_line_has_the_slots_context_layers_and_every_setting(settings_factory, binary):
    settings = settings_factory(llama_server={"binary": binary, "tensor_split": [3, 1], "main_gpu": 1, "threads": 8,
                                              "flash_attn": "on", "extra_args": ["--cache-reuse", "256"]})  # fmt: skip
    launch = Launch(binary=binary, model="/m/q.gguf", alias="q", slots=8, ctx_per_slot=4096, gpu_layers=999, why="",
                    threads=8)
    cmd = build_command(settings.llama_server, launch, 41234)
    assert cmd[:3] == [binary, "--model", "/m/q.gguf"]
    pairs = {cmd[i]: cmd[i + 1] for i in range(1, len(cmd) - 1) if cmd[i].startswith("-")}
    assert pairs["--host"] == "127.0.0.1" and pairs["--port"] == "41234" and pairs["--alias"] == "q"
    assert pairs["-np"] == "8" and pairs["-c"] == str(8 * 4096) and pairs["-ngl"] == "999" and pairs["-fa"] == "on"
    assert pairs["-ts"] == "3,1" and pairs["-mg"] == "1" and pairs["-t"] == "8"
    assert {"--metrics", "--slots", "--cont-batching", "--no-webui"} <= set(cmd) and cmd[-2:] == ["--cache-reuse", "256"]


def test_the_slots_are_what_fits_in_the_gpus_beside_the_weights():
    per_slot = 28672 * 4096  # Qwen2.5-1.5B's KV per token (f16) x 4096 tokens
    assert llama_server_slots(1_117_320_768, 28672, 4096, [80 * GIB]) == 64, "capped at 64"
    assert llama_server_slots(16 * 10**9, 28672, 4096, [16 * GIB]) == 1, "never fewer than one"
    two = llama_server_slots(16 * 10**9, 28672, 4096, [12 * GIB, 12 * GIB])
    one = llama_server_slots(16 * 10**9, 28672, 4096, [12 * GIB])
    assert one == 1 and two == (int(0.9 * 12 * GIB) * 2 - 2 * int(0.75 * GIB) - 16 * 10**9) // per_slot > 1
    assert llama_server_args(100, 2048, 2, 16) == ["-ngl", "999", "-np", "64", "-c", str(64 * 2048), "-fa", "on", "-t", "4",
                                                   "-ts", "1,1"]


def test_with_every_layer_on_the_gpus_the_engine_leaves_most_cores_to_the_server():
    assert [llama_server_threads(n) for n in (1, 2, 4, 8, 16, 64)] == [1, 1, 1, 2, 4, 4]


def test_the_launch_derives_layers_and_slots_from_the_gpus_or_takes_them_as_set(settings_factory, binary, gguf_path):
    settings = settings_factory(llama_server={"binary": binary, "model": str(gguf_path)})
    cpu = resolve_launch(settings, free_gpu_bytes=[])
    assert (cpu.gpu_layers, cpu.slots, cpu.ctx_per_slot) == (0, CPU_SLOTS, 4096) and cpu.alias == "gemma-3-270m-q4_k_m"
    assert cpu.threads is None, "on the CPU the engine's threads are its work: llama-server's own choice"
    gpu = resolve_launch(settings, free_gpu_bytes=[10 * GIB])
    gguf = read_model(gguf_path)
    assert gpu.gpu_layers == 999 and gpu.slots == llama_server_slots(gguf.file_bytes, gguf.kv_bytes_per_token(), 4096, [10 * GIB])
    assert "fit in 1 GPU(s)' free memory" in gpu.why
    assert gpu.threads == llama_server_threads(os.cpu_count() or 1) and "CPU threads" in gpu.why
    fixed = settings_factory(llama_server={"binary": binary, "model": str(gguf_path), "parallel": 3, "ctx_per_slot": 1024,
                                           "gpu_layers": 10, "alias": "g"})  # fmt: skip
    set_ = resolve_launch(fixed, free_gpu_bytes=[10 * GIB])
    assert (set_.slots, set_.ctx_per_slot, set_.gpu_layers, set_.alias, set_.why) == (3, 1024, 10, "g", "llama_server.parallel")
    assert set_.threads is None, "some layers on the CPU: its threads do the work there"
    threads = settings_factory(llama_server={"binary": binary, "model": str(gguf_path), "threads": 6})
    assert resolve_launch(threads, free_gpu_bytes=[10 * GIB]).threads == 6


def test_a_missing_binary_or_model_is_a_clear_error(settings_factory, tmp_path, gguf_path, monkeypatch, binary):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(BackendError, match="assistant engine build llama-server"):
        resolve_launch(settings_factory(llama_server={"model": str(gguf_path)}), free_gpu_bytes=[])
    with pytest.raises(BackendError, match="is not a file"):
        resolve_launch(settings_factory(llama_server={"binary": str(tmp_path / "nope"), "model": str(gguf_path)}), [])
    with pytest.raises(BackendError, match="is not a file"):
        resolve_launch(settings_factory(llama_server={"binary": binary, "model": str(tmp_path / "none.gguf")}), [])
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(BackendError, match="not a GGUF file"):
        resolve_launch(settings_factory(llama_server={"binary": binary, "model": str(not_gguf)}), [])


def test_the_gguf_header_gives_the_kv_cache_shape_without_reading_tensors(gguf_path, tmp_path):
    model = read_model(gguf_path)
    assert (model.architecture, model.layers, model.kv_heads, model.head_dim) == ("gemma3", 18, 1, 256)
    assert model.kv_bytes_per_token() == 2 * 18 * 1 * 256 * 2 and model.context_length == 32768
    assert read_metadata(gguf_path)["tokenizer.ggml.tokens"] is None, "the tokenizer's arrays are stepped over"
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(gguf_path.read_bytes()[:64])
    with pytest.raises(GGUFError, match="ends inside its header"):
        read_metadata(cut)


TWO_H200 = Path(__file__).parents[2] / "fixtures" / "gpu" / "h200-x2"  # the recorded two-GPU probe


def flags(cmd: list[str]) -> dict[str, str]:
    return {cmd[i]: cmd[i + 1] for i in range(1, len(cmd) - 1) if cmd[i].startswith("-")}


@pytest.mark.parametrize("mode", ["layer", "row"])
def test_one_model_over_two_gpus_splits_by_each_cards_free_memory(settings_factory, binary, gguf_path, mode):
    free = [g.memory_free_bytes for g in load_facts(TWO_H200).gpus]
    settings = settings_factory(llama_server={"binary": binary, "model": str(gguf_path), "split_mode": mode, "main_gpu": 1})
    launch = resolve_launch(settings, free_gpu_bytes=free)
    cmd = flags(build_command(settings.llama_server, launch, 1))
    assert cmd["-sm"] == mode and cmd["-ts"] == "139.8,139.8" and cmd["-mg"] == "1" and cmd["-ngl"] == "999"
    assert f"split over 2 GPUs by their free memory ({mode} mode)" in launch.why
    busy = resolve_launch(settings, free_gpu_bytes=[free[0], free[1] - 60 * GIB])  # a card already holding 60 GiB
    assert flags(build_command(settings.llama_server, busy, 1))["-ts"] == "139.8,79.8"


def test_a_split_as_set_wins_and_split_mode_none_keeps_the_model_on_the_main_gpu(settings_factory, binary, gguf_path):
    fixed = settings_factory(llama_server={"binary": binary, "model": str(gguf_path), "tensor_split": [3, 1]})
    assert flags(build_command(fixed.llama_server, resolve_launch(fixed, [80 * GIB, 80 * GIB]), 1))["-ts"] == "3,1"
    none = settings_factory(llama_server={"binary": binary, "model": str(gguf_path), "split_mode": "none", "main_gpu": 1})
    cmd = build_command(none.llama_server, resolve_launch(none, [80 * GIB, 80 * GIB]), 1)
    assert "-ts" not in cmd and flags(cmd)["-sm"] == "none" and flags(cmd)["-mg"] == "1"
    one = settings_factory(llama_server={"binary": binary, "model": str(gguf_path)})
    assert "-ts" not in build_command(one.llama_server, resolve_launch(one, [80 * GIB]), 1), "one GPU: nothing to split"


def test_plan_prints_the_split_from_the_recorded_two_gpu_probe(tmp_path):
    from assistant.gpu.plan import llama_server_args

    free = [g.memory_free_bytes for g in load_facts(TWO_H200).gpus]
    args = llama_server_args(64, 4096, 2, 16, free, "row")
    assert args[args.index("-sm") + 1] == "row" and args[args.index("-ts") + 1] == "139.8,139.8"
    assert llama_server_args(64, 4096, 2, 16)[-2:] == ["-ts", "1,1"], "without free memory read: equal shares"


def test_speculative_decoding_flags_come_from_the_settings(settings_factory, binary, gguf_path, tmp_path):
    draft = tmp_path / "draft.gguf"
    draft.write_bytes(b"GGUF")
    settings = settings_factory(llama_server={"binary": binary, "model": str(gguf_path), "draft_model": str(draft),
                                              "draft_max": 8, "draft_min": 2, "draft_gpu_layers": 99,
                                              "extra_args": ["--cache-reuse", "256"]})  # fmt: skip
    launch = resolve_launch(settings, free_gpu_bytes=[])
    cmd = build_command(settings.llama_server, launch, 1)
    got = flags(cmd)
    assert got["--spec-type"] == "draft-simple" and got["-md"] == str(draft) and got["--spec-draft-n-max"] == "8"
    assert got["--spec-draft-n-min"] == "2" and got["-ngld"] == "99" and cmd[-2:] == ["--cache-reuse", "256"]
    assert "speculative decoding (draft-simple)" in launch.why
    with pytest.raises(BackendError, match="neither a GGUF file nor a packaged model"):
        resolve_launch(settings_factory(llama_server={"binary": binary, "model": str(gguf_path), "draft_model": "nope"}), [])


def test_mtp_is_refused_by_a_build_without_it(settings_factory, tmp_path, gguf_path):
    old = tmp_path / "llama-server"
    old.write_text("#!/bin/sh\necho '--spec-type none,draft-simple,ngram-simple'\n")
    old.chmod(0o755)
    settings = settings_factory(llama_server={"binary": str(old), "model": str(gguf_path), "draft_model": str(gguf_path),
                                              "spec_type": "draft-mtp"})  # fmt: skip
    with pytest.raises(BackendError, match="no MTP speculative decoding"):
        resolve_launch(settings, free_gpu_bytes=[])
