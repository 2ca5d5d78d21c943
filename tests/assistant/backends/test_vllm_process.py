"""The managed vLLM process: its command line and environment from settings, presets, and what happens
when the server cannot start (a real child process that fails, seen through the app's /health and /api/ask)."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from assistant.backends.engine_process import build_env, child_setup
from assistant.backends.vllm_process import VLLMProcess, build_command
from assistant.settings import Settings, VLLMSettings
from tests.support.wait import wait_until


def flag_value(cmd: list[str], flag: str) -> str:
    return cmd[cmd.index(flag) + 1]


def test_the_engine_process_gives_up_the_cpu_priority_asked():
    """`vllm.nice` lowers the child's priority (and so of every process vLLM starts), not ours."""
    import os
    import subprocess

    ours = os.nice(0)
    probe = [sys.executable, "-c", "import os; print(os.nice(0))"]
    assert int(subprocess.run(probe, preexec_fn=child_setup(7), capture_output=True, text=True).stdout) == min(ours + 7, 19)
    assert int(subprocess.run(probe, preexec_fn=child_setup(0), capture_output=True, text=True).stdout) == ours
    assert os.nice(0) == ours


def test_command_line_carries_every_setting():
    cfg = VLLMSettings(
        model="/models/gemma-27b-gptq", python="/opt/vllm/bin/python", served_model_name="gemma", dtype="float16",
        max_model_len=8192, tensor_parallel_size=2, gpu_memory_utilization=0.85, max_num_seqs=32,
        max_num_batched_tokens=4096, enable_chunked_prefill=True, enable_prefix_caching=False, kv_cache_dtype="fp8",
        swap_space=4, enforce_eager=True, quantization="gptq", extra_args=["--seed", "7", "--disable-log-stats"],
    )  # fmt: skip
    cmd = build_command(cfg, 41234)
    assert cmd[:3] == ["/opt/vllm/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    expected = {
        "--model": "/models/gemma-27b-gptq", "--served-model-name": "gemma", "--host": "127.0.0.1", "--port": "41234",
        "--dtype": "float16", "--max-model-len": "8192", "--tensor-parallel-size": "2",
        "--gpu-memory-utilization": "0.85", "--max-num-seqs": "32", "--max-num-batched-tokens": "4096",
        "--kv-cache-dtype": "fp8", "--swap-space": "4.0", "--quantization": "gptq",
    }  # fmt: skip
    assert {f: flag_value(cmd, f) for f in expected} == expected
    assert "--enable-chunked-prefill" in cmd and "--no-enable-prefix-caching" in cmd and "--enforce-eager" in cmd
    assert cmd[-3:] == ["--seed", "7", "--disable-log-stats"], "the escape hatch comes last, as given"


def test_unset_options_are_left_to_vllm_and_the_python_defaults_to_this_one():
    cmd = build_command(VLLMSettings(model="/m/qwen"), 9000)
    assert cmd[0] == sys.executable
    assert flag_value(cmd, "--served-model-name") == "qwen", "the folder name serves as the model name"
    for flag in ("--max-model-len", "--gpu-memory-utilization", "--max-num-seqs", "--swap-space", "--quantization",
                 "--kv-cache-dtype", "--enforce-eager", "--enable-prefix-caching", "--no-enable-prefix-caching"):  # fmt: skip
        assert flag not in cmd


