"""Secrets never shown: `assistant config`, log lines, /health and /api/status hide API keys, `--api-key`
arguments and credentials inside URLs."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from assistant.backends.engine_process import free_port
from assistant.security.redaction import redact_logs, redact_text, redact_url
from tests.assistant.test_app import fill

SECRETS = ("sk-topsecret", "hunter2", "rag_abcdefghijklmnop")


def shows_a_secret(text: str) -> bool:
    return any(s in text for s in SECRETS)


def test_assistant_config_hides_keys_and_url_credentials(tmp_path):
    env = {**os.environ, "ASSISTANT_OPENAI_API_KEY": "sk-topsecret",
           "ASSISTANT_OPENAI_BASE_URL": "http://bob:hunter2@127.0.0.1:9/v1",
           "ASSISTANT_VLLM_EXTRA_ARGS": '["--api-key", "sk-topsecret", "--api-key=sk-topsecret"]'}
    run = subprocess.run([sys.executable, "-m", "assistant.cli", "config", "--data-dir", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    shown = json.loads(run.stdout)
    assert not shows_a_secret(run.stdout)
    assert shown["openai"]["api_key"] == "***" and shown["openai"]["base_url"] == "http://***@127.0.0.1:9/v1"


@pytest.mark.parametrize("line", [
    "calling http://bob:hunter2@host:8000/v1 failed", "Authorization: Bearer rag_abcdefghijklmnop",
    "starting vLLM: vllm serve m --api-key sk-topsecret --port 1", "key rag_abcdefghijklmnop was sent",
])
def test_log_lines_are_redacted(line, caplog):
    redact_logs()
    with caplog.at_level(logging.INFO):
        logging.getLogger("assistant.test").info("%s", line)
    assert caplog.records and not shows_a_secret(caplog.records[-1].getMessage())
    assert not shows_a_secret(redact_text(line))


@pytest.fixture
def services(settings_factory, make_services):
    # A remote backend that cannot be reached, named by a URL with a password in it.
    return make_services(settings_factory(backend="openai", openai={"base_url": "http://bob:hunter2@127.0.0.1:9/v1",
                                                                     "api_key": "sk-topsecret", "timeout_s": 2,
                                                                     "connect_timeout_s": 1}))


async def test_health_and_status_show_no_secret(client, caplog):
    with caplog.at_level(logging.DEBUG):
        health = await client.get("/health")
        status = await client.get("/api/status")
    assert health.status_code == 503 and status.status_code == 200
    assert not shows_a_secret(health.text) and not shows_a_secret(status.text)
    assert not any(shows_a_secret(r.getMessage()) for r in caplog.records)


# --- tokens in the query string of a backend's URL ---------------------------------------------------

TOKEN, PASSWORD = "s3cr3t-value", "pw-7731"


def shows_url_secret(text: str) -> bool:
    return TOKEN in text or PASSWORD in text


@pytest.mark.parametrize("url, shown", [
    (f"http://user:{PASSWORD}@127.0.0.1:8001/v1?token={TOKEN}", "http://***@127.0.0.1:8001/v1?token=***"),
    (f"https://api.example.com/v1?api_key={TOKEN}&model=m&flag", "https://api.example.com/v1?api_key=***&model=***&***"),
    (f"https://host/v1?X-Amz-Signature={TOKEN}#access_token={TOKEN}", "https://host/v1?X-Amz-Signature=***#***"),
    (f"http://u:p@{PASSWORD}@[::1]:9/v1", "http://***@[::1]:9/v1"),  # an `@` inside the password
    (f"http://[::1/v1?sig={TOKEN}", "http://[::1/v1?***"),  # not parsable: the query goes all the same
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),  # nothing secret: unchanged
])
def test_redact_url_keeps_where_and_hides_credentials_and_query_values(url, shown):
    assert redact_url(url) == shown


def test_urls_inside_text_are_redacted_and_the_sentence_kept():
    text = (f"Client error '401' for url 'http://h:1/v1/models?token={TOKEN}'. Replicas: "
            f"http://a/v1?key={TOKEN},http://user:{PASSWORD}@b/v1 (both down).")
    assert redact_text(text) == ("Client error '401' for url 'http://h:1/v1/models?token=***'. Replicas: "
                                 "http://a/v1?key=***,http://***@b/v1 (both down).")


@pytest.fixture
def token_url():
    """A base URL with a password and a token in it, on a 127.0.0.1 port nothing listens on."""
    return f"http://user:{PASSWORD}@127.0.0.1:{free_port()}/v1?token={TOKEN}"


@pytest.mark.parametrize("replicas", [1, 2])
async def test_a_token_in_the_backend_url_is_shown_nowhere(replicas, token_url, settings_factory, make_services,
                                                           embedder, caplog):
    from litestar.testing import AsyncTestClient

    from assistant.app import create_app

    urls = [token_url] + [f"http://127.0.0.1:{free_port()}/v1?access_token={TOKEN}"] * (replicas - 1)
    settings = settings_factory(backend="openai", openai={
        "base_url": ",".join(urls), "api_key": "sk-topsecret", "timeout_s": 5, "connect_timeout_s": 1})
    services = make_services(settings, lambda store: fill(store, embedder))
    try:
        async with AsyncTestClient(app=create_app(settings, services), timeout=30) as client:
            with caplog.at_level(logging.DEBUG):
                health = await client.get("/health")
                status = await client.get("/api/status")
                ask = await client.post("/api/ask", json={"question": "How early are flights booked?",
                                                          "collection": "handbook"})
                chat = await client.post("/v1/chat/completions", json={
                    "model": "rag:handbook", "messages": [{"role": "user", "content": "How early are flights booked?"}]})
    finally:
        await services.backend.aclose()
    assert health.status_code == 503 and status.status_code == 200
    assert "event: error" in ask.text and "backend_error" in ask.text
    assert chat.status_code == 502 and chat.json()["error"]["code"] == "backend_error"
    shown = [health.text, status.text, ask.text, chat.text, caplog.text, *(r.getMessage() for r in caplog.records)]
    assert not any(shows_url_secret(t) or shows_a_secret(t) for t in shown)
    for body in (health.text, status.text, ask.text, chat.text):
        assert "127.0.0.1" in body and "***" in body, body  # which server failed is still said
    assert "token=***" in health.text and "token=***" in chat.text


def test_assistant_config_hides_a_token_in_the_url(tmp_path, token_url):
    env = {**os.environ, "ASSISTANT_OPENAI_BASE_URL": token_url, "ASSISTANT_OPENAI_API_KEY": "sk-topsecret"}
    run = subprocess.run([sys.executable, "-m", "assistant.cli", "config", "--data-dir", str(tmp_path)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    assert not shows_url_secret(run.stdout + run.stderr) and not shows_a_secret(run.stdout)
    shown = json.loads(run.stdout)["openai"]
    assert shown["base_url"] == redact_url(token_url) and shown["base_url"].endswith("/v1?token=***")
    assert shown["api_key"] == "***"


def test_assistant_status_hides_a_token_in_the_server_url(tmp_path, token_url):
    run = subprocess.run([sys.executable, "-m", "assistant.cli", "status", "--url", token_url, "--data-dir", str(tmp_path)],
                         capture_output=True, text=True, env={**os.environ, "COLUMNS": "300"}, timeout=60)
    assert run.returncode == 0, run.stderr
    assert not shows_url_secret(run.stdout + run.stderr)
    assert "nothing answers at http://***@127.0.0.1" in run.stdout and "token=***" in run.stdout
