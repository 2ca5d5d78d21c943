"""scripts/profile_serve.py: py-spy's raw stacks split into the answer path's stages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "profile_serve.py"
LOOP = "Thread._bootstrap (threading.py:1002);Thread.run (threading.py:982);Handle._run (asyncio/events.py:80)"
RAW = "\n".join([
    f"{LOOP};Retriever._dense (indexes/retrieval/retriever.py:10);OnnxQueryEncoder.encode (indexes/embedding/embedder.py:5) 30",
    f"{LOOP};Retriever.search (indexes/retrieval/retriever.py:3);fuse (indexes/retrieval/fusion.py:9) 10",
    f"{LOOP};ask (assistant/routes/ask.py:40);encode (litestar/response/sse.py:121) 10",
    f"{LOOP};_SelectorSocketTransport.write (asyncio/selector_events.py:1057) 50",
    "Thread._bootstrap (threading.py:1002);EpollSelector.select (selectors.py:468) 400",  # a wait: left out
    "_run_module_as_main (<frozen runpy>:198);run (evals/bench_serve.py:10) 700",  # the bench's client
])


def test_busy_samples_of_the_server_threads_go_to_the_innermost_stage(tmp_path: Path) -> None:
    raw = tmp_path / "serve.raw"
    raw.write_text(RAW + "\n")
    out = subprocess.run([sys.executable, str(SCRIPT), str(raw)], capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    assert report["busy_samples"] == 100 and report["wait_samples_left_out"] == 400
    assert report["share"] == {
        "HTTP server and framework (uvicorn, litestar, asyncio, sockets)": 0.5,
        "question embedding": 0.3,
        "search: fusion, diversity, hits": 0.1,
        "the answer's events and SSE": 0.1,
    }


def test_a_missing_file_is_refused_with_the_usage(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "none.raw")], capture_output=True, text=True)
    assert out.returncode != 0 and "usage: profile_serve.py" in out.stderr
