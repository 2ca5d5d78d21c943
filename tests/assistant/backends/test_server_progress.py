"""llama-server's prompt progress: asked for (`return_progress`) only when the answer wants it and the server
is llama-server, and its `prompt_progress` chunks come out as PromptProgress before the text."""

from __future__ import annotations

import asyncio
import json
from http.server import BaseHTTPRequestHandler

import pytest

from assistant.backends.base import GenParams, PromptProgress
from assistant.backends.openai_compat import OpenAIBackend, prompt_progress
from assistant.settings import OpenAISettings
from tests.support.loopback import serving


class Streaming(BaseHTTPRequestHandler):
    """Streams chat chunks as llama-server does: with `return_progress`, a chunk per prompt batch first."""

    bodies: list[dict] = []

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        self.bodies.append(body)
        chunks = []
        if body.get("return_progress"):
            for processed in (10, 70, 100):
                chunks.append({"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}],
                               "prompt_progress": {"total": 100, "cache": 10, "processed": processed, "time_ms": 5.0}})
        chunks += [{"choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]} for word in ("Hello", " there")]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


@pytest.fixture
def server_url():
    Streaming.bodies = []
    with serving(Streaming) as port:
        yield f"http://127.0.0.1:{port}/v1"


def streamed(url: str, route: str | None, progress: bool) -> list:
    async def run() -> list:
        backend = OpenAIBackend(OpenAISettings(base_url=url, model="m"), tokenize_route=route)
        try:
            return [item async for item in backend.stream([{"role": "user", "content": "hi"}], GenParams(progress=progress))]
        finally:
            await backend.aclose()

    return asyncio.run(run())


def test_llama_server_is_asked_for_its_progress_when_the_answer_wants_it(server_url):
    items = streamed(server_url, "llama-server", progress=True)
    assert items == [PromptProgress(10, 100, 10), PromptProgress(70, 100, 10), PromptProgress(100, 100, 10), "Hello", " there"]
    assert Streaming.bodies[-1]["return_progress"] is True


@pytest.mark.parametrize(("route", "progress"), [("llama-server", False), ("vllm", True), (None, True)])
def test_no_other_request_carries_the_field(server_url, route, progress):
    assert streamed(server_url, route, progress) == ["Hello", " there"]
    assert "return_progress" not in Streaming.bodies[-1]


@pytest.mark.parametrize("sent", [None, [], {"total": 0, "cache": 0, "processed": 0}, {"total": 5, "processed": "3"},
                                  {"total": 5, "cache": -1, "processed": 3}, {"total": True, "cache": 0, "processed": 1}])
def test_anything_but_a_progress_object_is_no_progress(sent):
    assert prompt_progress(sent) is None
