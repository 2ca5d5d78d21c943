"""Greedy answers of the default model alone and with the 0.5B draft drafting, through the managed
llama-server (whatever build `assistant engine build llama-server` made): the engine's own tokens/s and its
drafted and accepted tokens, one JSON line per question (docs/benchmarks.md).

usage: PYTHONPATH=. .venv/bin/python scripts/speculative-check.py
"""
import json
import tempfile

import httpx

from assistant.backends.llama_server import LlamaServerProcess, resolve_launch
from assistant.backends.llamacpp import packaged_model_path
from assistant.settings import Settings
QS = ["Write a Python function that returns the squares of the numbers in a list.",
      "Write a Python function that reads a CSV file and returns its rows as dictionaries.",
      "Explain what a Python generator is, with a short example."]
out = {}
for name, extra in (("alone", {}), ("draft", {"draft_model": "qwen2.5-coder-0.5b-instruct", "draft_max": 8})):
    s = Settings(data_dir=tempfile.mkdtemp(), backend="llama-server", llama_server=dict(
        model=str(packaged_model_path("qwen2.5-coder-1.5b-instruct")), alias="qwen", parallel=1, ctx_per_slot=1024,
        threads=2, prompt_style="chat", **extra))
    p = LlamaServerProcess(s.llama_server, resolve_launch(s, free_gpu_bytes=[]))
    p.start()
    try:
        assert p.wait_ready(300), p.detail
        rows = []
        for q in QS:
            r = httpx.post(f"{p.base_url}/v1/chat/completions", json={"model": "qwen", "messages": [{"role": "user", "content": q}],
                           "max_tokens": 128, "temperature": 0, "seed": 0}, timeout=600).json()
            t = r["timings"]
            rows.append({"predicted_n": t["predicted_n"], "predicted_per_second": round(t["predicted_per_second"], 2),
                         "draft_n": t.get("draft_n"), "draft_n_accepted": t.get("draft_n_accepted"),
                         "text": r["choices"][0]["message"]["content"]})
        out[name] = rows
    finally:
        p.stop()
for a, d in zip(out["alone"], out["draft"]):
    print(json.dumps({"same_text": a["text"] == d["text"], "alone_tok_s": a["predicted_per_second"], "draft_tok_s": d["predicted_per_second"],
                      "tokens": a["predicted_n"], "drafted": d["draft_n"], "accepted": d["draft_n_accepted"]}))
