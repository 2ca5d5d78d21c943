"""How far the engine has read the prompt is the page's to show: /api/ask asks the backend for it and streams
`progress` events between `retrieved` and the first `token`; /v1 and MCP never ask, and say what they said
before."""

from __future__ import annotations

import pytest

from assistant.backends.base import GenParams, PromptProgress
from assistant.mcp_api import tools
from assistant.security.access import LOCAL_USER
from tests.assistant.test_app import fill
from tests.support.sse import openai_chunks, parse_sse

QUESTION = "How early must flights be booked?"


class Reading:
    """The echo backend, saying when asked how far it has read the prompt (in two steps) before its answer;
    the requests' `progress` recorded."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.asked: list[bool] = []

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def stream(self, messages, params: GenParams):
        self.asked.append(params.progress)
        inner = self.backend.stream(messages, params)

        async def pieces():
            if params.progress:
                total = self.backend.count_tokens(messages)
                yield PromptProgress(0, total)
                yield PromptProgress(total, total)
            async for piece in inner:
                yield piece

        return pieces()


@pytest.fixture
def services(settings_factory, make_services, embedder):
    made = make_services(settings_factory(), lambda store: fill(store, embedder))
    made.asking.backend = Reading(made.asking.backend)
    return made


async def test_the_page_stream_carries_progress_before_the_first_token(client, services):
    r = await client.post("/api/ask", json={"question": QUESTION, "collection": "handbook"})
    assert r.status_code == 200, r.text
    events = parse_sse(r.text)
    kinds = [k for k, _ in events]
    assert kinds[:4] == ["retrieved", "progress", "progress", "token"], kinds
    first, last = events[1][1], events[2][1]
    assert first["done"] == 0 and last["done"] == last["total"] == first["total"] > 0 and last["cached"] == 0
    assert services.asking.backend.asked == [True]
    done = events[-1][1]
    assert done["prompt_tokens"] == last["total"]  # the prompt whose reading was told


async def test_v1_and_mcp_never_ask_for_progress_and_answer_as_before(client, services):
    body = {"model": "rag:handbook", "messages": [{"role": "user", "content": QUESTION}], "stream": True}
    r = await client.post("/v1/chat/completions", json=body)
    assert r.status_code == 200
    chunks = openai_chunks(r.text)
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"]) == f"Echo: {QUESTION} [1]"
    assert not any("progress" in str(c) for c in chunks)
    result = await tools.ask(services, LOCAL_USER, QUESTION, "handbook")
    assert result["answer"] == f"Echo: {QUESTION} [1]" and "progress" not in result
    assert services.asking.backend.asked == [False, False]
