"""A remote OpenAI-compatible server that refuses: the client of every door sees its status and a generic
reason, never the server's words (which may quote the key and credentials it was sent); the server log has
them, redacted. And the one auth header rule: an API key is sent as `Bearer <key>`, never the URL's
password as Basic alongside it."""

from __future__ import annotations

import base64
import json
import logging
from http.server import BaseHTTPRequestHandler

import pytest
from litestar.testing import AsyncTestClient

from assistant.app import create_app
from tests.assistant.test_app import fill
from tests.support.loopback import serving

API_KEY = "sk-proj-Zq9LmN3xR7tY2vB8kP4w"
USER, PASSWORD = "usr", "pw-hunter2"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


class Refusing(BaseHTTPRequestHandler):
    """/v1/models lists a model; every answer is refused with a 401 that quotes what it was sent."""

    seen: list[str] = []

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Authorization", ""))
        self._send(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        sent = self.headers.get("Authorization", "")
        self.seen.append(sent)
        self._send(401, {"error": {"message": f"Incorrect API key provided: {API_KEY[:8]}***{API_KEY[-4:]}. "
                                              f"You sent '{sent}'. Token {API_KEY}", "type": "invalid_request_error",
                                   "code": "invalid_api_key"}})


@pytest.fixture
def upstream():
    Refusing.seen = []
    with serving(Refusing) as port:
        yield f"http://{USER}:{PASSWORD}@127.0.0.1:{port}/v1"


def secret_in(text: str) -> bool:
    return any(s in text for s in (API_KEY, API_KEY[-4:] + ".", BASIC, PASSWORD, "Incorrect API key"))


async def test_a_refusing_upstream_reaches_no_door_with_its_words(upstream, settings_factory, make_services, embedder,
                                                                  caplog):
    settings = settings_factory(backend="openai", openai={"base_url": upstream, "api_key": API_KEY, "timeout_s": 10,
                                                          "prompt_style": "chat"})
    services = make_services(settings, lambda store: fill(store, embedder))
    question = "How early must flights be booked?"
    chat = {"model": "rag:handbook", "messages": [{"role": "user", "content": question}]}
    mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "ask", "arguments": {"question": question, "collection": "handbook"}}}
    server_log = logging.getLogger("assistant.backends.openai_server")
    server_log.addHandler(caplog.handler)  # the app's logging may not pass its records up to the root
    try:
        async with AsyncTestClient(app=create_app(settings, services), timeout=30) as client:
            with caplog.at_level(logging.WARNING):
                shown = {
                    "ask": await client.post("/api/ask", json={"question": question, "collection": "handbook"}),
                    "v1": await client.post("/v1/chat/completions", json=chat),
                    "v1 stream": await client.post("/v1/chat/completions", json={**chat, "stream": True}),
                    "mcp": await client.post("/mcp", json=mcp, headers=MCP_HEADERS),
                }
    finally:
        server_log.removeHandler(caplog.handler)
        await services.backend.aclose()
    for door, r in shown.items():
        assert not secret_in(r.text), (door, r.text)
        assert "401 Unauthorized" in r.text, (door, r.text)  # the status and a generic reason
    assert shown["v1"].status_code == 502 and shown["v1"].json()["error"]["code"] == "backend_error"
    # The server's words are in the server's log, redacted.
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "Incorrect API key provided: sk-***. You sent 'Bearer ***" in logged and not secret_in(logged.replace("Incorrect API key", ""))
    # Every request the upstream got carried the API key as Bearer, never the URL's password as Basic.
    assert Refusing.seen and set(Refusing.seen) == {f"Bearer {API_KEY}"}


@pytest.mark.parametrize("url, key, sent", [
    (f"http://{USER}:{PASSWORD}@h:1/v1", API_KEY, f"Bearer {API_KEY}"),  # the key wins; the URL's password is dropped
    (f"http://{USER}:{PASSWORD}@h:1/v1", "none", f"Basic {BASIC}"),  # no key: the URL's credentials
    ("http://h:1/v1", "", "Bearer none"),
    ("http://h:1/v1?x=1", API_KEY, f"Bearer {API_KEY}"),
])
def test_one_auth_header_rule(url, key, sent):
    from assistant.backends.upstream_auth import upstream_auth

    auth = upstream_auth(url, key)
    assert auth.authorization == sent and PASSWORD not in auth.url and auth.url.startswith("http://h:1/v1")
