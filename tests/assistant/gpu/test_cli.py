"""`assistant doctor | plan | status | presets` run as a user runs them: in a subprocess."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.gpu.facts import Intent
from tests.assistant.gpu.scenarios import CONFIG_27B, rig

REPO = Path(__file__).resolve().parents[3]
H200_X2 = REPO / "tests" / "fixtures" / "gpu" / "h200-x2"


@pytest.fixture
def cli(tmp_path):
    exe = Path(sys.executable).with_name("assistant")
    base = [str(exe)] if exe.exists() else [sys.executable, "-m", "assistant.cli"]
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "ASSISTANT_DATA_DIR": str(tmp_path / "data"),
        "COLUMNS": "200",
    }
    env.pop("ASSISTANT_CONFIG", None)

    def run(*args: str, **more_env: str) -> subprocess.CompletedProcess:
        return subprocess.run([*base, *args], capture_output=True, text=True, env={**env, **more_env}, cwd=REPO,
                              timeout=120)

    return run


@pytest.fixture
def config_27b(tmp_path) -> Path:
    path = tmp_path / "gemma-27b" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(CONFIG_27B))
    return path


def test_doctor_json_on_this_machine(cli):
    done = cli("doctor", "--json")
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert {"status", "gpu_count", "summary", "findings", "facts"} <= set(report)
    if report["gpu_count"] == 0:
        assert done.returncode == 0 and report["status"] == "warn"
        assert "llama.cpp" in report["summary"]
        presence = report["findings"][0]
        assert presence["rule"] == "gpu-present" and "no NVIDIA GPU" in presence["saw"]


def test_doctor_text_on_this_machine(cli):
    done = cli("doctor")
    assert done.returncode in (0, 1), done.stderr
    assert "verdict:" in done.stdout
    if "no NVIDIA GPU" in done.stdout:
        assert "llama.cpp" in done.stdout


def test_status_on_this_machine(cli):
    done = cli("status", "--json", "--url", "http://127.0.0.1:9")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["server_reachable"] is False and out["backend"] is None
    assert isinstance(out["gpus"], list)
    text = cli("status", "--url", "http://127.0.0.1:9")
    assert text.returncode == 0 and "nothing answers at http://127.0.0.1:9" in text.stdout
    if not out["gpus"]:
        assert "no NVIDIA GPU" in text.stdout


def test_doctor_says_which_model_answers_and_why(cli, tmp_path):
    cache = str(tmp_path / "cache")
    report = json.loads(cli("doctor", "--json", XDG_CACHE_HOME=cache).stdout)
    model = report["model"]
    assert model["name"] == "qwen2.5-coder-1.5b-instruct" and model["licence"] == "Apache-2.0"
    assert model["file"] == f"{cache}/assistant/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert model["size_bytes"] == 1_117_320_768 and model["why"].startswith("the packaged default instruct model")
    text = cli("doctor", XDG_CACHE_HOME=cache).stdout
    assert "model (llamacpp): Qwen2.5-Coder-1.5B-Instruct" in text and "licence: Apache-2.0" in text
    assert "the packaged default instruct model" in text
    fast = json.loads(cli("doctor", "--json", ASSISTANT_LLAMACPP_PACKAGED_MODEL="gemma-3-270m").stdout)["model"]
    assert fast["name"] == "gemma-3-270m" and "Gemma" in fast["licence"] and "packaged_model" in fast["why"]


def test_doctor_reports_ocr_and_the_command_that_installs_what_is_missing(cli, tmp_path):
    from indexes.ocr_tools import find_tools

    tools = find_tools()
    ocr = json.loads(cli("doctor", "--json").stdout)["ocr"]
    assert (ocr["tesseract"], ocr["languages"], ocr["configured"]) == (tools.tesseract, list(tools.languages),
                                                                        ["eng", "chi_sim"])
    if tools.tesseract and tools.pdftoppm and {"eng", "chi_sim"} <= set(tools.languages):
        assert ocr["status"] == "pass" and ocr["fix"] == "" and ocr["tesseract_version"] == tools.tesseract_version
        line = f"OCR: tesseract {tools.tesseract_version} (languages: {', '.join(tools.languages)}), poppler"
        assert line in cli("doctor").stdout
        other = json.loads(cli("doctor", "--json", ASSISTANT_INGEST_OCR_LANGUAGES="eng+kat").stdout)["ocr"]
        assert (other["status"], other["missing"], other["fix"]) == ("warn", ["kat"], "apt-get install tesseract-ocr-kat")

    nowhere = str(tmp_path / "nowhere" / "tesseract")
    gone = json.loads(cli("doctor", "--json", ASSISTANT_INGEST_OCR_COMMAND=nowhere).stdout)["ocr"]
    assert gone["status"] == "warn" and gone["tesseract"] is None and gone["saw"].startswith("OCR is not installed")
    assert gone["fix"].startswith("apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim")
    text = cli("doctor", ASSISTANT_INGEST_OCR_COMMAND=nowhere).stdout
    assert "OCR: no tesseract" in text and "fix: apt-get install tesseract-ocr tesseract-ocr-eng" in text


def test_status_says_which_model_answers_and_why(cli, tmp_path):
    gguf = tmp_path / "team-model.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 2044)
    out = json.loads(cli("status", "--json", "--url", "http://127.0.0.1:9", ASSISTANT_LLAMACPP_MODEL_PATH=str(gguf)).stdout)
    assert out["model"]["file"] == str(gguf) and out["model"]["size_bytes"] == 2048
    assert out["model"]["why"] == "the GGUF file configured in llamacpp.model_path"
    text = cli("status", "--url", "http://127.0.0.1:9").stdout
    assert "model (llamacpp): Qwen2.5-Coder-1.5B-Instruct" in text and "the packaged default instruct model" in text
    remote = json.loads(cli("status", "--json", "--url", "http://127.0.0.1:9", ASSISTANT_BACKEND="openai",
                            ASSISTANT_OPENAI_BASE_URL="http://10.0.0.5:8080/v1", ASSISTANT_OPENAI_MODEL="qwen-32b").stdout)
    assert remote["model"]["name"] == "qwen-32b" and remote["model"]["servers"] == ["http://10.0.0.5:8080/v1"]
    assert "OpenAI-compatible server" in remote["model"]["why"]


def test_status_says_when_the_running_server_answers_with_another_model(cli, settings_factory, make_services):
    """A real server (echo backend): `status` with the same settings agrees with it; with the default
    settings (the packaged instruct model) it says that the server answers instead."""
    from assistant.app import create_app
    from evals.local_server import serve_in_thread

    services = make_services(settings_factory())
    with serve_in_thread(create_app(services.settings, services)) as server:
        same = json.loads(cli("status", "--json", "--url", server.url, ASSISTANT_BACKEND="echo").stdout)
        other = json.loads(cli("status", "--json", "--url", server.url).stdout)
        text = cli("status", "--url", server.url).stdout
    assert same["backend"]["model"] == "echo" and same["model"]["server_agrees"] is True
    assert other["model"]["name"] == "qwen2.5-coder-1.5b-instruct" and other["model"]["server_agrees"] is False
    assert "model=echo" in text and "that server was started with other settings" in text


def test_status_shows_the_servers_search_processes(cli, settings_factory, make_services):
    from assistant.app import create_app
    from evals.local_server import serve_in_thread

    services = make_services(settings_factory(retrieval={"search_processes": 1}))
    try:
        with serve_in_thread(create_app(services.settings, services)) as server:
            shown = json.loads(cli("status", "--json", "--url", server.url, ASSISTANT_BACKEND="echo").stdout)
            text = cli("status", "--url", server.url, ASSISTANT_BACKEND="echo").stdout
    finally:
        services.retriever.processes.close()
    assert shown["search_processes"] == {"processes": 1, "ready": 1, "searched": 0}
    assert "search processes: 1 of 1 up, 0 searches taken from the server" in text


def test_doctor_on_a_recorded_scenario(cli, tmp_path):
    facts = rig(2, 16, intent=Intent(tensor_parallel_size=2, quant="fp16", max_model_len=8192, model_config=CONFIG_27B))
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts.to_dict()))
    done = cli("doctor", "--json", "--facts", str(path))
    assert done.returncode == 1, done.stderr
    status = {f["rule"]: f["status"] for f in json.loads(done.stdout)["findings"]}
    assert status["memory-fit"] == "fail" and status["nvlink-nccl"] == "warn"
    # the same machine checked with the rig's preset instead
    fixed = cli("doctor", "--facts", str(path), "--preset", "v100x2-16g-nvlink-interactive")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "checking: preset v100x2-16g-nvlink-interactive" in fixed.stdout


def test_doctor_on_recorded_h200_output_with_a_model(cli, config_27b):
    done = cli("doctor", "--json", "--facts", str(H200_X2), "--model", str(config_27b), "--tp", "2", "--quant", "awq")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    status = {f["rule"]: f["status"] for f in report["findings"]}
    assert report["gpu_count"] == 2 and status["memory-fit"] == "pass" and status["quant-kernels"] == "pass"


def test_plan_json_does_not_fit_and_suggests(cli, config_27b):
    done = cli(
        "plan",
        "--json",
        "--model",
        str(config_27b),
        "--gpu",
        "v100-16g",
        "--gpus",
        "2",
        "--quant",
        "fp16",
        "--max-model-len",
        "8192",
    )
    assert done.returncode == 1, done.stderr
    p = json.loads(done.stdout)
    assert p["fits"] is False and p["weights_bytes"] > 50e9
    assert any(o["change"] == "--quant gptq" for o in p["options"])


def test_plan_text_fits(cli, config_27b):
    done = cli(
        "plan", "--model", str(config_27b.parent), "--gpu", "v100-32g", "--quant", "gptq", "--max-model-len", "16384"
    )
    assert done.returncode == 0, done.stderr
    assert "launch: vllm serve" in done.stdout and "--quantization gptq" in done.stdout
    assert "v100-32g-interactive" in done.stdout
    slots = re.search(r"llama-server: -ngl 999 -np (\d+) -c (\d+) -fa on", done.stdout.replace("\n", " "))
    assert slots and int(slots.group(2)) == int(slots.group(1)) * 16384, "-c is the slots' context together"


def test_plan_rejects_bad_input(cli, config_27b, tmp_path):
    done = cli("plan", "--model", str(tmp_path / "none"), "--gpu", "v100-16g")
    assert done.returncode == 2 and "no config.json" in done.stderr
    done = cli("plan", "--model", str(config_27b), "--gpu", "tpu")
    assert done.returncode == 2 and "unknown GPU" in done.stderr


def test_presets_json(cli):
    done = cli("presets", "--json")
    assert done.returncode == 0
    names = [p["name"] for p in json.loads(done.stdout)["presets"]]
    assert len(names) == 8 and "v100-32g-batch" in names
    fork = next(p for p in json.loads(done.stdout)["presets"] if p["name"] == "v100x2-32g-1cat-awq")
    assert fork["engine"] == "1cat-vllm" and fork["backend"] == "openai" and fork["quant"] == "awq"
    text = cli("presets")
    assert "NCCL_P2P_LEVEL=NVL vllm serve MODEL" in text.stdout
    assert "then: assistant serve --backend openai" in text.stdout


def test_plan_for_two_gpus_splits_by_the_recorded_cards_free_memory(cli, config_27b):
    probe = str(Path(__file__).parents[2] / "fixtures" / "gpu" / "h200-x2")
    done = cli("plan", "--model", str(config_27b), "--gpu", "h200", "--quant", "gguf-q4_k_m", "--facts", probe,
               "--split-mode", "row", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["gpus"] == 2 and " ".join(plan["llama_server_args"]).endswith("-sm row -ts 139.8,139.8")
    mismatch = cli("plan", "--model", str(config_27b), "--gpu", "h200", "--gpus", "4", "--facts", probe)
    assert mismatch.returncode == 2 and "--facts shows 2 GPU(s), --gpus says 4" in mismatch.stderr
