"""`assistant bench serve` end to end over the echo backend: the server on a loopback port, the same
prompts straight to the backend, the report's figures per level, the environment and the plot."""

from __future__ import annotations

import json

import pytest

from assistant.cli import main
from evals.loadgen import Result, run_job, summarize
from indexes.store import Store
from tests.support.stores import write_pages


def test_summary_figures():
    results = [
        Result(ok=True, ttft_s=0.010, gaps_s=[0.002, 0.004], tokens=3),
        Result(ok=True, ttft_s=0.030, gaps_s=[0.006], tokens=2),
        Result(ok=False, error="HTTP 503"),
    ]
    s = summarize(results, wall_s=0.5, client_cpu_s=0.1, server_cpu_s=0.2)
    assert s["tokens"] == 5 and s["tok_s"] == 10.0 and s["errors"] == 1 and s["first_error"] == "HTTP 503"
    assert s["client_cpu_s"] == 0.1 and s["server_cpu_s"] == 0.2
    assert s["ttft_ms_p50"] == 20.0 and s["itl_ms_p50"] == 4.0
    assert s["ttft_ms_p99"] <= 30.0 and s["itl_ms_p99"] <= 6.0


def test_bench_serve_reports_ours_and_direct_per_level(tmp_path, embedder, capsys, monkeypatch):
    data_dir = tmp_path / "data"
    store = Store(data_dir)
    bodies = ["Install it with scripts/setup.sh.", "Settings come from a TOML file and the environment."]
    write_pages(store, embedder, "docs", {f"d{i}.md": (f"Doc {i}", body) for i, body in enumerate(bodies)})
    store.close()
    monkeypatch.setenv("ASSISTANT_BACKEND", "echo")
    monkeypatch.setenv("ASSISTANT_ECHO_DELAY_S", "0.002")
    out = tmp_path / "out"
    rc = main(["bench", "serve", "--data-dir", str(data_dir), "--collection", "docs", "--concurrency", "1,2",
               "--requests", "4", "--max-tokens", "16", "--out", str(out), "--json"])  # fmt: skip
    assert rc == 0
    report = json.loads(capsys.readouterr().out)
    assert [lv["concurrency"] for lv in report["levels"]] == [1, 2]
    for lv in report["levels"]:
        for side in ("ours", "direct"):
            s = lv[side]
            assert s["requests"] == 4 and s["errors"] == 0  # two rounds of two and s["tokens"] > 0 and s["tok_s"] > 0
            assert s["ttft_ms_p50"] is not None and s["itl_ms_p99"] is not None
        assert lv["ratio"] == round(lv["ours"]["tok_s"] / lv["direct"]["tok_s"], 3)
        assert lv["server_added_ttft_ms_p50"] == round(lv["ours"]["ttft_ms_p50"] - lv["direct"]["ttft_ms_p50"], 2)
        assert lv["ours"]["tokens"] == lv["direct"]["tokens"], "the same prompts give the same answers"
        assert lv["ours"]["retrieve_ms_p50"] > 0 and lv["ours"]["prompt_ms_p50"] >= 0 <= lv["ours"]["check_ms_p50"], (
            "where the server's time goes")
    env = report["environment"]
    assert {"torch", "cuda", "nccl", "driver", "gpus", "vllm", "llama_cpp", "backend"} <= env.keys()
    assert env["backend"]["name"] == "echo"
    assert (out / "bench-serve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "bench-serve.json").read_text())["levels"] == report["levels"]


def test_bench_serve_refuses_an_engine_that_answers_nothing_instead_of_printing_empty_figures(tmp_path, embedder, capsys,
                                                                                                monkeypatch):
    data_dir = tmp_path / "data"
    store = Store(data_dir)
    write_pages(store, embedder, "docs", {"d.md": ("Doc", "Install it with scripts/setup.sh.")})
    store.close()
    questions = tmp_path / "questions.txt"
    questions.write_text("How do I install it?\n")
    monkeypatch.setenv("ASSISTANT_BACKEND", "echo")
    monkeypatch.setenv("ASSISTANT_ECHO_REPLIES", json.dumps({"How do I install it?": ""}))  # ends before its first token
    rc = main(["bench", "serve", "--data-dir", str(data_dir), "--collection", "docs", "--concurrency", "1",
               "--requests", "2", "--questions", str(questions), "--out", str(tmp_path / "out"), "--json"])  # fmt: skip
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == "" and not (tmp_path / "out" / "bench-serve.json").exists()
    assert "got no answer tokens from the in-process engine" in captured.err
    assert "every answer ended before its first token" in captured.err


@pytest.mark.slow
async def test_direct_requests_carry_the_servers_sampling_settings(llama_server):
    """The direct side is asked exactly as the server asks: here a grammar only llama.cpp's server applies."""
    from tests.support.llama_server import MODEL_ALIAS as SERVER_MODEL

    item = {"messages": [{"role": "user", "content": "The capital of France is"}], "max_tokens": 8, "temperature": 0.0, "stop": []}
    job = {"kind": "openai", "url": llama_server, "model": SERVER_MODEL, "style": "completion",
           "sampling": {"grammar": 'root ::= "Lyon" "."'}, "concurrency": 2, "items": [item, item]}  # fmt: skip
    out = await run_job(job)
    assert [r["text"] for r in out["results"]] == ["Lyon.", "Lyon."]


@pytest.mark.slow
@pytest.mark.engine  # a ratio of speeds: measured alone on the machine, as the engine tests are
def test_bench_serve_is_fair_to_an_engine_with_a_prefix_cache(tmp_path, embedder, llama_server, capsys, monkeypatch):
    """llama-cpp-python's server keeps the last prompt's cache: without the untimed evaluation of every
    prompt before each round, the direct side replayed prompts the engine had just evaluated for ours
    (ratio 0.195 measured). Both sides now find the engine in the same state."""
    data_dir = tmp_path / "data"
    store = Store(data_dir)
    bodies = ["Install it with scripts/setup.sh, then run assistant serve.", "Settings come from a TOML file."]
    write_pages(store, embedder, "docs", {f"d{i}.md": (f"Doc {i}", body) for i, body in enumerate(bodies)})
    store.close()
    questions = tmp_path / "questions.txt"
    questions.write_text("How do I install it?\nWhere do settings come from?\n")
    for key, value in {"BACKEND": "openai", "OPENAI_BASE_URL": llama_server, "OPENAI_PROMPT_STYLE": "completion"}.items():
        monkeypatch.setenv(f"ASSISTANT_{key}", value)
    rc = main(["bench", "serve", "--data-dir", str(data_dir), "--collection", "docs", "--concurrency", "1",
               "--requests", "2", "--max-tokens", "24", "--questions", str(questions), "--out", str(tmp_path / "out"),
               "--json"])  # fmt: skip
    assert rc == 0
    (level,) = json.loads(capsys.readouterr().out)["levels"]
    assert level["ours"]["errors"] == 0 and level["direct"]["errors"] == 0, level
    assert level["ours"]["tokens"] == level["direct"]["tokens"] > 0
    assert 0.75 <= level["ratio"] <= 1.33, level
    # This engine has neither /metrics nor /slots: the report says it could not see inside it.
    assert level["ours"]["engine"] == {"peak_running": None, "idle_before": [None, None], "counters": None}
