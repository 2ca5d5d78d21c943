"""A context size that is not a multiple of 256: llama.cpp pads it and reports the padded size, but
llama-cpp-python holds only the size asked for. The backend's window is the smaller one, so a prompt
filled to it, and an answer asked to run past it, end at the window instead of failing."""

from __future__ import annotations

import asyncio

import pytest

from assistant.backends.base import GenParams
from assistant.backends.factory import create_backend


@pytest.mark.slow
def test_an_unpadded_context_is_the_window_and_generation_stops_inside_it(settings_factory, gguf_path):
    settings = settings_factory(backend="llamacpp", llamacpp={"model_path": gguf_path, "n_ctx": 300, "n_threads": 2})
    backend = create_backend(settings)
    try:
        assert backend.llm.n_ctx() > 300 and backend.context_window == 300
        words = " ".join(f"item{i}" for i in range(400))
        text = words
        while backend.count_tokens([{"role": "user", "content": text}]) > 290:
            text = text[: int(len(text) * 0.95)]
        messages = [{"role": "user", "content": f"{text}\nContinue the list:"}]
        prompt = backend.count_tokens(messages)
        assert 250 < prompt < 300

        async def run() -> tuple[str, int]:
            stream = backend.stream(messages, GenParams(max_tokens=128, temperature=0))
            pieces = [piece async for piece in stream]
            return "".join(pieces), stream.completion_tokens

        _, generated = asyncio.run(run())  # before the fix: a ValueError from llama-cpp-python past 300
        assert 0 < generated <= 300 - prompt
    finally:
        asyncio.run(backend.aclose())
