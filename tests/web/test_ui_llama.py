"""The page against the real llama.cpp backend (the packaged Gemma-3-270M, in-process): streaming,
Stop and Esc really cancel (the server's in-flight count returns to 0), reload and follow-up."""

from __future__ import annotations

import httpx
import pytest

from tests.support.wait import wait_until
from tests.web.conftest import DOCS, assistant_command, base_env, checked_page, ingest, running_server, write_folder

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ANSWER_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def llama_web(tmp_path_factory):
    """A real server on llama.cpp. The line guard and repeat penalty are off here so that answers run
    long enough to be stopped half-way."""
    root = tmp_path_factory.mktemp("web-llama")
    data = root / "data"
    env = base_env(ASSISTANT_BACKEND="llamacpp", ASSISTANT_LLAMACPP_PACKAGED_MODEL="gemma-3-270m",
                   ASSISTANT_LLAMACPP_N_THREADS="2", ASSISTANT_LLAMACPP_N_CTX="2048",
                   ASSISTANT_LLAMACPP_MAX_LINE_REPEATS="0", ASSISTANT_LLAMACPP_REPEAT_PENALTY="1.0")
    ingest(assistant_command(), write_folder(root / "docs", DOCS), "docs", data, env)
    with running_server(root, data, env) as base:
        yield base


@pytest.fixture
def llama_page(browser, llama_web):
    with checked_page(browser, llama_web) as pg:
        yield pg


def in_flight(base: str) -> int:
    return httpx.get(f"{base}/api/status", timeout=10).json()["backend"]["in_flight"]


def start_answer(page, question: str) -> None:
    page.fill("#question", question)
    page.press("#question", "Enter")
    expect(page.locator(".answer-state").last).to_have_attribute("data-state", "answering", timeout=ANSWER_TIMEOUT_MS)


def test_stop_and_escape_cancel_the_generation_on_the_server(llama_page, llama_web):
    page = llama_page
    page.goto("/")
    expect(page.locator("#collection")).to_be_enabled()
    start_answer(page, "List every step of baking sourdough bread, one per line.")
    assert in_flight(llama_web) == 1
    page.click("#stop")
    expect(page.locator(".turn-note").last).to_have_text("Stopped.")
    expect(page.locator("#ask")).to_be_enabled()
    wait_until(lambda: in_flight(llama_web), accept=lambda n: n == 0, timeout=20, what="the server ending the answer")

    start_answer(page, "List every tool a bicycle mechanic uses, one per line.")
    page.press("#question", "Escape")
    expect(page.locator(".turn-note")).to_have_count(2)
    wait_until(lambda: in_flight(llama_web), accept=lambda n: n == 0, timeout=20, what="the server ending the answer")


def test_real_answer_streams_then_reload_and_follow_up(llama_page, llama_web):
    page = llama_page
    page.goto("/")
    expect(page.locator("#collection")).to_be_enabled()
    page.click("#new-chat")
    page.fill("#question", "How often should the starter be fed?")
    with page.expect_request("**/api/ask") as first:
        page.press("#question", "Enter")
    answer = page.locator(".answer").last
    expect(answer).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    expect(page.locator(".turn-error")).to_have_count(0)
    assert answer.inner_text().strip()
    expect(page.locator(".turn").last.locator(".source-card").first).to_be_visible()
    conversation_id = first.value.post_data_json["conversation_id"]

    page.reload()
    expect(page.locator(f".conv-item[data-id='{conversation_id}']")).to_have_attribute("aria-current", "true")
    expect(page.locator(".turn")).to_have_count(1)
    page.fill("#question", "And the bulk fermentation?")
    with page.expect_request("**/api/ask") as second:
        page.press("#question", "Enter")
    assert second.value.post_data_json["conversation_id"] == conversation_id
    expect(page.locator(".answer").last).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    turns = httpx.get(f"{llama_web}/api/conversations/{conversation_id}").json()["turns"]
    assert [t["question"] for t in turns] == ["How often should the starter be fed?", "And the bulk fermentation?"]
    wait_until(lambda: in_flight(llama_web), accept=lambda n: n == 0, timeout=20, what="the server ending the answer")
