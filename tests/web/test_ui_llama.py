"""The page against the real llama.cpp backend (the packaged Gemma-3-270M, in-process): streaming,
Stop and Esc really cancel (the server's in-flight count returns to 0), reload and follow-up; an answer
regenerated, its question edited and sent again and thumbed down with a comment, all kept on reload."""

from __future__ import annotations

import httpx
import pytest

from tests.support.wait import wait_until
from tests.web.conftest import DOCS, checked_page, served

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ANSWER_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def llama_web(tmp_path_factory):
    """A real server on llama.cpp. The line guard and repeat penalty are off here so that answers run
    long enough to be stopped half-way."""
    with served(tmp_path_factory, "web-llama", {"docs": DOCS}, ASSISTANT_BACKEND="llamacpp",
                ASSISTANT_LLAMACPP_PACKAGED_MODEL="gemma-3-270m", ASSISTANT_LLAMACPP_N_THREADS="2",
                ASSISTANT_LLAMACPP_N_CTX="2048", ASSISTANT_LLAMACPP_MAX_LINE_REPEATS="0",
                ASSISTANT_LLAMACPP_REPEAT_PENALTY="1.0") as base:
        yield base


@pytest.fixture
def llama_page(browser, llama_web):
    """The page opened, its collections loaded."""
    with checked_page(browser, llama_web) as pg:
        pg.goto("/")
        expect(pg.locator("#collection")).to_be_enabled()
        yield pg


def in_flight(base: str) -> int:
    return httpx.get(f"{base}/api/status", timeout=10).json()["backend"]["in_flight"]


def start_answer(page, question: str) -> None:
    page.fill("#question", question)
    page.press("#question", "Enter")
    expect(page.locator(".answer-state").last).to_have_attribute("data-state", "answering", timeout=ANSWER_TIMEOUT_MS)


def test_stop_and_escape_cancel_the_generation_on_the_server(llama_page, llama_web):
    page = llama_page
    start_answer(page, "List every step of baking sourdough bread, one per line.")
    assert in_flight(llama_web) == 1
    page.click("#stop")
    expect(page.locator(".turn-note").last).to_have_text("Stopped.")
    expect(page.locator("#ask")).to_be_enabled()
    wait_until(lambda: in_flight(llama_web), accept=lambda n: n == 0, timeout=20, what="the server ending the answer")

    # The same question, which the small model answers at length, in a new conversation: a stopped answer
    # in the history (a slow machine stops it after a token or two) leads it to answer in two tokens, and
    # other questions in none, finished before the key reaches the page.
    page.click("#new-chat")
    expect(page.locator(".turn")).to_have_count(0)
    start_answer(page, "List every step of baking sourdough bread, one per line.")
    page.press("#question", "Escape")
    expect(page.locator(".turn-note").last).to_have_text("Stopped.")
    wait_until(lambda: in_flight(llama_web), accept=lambda n: n == 0, timeout=20, what="the server ending the answer")


def test_real_answer_streams_then_reload_and_follow_up(llama_page, llama_web):
    page = llama_page
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


def test_regenerate_edit_and_thumbs_down_survive_a_reload_and_are_exported(llama_page, llama_web):
    page = llama_page
    page.click("#new-chat")
    with page.expect_request("**/api/ask") as first:
        page.fill("#question", "How often is the starter fed?")
        page.press("#question", "Enter")
    conversation_id = first.value.post_data_json["conversation_id"]
    turn = page.locator(".turn").last
    expect(turn.locator(".regenerate")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    expect(turn.locator(".variant-count")).to_have_count(0)

    # Regenerate: a second answer to the same question, in the same turn.
    with page.expect_request("**/api/ask") as again:
        turn.locator(".regenerate").click()
    first_turn_id = httpx.get(f"{llama_web}/api/conversations/{conversation_id}", timeout=10).json()["turns"][0]["id"]
    assert again.value.post_data_json["regenerate_of"] == first_turn_id
    expect(page.locator(".turn .variant-count")).to_have_text("2 / 2", timeout=ANSWER_TIMEOUT_MS)
    expect(page.locator(".turn")).to_have_count(1)

    # Edit the question in place and send it again with the keyboard.
    page.locator(".turn .edit-question").click()
    field = page.locator(".turn .edit-form textarea")
    expect(field).to_be_focused()
    field.fill("How long is the bulk fermentation?")
    field.press("Enter")
    expect(page.locator(".turn .variant-count")).to_have_text("3 / 3", timeout=ANSWER_TIMEOUT_MS)
    expect(page.locator(".turn .question")).to_have_text("How long is the bulk fermentation?")

    # Thumbs down with a comment.
    page.locator(".turn .feedback-down").click()
    expect(page.locator(".turn .feedback-down")).to_have_attribute("aria-pressed", "true")
    comment = page.locator(".turn .feedback-comment textarea")
    expect(comment).to_be_visible()
    comment.fill("It does not give the hours.")
    page.locator(".turn .feedback-comment button[type=submit]").click()
    expect(page.locator(".turn .feedback-note")).to_have_text("Thank you: saved.")

    # Reload: the answers, the edited question and the feedback come back from the server.
    page.reload()
    expect(page.locator(".turn")).to_have_count(1)
    expect(page.locator(".turn .question")).to_have_text("How long is the bulk fermentation?")
    expect(page.locator(".turn .variant-count")).to_have_text("3 / 3")
    expect(page.locator(".turn .feedback-down")).to_have_attribute("aria-pressed", "true")
    expect(page.locator(".turn .feedback-comment textarea")).to_have_value("It does not give the hours.")
    page.locator(".turn .variant-prev").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".turn .variant-count")).to_have_text("2 / 3")
    expect(page.locator(".turn .variant-prev")).to_be_focused()
    expect(page.locator(".turn .question")).to_have_text("How often is the starter fed?")
    expect(page.locator(".turn .feedback-down")).to_have_attribute("aria-pressed", "false")

    saved = httpx.get(f"{llama_web}/api/conversations/{conversation_id}", timeout=10).json()["turns"]
    (last,) = saved
    assert [v["question"] for v in last["variants"]] == ["How often is the starter fed?"] * 2
    exported = httpx.get(f"{llama_web}/api/feedback", params={"rating": -1}, timeout=10).json()
    (row,) = [r for r in exported if r["conversation_id"] == conversation_id]
    assert (row["turn_id"], row["question"], row["comment"]) == (last["id"], "How long is the bulk fermentation?",
                                                               "It does not give the hours.")
    assert row["answer"] == last["answer"] and row["sources"] and row["sources"][0]["path"].endswith(".md")
    wait_until(lambda: in_flight(llama_web), accept=lambda n: n == 0, timeout=20, what="the server ending the answer")
