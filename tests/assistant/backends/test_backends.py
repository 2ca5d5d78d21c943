"""The backends through the registry: echo (fast), llama.cpp in-process and an OpenAI-compatible server (real)."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from assistant.backends.base import BackendBusy, BackendError, GenParams, completion_text
from assistant.backends.factory import create_backend
from evals.local_server import free_port
from tests.support.llama_server import MODEL_ALIAS as SERVER_MODEL
from tests.support.wait import async_wait_until

QUESTION = [{"role": "user", "content": "Context:\n[1] France — geo/france.md\nThe capital of France is Paris.\n\n"
             "Question: What is the capital of France?\nAnswer:"}]
COUNTING = [{"role": "user", "content": "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,"}]


async def collect(stream) -> list[str]:
    return [piece async for piece in stream]


# --- echo ---------------------------------------------------------------------------------------


async def test_echo_through_the_registry(settings_factory):
    backend = create_backend(settings_factory(backend="echo", echo={"context_window": 1000}))
    assert (backend.name, backend.context_window, backend.prompt_style) == ("echo", 1000, "chat")
    messages = [{"role": "system", "content": "Sources:\n\n[1] A — a.md\ntext"}, {"role": "user", "content": "Where is it?"}]
    pieces = await collect(backend.stream(messages, GenParams(max_tokens=50)))
    assert pieces == ["Echo:", " Where", " is", " it?", " [1]"]
    assert await collect(backend.stream([{"role": "user", "content": "Hi there"}], GenParams())) == ["Echo:", " Hi", " there"]
    assert await collect(backend.stream(messages, GenParams(max_tokens=2))) == ["Echo:", " Where"]
    assert (await backend.health()).ok


async def test_echo_answers_the_question_of_a_completion_prompt(settings_factory):
    backend = create_backend(settings_factory(echo={"prompt_style": "completion"}))
    text = "".join(await collect(backend.stream(QUESTION, GenParams())))
    assert text == "Echo: What is the capital of France? [1]"


def test_echo_counts_deterministically(settings_factory):
    backend = create_backend(settings_factory())
    one = [{"role": "user", "content": "short words only"}]
    assert backend.count_tokens(one) == backend.count_tokens(list(one)) == 4 + 3 + 2
    assert backend.count_tokens([{"role": "user", "content": "a" * 17}]) == 4 + 3 + 2


def test_unknown_backend_is_a_clear_error(settings_factory):
    settings = settings_factory().model_copy(update={"backend": "nope"})
    with pytest.raises(BackendError, match="unknown backend 'nope'"):
        create_backend(settings)


# --- llama.cpp in-process (the packaged GGUF) ----------------------------------------------------


@pytest.mark.slow
def test_llama_counts_exactly_the_tokens_it_sends(llama):
    assert llama.prompt_style == "completion" and llama.context_window == 512  # base model: no chat template
    text = QUESTION[0]["content"]
    assert llama.count_tokens(QUESTION) == len(llama.llm.tokenize(text.encode(), add_bos=True, special=True))
    # llama-cpp-python's own completion of the same text reports the same prompt size
    assert llama.count_tokens(QUESTION) == llama.llm.create_completion(text, max_tokens=1)["usage"]["prompt_tokens"]
    two = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]
    assert llama.count_tokens(two) == len(llama.llm.tokenize(completion_text(two).encode(), add_bos=True, special=True))


@pytest.mark.slow
async def test_llama_streams_a_capped_answer(llama):
    stream = llama.stream(QUESTION, GenParams(max_tokens=8, temperature=0, stop=["\n\n", "Question:"]))
    pieces = await collect(stream)
    assert pieces and "".join(pieces).strip()
    assert "Paris" in "".join(pieces)
    assert 1 <= stream.completion_tokens <= 8
    assert llama.queued == 0
    health = await llama.health()
    assert health.ok and health.model == "gemma-3-270m-q4_k_m"


@pytest.mark.slow
async def test_llama_second_request_waits_and_a_full_queue_is_busy(llama):
    first = llama.stream(COUNTING, GenParams(max_tokens=24, temperature=0))
    await anext(first)  # it holds the model now
    second = llama.stream(QUESTION, GenParams(max_tokens=4, temperature=0))
    seen: dict[str, bool] = {}

    async def run_second() -> list[str]:
        pieces = []
        async for piece in second:
            seen.setdefault("first_alive", first.thread.is_alive())
            pieces.append(piece)
        return pieces

    task = asyncio.create_task(run_second())
    await async_wait_until(lambda: llama.queued, accept=lambda n: n >= 2, timeout=60, interval=0.01,
                           what="the second request waiting in the queue")
    assert second.thread is None  # admitted, waiting: not generating
    with pytest.raises(BackendBusy) as busy:  # max_queue=1: one waiting already
        llama.stream(QUESTION, GenParams(max_tokens=4))
    assert busy.value.retry_after >= 1
    rest = await collect(first)
    with anyio.fail_after(60):
        second_pieces = await task
    assert rest and second_pieces
    assert seen["first_alive"] is False  # the second started only after the first one's thread ended
    assert llama.queued == 0


@pytest.mark.slow
async def test_llama_closing_early_stops_generation(llama):
    first = llama.stream(COUNTING, GenParams(max_tokens=200, temperature=0))
    await anext(first)
    await anext(first)
    await first.aclose()
    with anyio.fail_after(60):
        after = await collect(llama.stream(QUESTION, GenParams(max_tokens=4, temperature=0)))
    assert after
    assert not first.thread.is_alive()
    assert first.completion_tokens < 50  # stopped at the next token, far from its 200
    assert llama.queued == 0


@pytest.mark.slow
async def test_llama_leaving_the_queue_gives_the_place_back(llama):
    first = llama.stream(COUNTING, GenParams(max_tokens=16, temperature=0))
    await anext(first)
    waiting = llama.stream(QUESTION, GenParams(max_tokens=4))
    assert llama.queued == 2
    await waiting.aclose()  # never started: its place is free again
    assert llama.queued == 1
    await collect(first)
    assert llama.queued == 0


@pytest.mark.slow
async def test_llama_forced_chat_format_is_counted_exactly(tmp_path, gguf_path):
    from assistant.settings import Settings

    settings = Settings(
        data_dir=tmp_path, backend="llamacpp",
        llamacpp={"model_path": gguf_path, "n_ctx": 256, "n_threads": 2, "chat_format": "gemma"},
    )
    backend = create_backend(settings)
    try:
        assert backend.prompt_style == "chat"
        messages = [{"role": "user", "content": "What is the capital of France?"}]
        usage = backend.llm.create_chat_completion(messages, max_tokens=1)["usage"]
        assert backend.count_tokens(messages) == usage["prompt_tokens"]
        assert await collect(backend.stream(messages, GenParams(max_tokens=3, temperature=0)))
    finally:
        await backend.aclose()


# --- an OpenAI-compatible server: llama-cpp-python's, with the same GGUF --------------------------


@pytest.fixture
async def remote(settings_factory, llama_server):
    backends = []

    def make(**openai):
        backend = create_backend(settings_factory(backend="openai", openai={"base_url": llama_server, "context_window": 2048, **openai}))
        backends.append(backend)
        return backend

    yield make
    for backend in backends:
        await backend.aclose()


@pytest.mark.slow
async def test_openai_health_and_model_discovery(remote):
    backend = remote()
    health = await backend.health()
    assert health.ok and health.model == SERVER_MODEL and backend.model == SERVER_MODEL
    assert backend.context_window == 2048  # llama.cpp's server does not report it: the setting


@pytest.mark.slow
async def test_openai_completion_stream_and_exact_count(remote, llama):
    backend = remote(prompt_style="completion")
    assert backend.count_tokens(QUESTION) == llama.count_tokens(QUESTION)  # the server's tokenizer, same GGUF
    assert backend.tokenize_route == "llamacpp"
    text = "".join(await collect(backend.stream(QUESTION, GenParams(max_tokens=8, temperature=0, stop=["\n\n"]))))
    assert "Paris" in text


@pytest.mark.slow
async def test_openai_chat_stream_and_early_close(remote):
    backend = remote()
    chat = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Name a colour."}]
    assert backend.count_tokens(chat) > 0  # no chat tokenizer on this server: the conservative estimate
    stream = backend.stream(COUNTING, GenParams(max_tokens=64, temperature=0))
    first = await anext(stream)
    assert isinstance(first, str) and first
    await stream.aclose()  # drops the HTTP response
    with anyio.fail_after(120):
        pieces = await collect(backend.stream(chat, GenParams(max_tokens=4, temperature=0)))
    assert all(isinstance(p, str) for p in pieces)


@pytest.mark.slow
async def test_openai_sampling_settings_reach_the_server(remote):
    # llama.cpp's server reads a grammar from the request body: the answer can only be what it allows
    backend = remote(prompt_style="completion", sampling={"grammar": 'root ::= "Lyon" "."'})
    text = "".join(await collect(backend.stream(QUESTION, GenParams(max_tokens=8, temperature=0))))
    assert text == "Lyon."


def test_sampling_settings_may_not_override_what_each_request_sets(settings_factory):
    with pytest.raises(ValueError, match="max_tokens, temperature cannot be set here"):
        settings_factory(backend="openai", openai={"sampling": {"temperature": 0, "max_tokens": 9, "top_k": 5}})


async def test_openai_unreachable_is_a_clear_error(settings_factory):
    url = f"http://127.0.0.1:{free_port()}/v1"
    backend = create_backend(settings_factory(backend="openai", openai={"base_url": url, "model": "m"}))
    try:
        with anyio.fail_after(20):
            with pytest.raises(BackendError, match=f"backend unreachable at {url}"):
                await backend.health()
            with pytest.raises(BackendError, match="backend unreachable"):
                await collect(backend.stream(QUESTION, GenParams(max_tokens=4)))
        assert backend.count_tokens(QUESTION) > 0  # counting falls back to the estimate
        assert backend.context_window == 4096
    finally:
        await backend.aclose()
