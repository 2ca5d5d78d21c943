"""Against a real llama-server (built from the installed llama-cpp-python's llama.cpp source by `assistant
engine build llama-server --cpu`, the packaged Gemma-3-270M), started once for this module by the product's
own process manager: answers through /api/ask, /v1 and MCP, exact prompt counts, 16 questions in the
engine's slots at once, and a SIGKILL in the middle of an answer.

Skipped, saying how to build it, without a build.
"""

from __future__ import annotations

import json
from contextlib import contextmanager

import httpx
import openai
import pytest

from assistant.backends.llama_server import LlamaServerBackend, LlamaServerProcess, resolve_launch
from assistant.settings import Settings
from tests.assistant.mcp_api.test_mcp import http_session, payload
from tests.support.llama_engine import ALIAS, busy_slots, engine_counter, engine_settings
from tests.support.managed_engine import HANDBOOK, ask, ask_sixteen_at_once, kill_mid_answer, serving, started
from tests.support.stores import write_pages
from tests.support.wait import async_wait_until

pytestmark = [pytest.mark.slow, pytest.mark.engine]

# Answers that must still be running when the test acts on them: no end of sequence, and chat prompts, which
# have no stop strings (a completion prompt stops at the next "Question:").
RUN_TO_MAX_TOKENS = {"ignore_eos": True}


def make_settings(data_dir, gguf_path, generation: dict | None = None, **engine) -> Settings:
    return Settings(data_dir=data_dir, backend="llama-server", llama_server=engine_settings(model=str(gguf_path), **engine),
                    generation=generation or {})  # fmt: skip


@pytest.fixture(scope="module")
def engine(tmp_path_factory, gguf_path):
    """The real llama-server, started once by LlamaServerProcess and stopped after the module."""
    settings = make_settings(tmp_path_factory.mktemp("engine-data"), gguf_path)
    log_file = settings.data_dir / "logs" / "llama-server.log"
    yield from started(LlamaServerProcess(settings.llama_server, resolve_launch(settings, free_gpu_bytes=[]), log_file))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, embedder):
    from indexes.store import Store

    data_dir = tmp_path_factory.mktemp("engine-store")
    store = Store(data_dir)
    write_pages(store, embedder, "handbook", HANDBOOK)
    yield data_dir, store
    store.close()


@contextmanager
def running_app(settings: Settings, store, embedder, process: LlamaServerProcess):
    """Our server on a free loopback port, over a backend that shares the module's engine."""
    backend = LlamaServerBackend(settings, process=process)
    with serving(settings, store, embedder, backend) as url:
        yield url, backend


def test_the_launch_gives_every_slot_its_context_and_the_engine_reports_it(engine):
    cmd = engine.command()
    assert cmd[cmd.index("-np") + 1] == "16" and cmd[cmd.index("-c") + 1] == str(16 * 512)
    assert "--metrics" in cmd and "--slots" in cmd and cmd[cmd.index("--host") + 1] == "127.0.0.1"
    props = httpx.get(f"{engine.base_url}/props", timeout=5).json()
    assert props["default_generation_settings"]["n_ctx"] == 512 and props["total_slots"] == 16
    assert engine.slots() == {"total": 16, "busy": 0, "idle": 16}
    logged = engine.log_file.read_text()
    assert logged.startswith("--- ") and f"llama-server pid {engine.pid}: {' '.join(cmd)}" in logged
    assert "listening on" in logged, logged[-2000:]


async def test_prompt_counts_are_the_engines_own(engine, corpus, gguf_path):
    data_dir, _ = corpus
    source = "Book flights 14 days ahead through the travel desk; hotels need your manager's approval. " * 6
    messages = [{"role": "system", "content": f"Answer from the sources.\n\n[1] Travel — travel.md\n{source}"},
                {"role": "user", "content": "When do I book?"}]  # fmt: skip
    for style in ("completion", "chat"):
        backend = LlamaServerBackend(make_settings(data_dir, gguf_path, prompt_style=style), process=engine)
        try:
            assert backend.likely_tokens(messages) is None, "no guess before an exact count"
            backend.count_tokens([{"role": "user", "content": "Hi"}])
            assert backend.likely_tokens(messages) is None, "nor from a prompt that is mostly its template"
            ours = backend.count_tokens(messages)
            assert ours <= backend.likely_tokens(messages) <= ours * 1.1 + 1
            client = openai.OpenAI(base_url=backend.base_url, api_key="none")
            if style == "chat":
                usage = client.chat.completions.create(model=ALIAS, messages=messages, max_tokens=1).usage
            else:
                from assistant.backends.base import completion_text

                usage = client.completions.create(model=ALIAS, prompt=completion_text(messages), max_tokens=1).usage
            assert ours == usage.prompt_tokens, style
            assert backend.client.tokenize_route == "llama-server" and backend.context_window == 512
        finally:
            await backend.aclose()


