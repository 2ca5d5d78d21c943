"""The in-process llama.cpp backend reads the prompt in batches and says how far it has got: the same answer
as without, each prompt token evaluated once (llama.cpp's own counters), a prompt that shares its start
with the last one reads only the rest, and a short request put aside (a follow-up's rewrite) leaves the last
prompt in place for the next answer."""

from __future__ import annotations

import asyncio

import pytest

from assistant.backends.base import GenParams, PromptProgress
from assistant.backends.factory import create_backend

BATCH = 64
MESSAGES = [{"role": "user", "content": "Notes on the office.\n" + "\n".join(
    f"Room {i} is on floor {i % 5} and seats {i + 2} people." for i in range(30)) + "\nWhich room seats 9 people?"}]


@pytest.fixture(scope="module")
def backend(tmp_path_factory, gguf_path):
    from assistant.settings import Settings

    settings = Settings(data_dir=tmp_path_factory.mktemp("progress-data"), backend="llamacpp",
                        llamacpp={"model_path": gguf_path, "n_ctx": 1024, "n_batch": BATCH, "n_threads": 2, "seed": 7})
    made = create_backend(settings)
    yield made
    asyncio.run(made.aclose())


def answer(backend, progress: bool, messages=MESSAGES) -> tuple[str, list[PromptProgress], int]:
    async def run() -> tuple[str, list[PromptProgress], int]:
        stream = backend.stream(messages, GenParams(max_tokens=24, temperature=0, progress=progress))
        items = [item async for item in stream]
        text = "".join(i for i in items if isinstance(i, str))
        return text, [i for i in items if isinstance(i, PromptProgress)], stream.completion_tokens

    return asyncio.run(run())


def evaluated(backend) -> tuple[int, int]:
    """llama.cpp's counters since the last reset: tokens read in batches (the prompt's), and one at a time."""
    import llama_cpp

    data = llama_cpp.llama_perf_context(backend.llm._ctx.ctx)
    return data.n_p_eval, data.n_eval


def shared_start(backend, a, b) -> int:
    """How many tokens the prompts of two message lists share at their start."""
    first, second = backend.render(a)[0], backend.render(b)[0]
    return next((i for i, (x, y) in enumerate(zip(first, second)) if x != y), min(len(first), len(second)))


@pytest.mark.slow
def test_progress_is_reported_between_batches_and_the_answer_is_the_same(backend):
    import llama_cpp

    total = backend.count_tokens(MESSAGES)
    assert total > 4 * BATCH and (total - 1) % BATCH > 1  # several batches; the last is a batch, not one token

    backend.llm.reset()  # nothing kept: both answers read the whole prompt
    plain, none, _ = answer(backend, progress=False)
    assert none == []  # not asked for, not given

    backend.llm.reset()
    llama_cpp.llama_perf_context_reset(backend.llm._ctx.ctx)
    text, steps, generated = answer(backend, progress=True)
    assert text == plain and text.strip()
    assert steps[0] == PromptProgress(0, total, 0)
    dones = [s.done for s in steps]
    assert dones == sorted(dones) and dones[-1] == total and len(steps) == 1 + -(-(total - 1) // BATCH)
    assert all(s.total == total for s in steps)
    in_batches, one_by_one = evaluated(backend)
    # llama.cpp counts every token decoded before the first is sampled as the prompt's: each prompt token
    # read once (twice would be 2 * total - 1), then each generated token to sample the next
    assert in_batches == total
    assert one_by_one in (generated - 1, generated)  # the last sampled is not read when max_tokens ends it


@pytest.mark.slow
def test_a_prompt_that_starts_like_the_last_reads_only_the_rest(backend):
    import llama_cpp

    backend.llm.reset()
    answer(backend, progress=True)
    longer = [{"role": "user", "content": MESSAGES[0]["content"] + " And which one is on floor 3?"}]
    shared = shared_start(backend, MESSAGES, longer)
    llama_cpp.llama_perf_context_reset(backend.llm._ctx.ctx)
    _, steps, _ = answer(backend, progress=True, messages=longer)
    total = backend.count_tokens(longer)
    assert steps[0].cached == steps[0].done == shared > 3 * BATCH
    assert steps[-1].done == total
    in_batches, _ = evaluated(backend)
    assert in_batches == total - shared


def other_request(backend) -> int:
    """A short request about something else, not put aside: the tokens it generated."""
    async def run() -> int:
        stream = backend.stream([{"role": "user", "content": "Rewrite as one question: where is it? (the kitchen)"}],
                                GenParams(max_tokens=8, temperature=0))
        [piece async for piece in stream]
        return stream.completion_tokens

    return asyncio.run(run())


@pytest.mark.slow
def test_a_request_aside_leaves_the_last_prompt_for_the_next_answer(backend):
    import llama_cpp

    from assistant.answers.conversation import rewrite_prompt, standalone_query

    longer = [{"role": "user", "content": MESSAGES[0]["content"] + " And which one is on floor 3?"}]
    shared = shared_start(backend, MESSAGES, longer)
    backend.llm.reset()
    fresh, _, _ = answer(backend, progress=True, messages=longer)  # read whole: nothing held

    backend.llm.reset()
    answer(backend, progress=True)
    # a follow-up's rewrite, the request put aside in the product
    llama_cpp.llama_perf_context_reset(backend.llm._ctx.ctx)
    history = [{"role": "user", "content": "Which room seats 9 people?"}, {"role": "assistant", "content": "Room 7."}]
    asyncio.run(standalone_query(backend, "Which floor is it on?", history, mode="model", timeout_s=300))
    assert sum(evaluated(backend)) > 0  # the model was asked
    # the next rewrite reads only what differs from the last one's prompt: the instructions are kept
    first, second = (rewrite_prompt(q, history[0]["content"], history[1]["content"])
                     for q in ("Which floor is it on?", "How many people does it seat?"))
    same = shared_start(backend, first, second)
    llama_cpp.llama_perf_context_reset(backend.llm._ctx.ctx)
    asyncio.run(standalone_query(backend, "How many people does it seat?", history, mode="model", timeout_s=300))
    assert evaluated(backend)[0] == backend.count_tokens(second) - same > 0 and same > 2 * BATCH
    text, steps, _ = answer(backend, progress=True, messages=longer)
    assert steps[0].cached == shared > 3 * BATCH  # what the first answer's prompt left is read from the cache
    assert text == fresh  # and it is what reading the prompt whole gives

    # the same request not put aside takes the model's cache for itself
    backend.llm.reset()
    answer(backend, progress=True)
    assert other_request(backend) > 0
    _, steps, _ = answer(backend, progress=True, messages=longer)
    assert steps[0].cached < BATCH
