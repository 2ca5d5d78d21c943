"""The web page in a real headless Chromium against the real server (echo backend)."""

from __future__ import annotations

import re

import httpx
import pytest

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

ANSWER_TIMEOUT_MS = 60_000  # the first question also warms the embedder up on a shared CPU

# Records every text length the latest answer goes through, to see it grow token by token.
WATCH_ANSWER = """() => {
  window.answerLengths = [];
  new MutationObserver(() => {
    const answers = document.querySelectorAll('.answer');
    const last = answers[answers.length - 1];
    if (last && !last.querySelector('.thinking')) window.answerLengths.push(last.textContent.length);
  }).observe(document.querySelector('#chat'), {subtree: true, childList: true, characterData: true});
}"""


def open_page(page) -> None:
    page.goto("/")
    expect(page.locator("#collection")).to_be_enabled()


def ask(page, question: str) -> None:
    page.fill("#question", question)
    page.press("#question", "Enter")
    expect(page.locator(".answer").last).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)


def test_ask_streams_an_answer_with_cited_sources(page, live_server):
    open_page(page)
    options = page.locator("#collection option").evaluate_all("os => os.map(o => o.value)")
    assert options == ["archive", "docs"]
    page.select_option("#collection", "docs")
    page.evaluate(WATCH_ANSWER)

    with page.expect_request("**/api/ask") as first:
        ask(page, "How long does sourdough dough ferment?")
    assert first.value.post_data_json == {
        "question": "How long does sourdough dough ferment?", "collection": "docs", "history": [],
    }

    answer = page.locator(".answer").last
    text = answer.inner_text()
    assert text.strip()
    lengths = page.evaluate("window.answerLengths")
    assert len(set(lengths)) >= 2, f"the answer did not grow while streaming: {lengths}"
    expect(page.locator(".turn-error")).to_have_count(0)
    expect(page.locator("#status")).to_be_hidden()

    cards = page.locator(".source-card")
    assert cards.count() >= 1
    ns = cards.evaluate_all("cs => cs.map(c => c.dataset.n)")
    assert len(ns) == len(set(ns)), "each source number has one card"
    assert "sourdough.md" in cards.first.inner_text()

    # a citation in the answer links to a card of the same number and highlights it
    citation = answer.locator(".citation:not(.unknown)").first
    expect(citation).to_be_visible()
    n = citation.get_attribute("data-n")
    card = page.locator(f".source-card[data-n='{n}']")
    assert citation.get_attribute("href") == f"#{card.get_attribute('id')}"
    citation.click()
    expect(card).to_have_class(re.compile(r"\bhighlight\b"))

    # opening a card shows the whole chunk, exactly as the API returns it
    cards.first.click()
    viewer = page.locator("#chunk-viewer")
    expect(viewer).to_be_visible()
    chunk = httpx.get(live_server + cards.first.get_attribute("data-url")).json()
    expect(page.locator("#chunk-text")).to_have_text(chunk["text"])
    assert page.locator("#chunk-text").text_content() == chunk["text"]
    assert "ferments for four to six hours" in chunk["text"]
    page.click("#chunk-close")
    expect(viewer).to_be_hidden()

    # a follow-up carries the conversation so far
    with page.expect_request("**/api/ask") as second:
        ask(page, "And how often is the starter fed?")
    history = second.value.post_data_json["history"]
    assert history[0] == {"role": "user", "content": "How long does sourdough dough ferment?"}
    assert history[1]["role"] == "assistant" and history[1]["content"].strip()
    expect(page.locator(".turn")).to_have_count(2)

    # the chosen collection is remembered
    page.reload()
    expect(page.locator("#collection")).to_have_value("docs")


def test_empty_and_oversized_questions_are_reported(page):
    open_page(page)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/api/ask" in r.url else None)

    page.fill("#question", "   ")
    page.click("#ask")
    status = page.locator("#status")
    expect(status).to_be_visible()
    expect(status).to_contain_text("Type a question")
    expect(page.locator("#question")).to_have_attribute("aria-invalid", "true")

    # Shift+Enter adds a line instead of sending
    page.fill("#question", "first line")
    page.press("#question", "Shift+Enter")
    assert page.input_value("#question") == "first line\n"
    assert asked == []
    expect(page.locator(".turn")).to_have_count(0)

    # the server rejects a question over its limit with a 400, shown in the chat and the status line
    page.fill("#question", "why " * 1200)
    page.click("#ask")
    expect(page.locator(".turn-error")).to_contain_text("400")
    expect(status).to_contain_text("too long")
    assert len(asked) == 1
    assert page.input_value("#question").startswith("why why"), "a rejected question stays in the composer"
    expect(page.locator("#ask")).to_be_enabled()
    expect(page.locator("#stop")).to_be_disabled()