async def test_answers_through_api_ask_v1_and_mcp_with_the_slots_in_status(engine, corpus, embedder, gguf_path):
    data_dir, store = corpus
    settings = make_settings(data_dir, gguf_path, generation={"max_tokens": 32, "temperature": 0})  # greedy: no empty draw
    with running_app(settings, store, embedder, engine) as (url, _):
        async with httpx.AsyncClient(timeout=120) as client:
            health = (await client.get(f"{url}/health")).json()
            assert health["status"] == "ok" and health["backend"]["name"] == "llama-server", health
            status = (await client.get(f"{url}/api/status")).json()["backend"]
            assert status["engine"]["slots"] == {"total": 16, "busy": 0, "idle": 16} and status["engine"]["state"] == "ready"
            assert str(gguf_path) not in json.dumps(status) and ".cache" not in json.dumps(status), "no server paths"
            events = await ask(client, url, "How many days before departure must flights be booked?")
            again = await ask(client, url, "How many days before departure must flights be booked?")
        kinds = [k for k, _ in events]
        assert kinds[0] == "retrieved" and "token" in kinds and kinds[-2:] == ["sources", "done"], kinds
        done = events[-1][1]
        assert done["answer"] and done["model"] == ALIAS and done["completion_tokens"] > 0
        assert events[-2][1]["sources"][0]["path"] == "travel/booking.md"
        # Once the engine has counted a prompt, the next goes out before its count, which runs beside it.
        assert done["timings"]["early_count_ms"] is None and again[-1][1]["timings"]["early_count_ms"] > 0
        assert again[-1][1]["prompt_tokens"] == done["prompt_tokens"] and again[-1][1]["completion_tokens"] > 0

        v1 = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="none")
        chat = await v1.chat.completions.create(model="rag:handbook", messages=[{"role": "user", "content": "Who books hotels?"}])
        assert chat.choices[0].message.content and chat.usage.completion_tokens > 0
        assert chat.model_extra["sources"][0]["path"] == "travel/booking.md"
        await v1.close()

        async with http_session(f"{url}/mcp") as session:
            answered = payload(await session.call_tool("ask", {"question": "How does annual leave accrue?", "collection": "handbook"}))
        assert answered["answer"] and answered["sources"][0]["path"] == "leave/vacation.md"


async def test_sixteen_concurrent_questions_are_all_in_the_engines_slots_at_once(engine, corpus, embedder, gguf_path):
    data_dir, store = corpus
    settings = make_settings(data_dir, gguf_path, prompt_style="chat", sampling=RUN_TO_MAX_TOKENS, generation={"max_tokens": 96})
    with running_app(settings, store, embedder, engine) as (url, _):
        results = await ask_sixteen_at_once(url, lambda: busy_slots(engine), "16 of the engine's slots generating at once")
    assert [r[-1][1].get("completion_tokens") for r in results] == [96] * 16, "the engine's own count, to max_tokens"


async def test_killed_mid_answer_gives_an_error_within_two_seconds_then_restarts_and_answers(engine, corpus, embedder, gguf_path):
    data_dir, store = corpus
    settings = make_settings(data_dir, gguf_path, prompt_style="chat", sampling=RUN_TO_MAX_TOKENS, generation={"max_tokens": 100})
    with running_app(settings, store, embedder, engine) as (url, _):
        async with httpx.AsyncClient(timeout=120) as client:
            error = await kill_mid_answer(client, url, engine, "Tell me about leave.")
            assert error[0] < 2.0 and error[1]["code"] == "backend_error", error
            await async_wait_until(lambda: engine.starts, accept=lambda n: n >= 2, timeout=60,
                                   what="the supervisor restarting the killed engine")
            assert engine.wait_ready(engine.cfg.start_timeout_s), engine.detail
            assert "SIGKILL" in engine.last_failure
            again = await ask(client, url, "Who books hotels?")
    assert again[-1][0] == "done" and again[-1][1]["answer"]
    assert engine_counter(engine, "llamacpp:requests_processing") == 0
