"""`assistant bench serve --conversations`: the prompt tokens a five-turn conversation makes llama-server
evaluate, its prompt cache on and off. The arithmetic and the refusals here; one run against the CPU
llama-server (the packaged Gemma-3-270M) shows the cache saving what the turns repeat."""

from __future__ import annotations

import json

import pytest

from assistant.cli import main
from assistant.settings import Settings
from evals.bench_conversations import TURNS, summary, with_cache
from indexes.store import Store
from tests.support.stores import write_pages


def test_the_cache_setting_goes_in_the_backends_own_sampling():
    s = with_cache(Settings(backend="llama-server", llama_server={"sampling": {"ignore_eos": True}}), False)
    assert s.llama_server.sampling == {"ignore_eos": True, "cache_prompt": False}
    assert with_cache(Settings(backend="openai"), True).openai.sampling == {"cache_prompt": True}


def test_the_summary_counts_per_answer_and_per_turn():
    turns = [{"conversation": c, "turn": t, "prompt_tokens": 100 * t, "evaluated": 100 if t == 1 else 40, "ttft_ms": 5.0}
             for c in (1, 2) for t in range(1, TURNS + 1)]  # fmt: skip
    s = summary(turns)
    assert s["answers"] == 10 and s["prompt_tokens"] == 2 * 1500 and s["evaluated"] == 2 * (100 + 4 * 40)
    assert s["evaluated_per_answer"] == 52.0 and s["by_turn"]["1"]["evaluated_mean"] == 100
    assert s["by_turn"]["5"] == {"prompt_tokens_mean": 500, "evaluated_mean": 40, "ttft_ms_p50": 5.0}


def test_a_backend_without_llama_servers_counters_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ASSISTANT_BACKEND", "echo")
    rc = main(["bench", "serve", "--data-dir", str(tmp_path), "--collection", "docs", "--conversations", "1"])
    assert rc == 2 and "it needs llama-server" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.engine
def test_the_prompt_cache_saves_what_the_turns_repeat(tmp_path, embedder, gguf_path, capsys, monkeypatch):
    from tests.support.llama_engine import engine_settings

    data_dir = tmp_path / "data"
    store = Store(data_dir)
    pages = {"install.md": ("Install", "Install it with scripts/setup.sh, then run assistant serve."),
             "config.md": ("Configuration", "Settings come from a TOML file and ASSISTANT_ environment variables."),
             "tests.md": ("Tests", "Run the tests with scripts/test.sh; the engine tests run alone.")}  # fmt: skip
    write_pages(store, embedder, "docs", pages)
    store.close()
    # Gemma-3 attends over a sliding window: without --swa-full llama-server keeps too little of a slot's
    # cache to reuse a prefix, and evaluates every prompt whole (measured: cache on = cache off).
    engine = engine_settings(model=str(gguf_path), parallel=2, ctx_per_slot=2048, extra_args='["--swa-full"]')
    monkeypatch.setenv("ASSISTANT_BACKEND", "llama-server")
    for key, value in engine.items():
        monkeypatch.setenv(f"ASSISTANT_LLAMA_SERVER_{key.upper()}", str(value))
    out = tmp_path / "out"
    rc = main(["bench", "serve", "--data-dir", str(data_dir), "--collection", "docs", "--conversations", "1",
               "--max-tokens", "8", "--out", str(out), "--json"])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    report = json.loads((out / "bench-conversations.json").read_text())
    on, off = report["cache_on"]["summary"], report["cache_off"]["summary"]
    assert on["answers"] == off["answers"] == TURNS and off["evaluated"] >= 0.9 * off["prompt_tokens"]
    assert on["evaluated"] < 0.8 * off["evaluated"] and report["saved_share"] > 0.2
    later = [t for t in report["cache_on"]["turns"] if t["turn"] > 1]
    assert all(t["evaluated"] < t["prompt_tokens"] for t in later), "each later turn reuses the one before"