def test_environment_comes_from_settings_over_this_process():
    cfg = VLLMSettings(model="/m", env={"NCCL_P2P_LEVEL": "NVL", "CUDA_VISIBLE_DEVICES": "0,1"})
    env = build_env(cfg, base={"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "3"})
    assert env["NCCL_P2P_LEVEL"] == "NVL" and env["CUDA_VISIBLE_DEVICES"] == "0,1" and env["PATH"] == "/usr/bin"


def test_settings_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ASSISTANT_VLLM_MAX_NUM_SEQS", "24")
    monkeypatch.setenv("ASSISTANT_VLLM_ENV", '{"NCCL_P2P_LEVEL": "NVL"}')
    monkeypatch.setenv("ASSISTANT_VLLM_EXTRA_ARGS", '["--seed", "1"]')
    s = Settings(data_dir=tmp_path, backend="vllm")
    assert s.vllm.max_num_seqs == 24 and s.vllm.env == {"NCCL_P2P_LEVEL": "NVL"} and s.vllm.extra_args == ["--seed", "1"]


def test_serve_flags_and_a_preset_become_vllm_settings(tmp_path):
    from assistant.cli import build_parser
    from assistant.gpu.presets import get_preset
    from assistant.settings import load_settings

    args = build_parser().parse_args(
        ["serve", "--backend", "vllm", "--model", "/m/gemma", "--preset", "v100x2-16g-nvlink-batch",
         "--tensor-parallel-size", "4", "--data-dir", str(tmp_path)]
    )  # fmt: skip
    s = load_settings(data_dir=args.data_dir, **args.overrides(args))
    preset = get_preset("v100x2-16g-nvlink-batch")
    assert s.backend == "vllm" and s.vllm.model == "/m/gemma"
    assert s.vllm.tensor_parallel_size == 4, "a flag given on the command line wins over the preset"
    assert s.vllm.env == preset.env and s.vllm.dtype == preset.flags["dtype"]
    assert s.vllm.max_num_seqs == preset.flags["max-num-seqs"] and s.vllm.enable_chunked_prefill is True
    cmd = build_command(s.vllm, 1)
    assert flag_value(cmd, "--quantization") == "gptq" and flag_value(cmd, "--max-model-len") == str(preset.max_model_len)


def test_unknown_preset_is_refused_with_the_known_names(tmp_path):
    from assistant.cli import main

    with pytest.raises(SystemExit, match="unknown preset 'nope'; known: .*-interactive"):
        main(["serve", "--backend", "vllm", "--model", "/m", "--preset", "nope", "--data-dir", str(tmp_path)])


def test_a_v100_fork_preset_is_not_started_as_upstream_vllm(tmp_path):
    from assistant.cli import main

    with pytest.raises(SystemExit, match="v100x2-32g-1cat-awq is for 1cat-vllm, which runs on its own.*--backend openai"):
        main(["serve", "--backend", "vllm", "--model", "/m", "--preset", "v100x2-32g-1cat-awq", "--data-dir", str(tmp_path)])


@pytest.fixture
def failing_vllm_settings(settings_factory):
    """Managed vLLM launched with an interpreter that has no vLLM: a real child that exits at once."""
    return settings_factory(
        backend="vllm",
        vllm={"model": "/nonexistent/model", "python": sys.executable, "restart_backoff_s": 0.2, "restart_backoff_max_s": 0.4},
    )


def test_a_server_that_cannot_start_is_restarted_with_backoff_and_reports_why(failing_vllm_settings):
    proc = VLLMProcess(failing_vllm_settings.vllm)
    proc.start()
    try:
        assert proc.wait_ready(30, give_up_on_exit=True) is False
        wait_until(lambda: proc.starts, accept=lambda n: n >= 3, timeout=30, what="a third start (it keeps trying)")
        assert proc.state in ("starting", "restarting")
        assert "No module named" in " ".join(proc.recent), "the child's own output is kept"
    finally:
        proc.stop()
    assert proc.state == "stopped"
    starts = proc.starts
    # Only the supervisor thread restarts the server: once it has ended, no restart can come.
    wait_until(lambda: [t for t in threading.enumerate() if t.name == "vllm-supervisor"], accept=lambda alive: not alive,
               timeout=10, what="the supervisor thread ending with stop()")
    assert proc.starts == starts, "no restart after stop"


async def test_health_is_degraded_and_ask_errors_promptly_while_vllm_cannot_start(failing_vllm_settings, embedder):
    from litestar.testing import AsyncTestClient

    from assistant.app import create_app
    from assistant.backends.factory import create_backend
    from assistant.services import Services
    from indexes.store import Store
    from tests.support.stores import write_pages

    settings = failing_vllm_settings
    store = Store(settings.data_dir)
    write_pages(store, embedder, "docs", {"a.md": ("A", "The travel desk books flights.")})
    backend = create_backend(settings)  # returns once the first start has failed
    services = Services.assemble(settings, store, embedder, backend)
    try:
        async with AsyncTestClient(app=create_app(settings, services)) as client:
            r = await client.get("/health")
            assert r.status_code == 503
            health = r.json()
            assert health["status"] == "degraded" and health["backend"]["name"] == "vllm"
            assert "vLLM" in health["backend"]["detail"] and "No module named" in health["backend"]["detail"]
            started = time.monotonic()
            r = await client.post("/api/ask", json={"question": "Who books flights?", "collection": "docs"})
            assert time.monotonic() - started < 5
            assert "event: error" in r.text and "not ready" in r.text
    finally:
        await backend.aclose()
        store.close()
    assert backend.process.state == "stopped"
