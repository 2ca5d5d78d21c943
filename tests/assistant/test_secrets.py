"""Secrets never shown: `assistant config`, log lines, /health and /api/status hide API keys, `--api-key`
arguments and credentials inside URLs."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from assistant.redaction import redact_logs, redact_text

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
