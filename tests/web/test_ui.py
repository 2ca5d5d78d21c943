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
    assert {"archive", "docs"} <= set(options) and options == sorted(options)
    page.select_option("#collection", "docs")
    page.evaluate(WATCH_ANSWER)

    with page.expect_request("**/api/ask") as first:
        ask(page, "How long does sourdough dough ferment?")
    sent = first.value.post_data_json
    assert sent["question"] == "How long does sourdough dough ferment?" and sent["collections"] == ["docs"]
    conversation_id = sent["conversation_id"]
    assert isinstance(conversation_id, int), "the first question starts a saved conversation"

    answer = page.locator(".answer").last
    text = answer.inner_text()
    assert text.strip()
    lengths = page.evaluate("window.answerLengths")
    assert len(set(lengths)) >= 2, f"the answer did not grow while streaming: {lengths}"
    expect(page.locator(".turn-error")).to_have_count(0)
    expect(page.locator("#status")).to_be_hidden()
    copy = page.locator(".turn").last.locator(".copy-answer")
    copy.click()
    expect(copy).to_have_text("Copied")

    cards = page.locator(".source-card")
    assert cards.count() >= 1
    ns = cards.evaluate_all("cs => cs.map(c => c.dataset.n)")
    assert len(ns) == len(set(ns)), "each source number has one card"
    assert "sourdough.md" in cards.first.inner_text()

    # a citation in the answer links to a card of the same number, highlights it and opens its passage
    citation = answer.locator(".citation:not(.unknown)").first
    expect(citation).to_be_visible()
    n = citation.get_attribute("data-n")
    card = page.locator(f".source-card[data-n='{n}']")
    assert citation.get_attribute("href") == f"#{card.get_attribute('id')}"
    citation.click()
    expect(card).to_have_class(re.compile(r"\bhighlight\b"))
    viewer = page.locator("#preview")
    expect(viewer).to_be_visible()
    chunk = httpx.get(live_server + card.get_attribute("data-url")).json()
    target = page.locator("#preview .passage-chunk.target")
    expect(target).to_be_visible()
    words = " ".join(chunk["text"].split())
    assert words in " ".join(target.inner_text().split()), "the cited chunk's words, as the Markdown file has them"
    expect(target.locator("h1, h2").first).to_be_visible()  # its headings rendered, not written as "## ..."
    page.click("#preview-close")
    expect(viewer).to_be_hidden()

    # a follow-up continues the saved conversation
    with page.expect_request("**/api/ask") as second:
        ask(page, "And how often is the starter fed?")
    assert second.value.post_data_json["conversation_id"] == conversation_id
    assert "history" not in second.value.post_data_json
    expect(page.locator(".turn")).to_have_count(2)
    saved = httpx.get(f"{live_server}/api/conversations/{conversation_id}").json()
    assert [t["question"] for t in saved["turns"]] == ["How long does sourdough dough ferment?",
                                                        "And how often is the starter fed?"]

    # reload: the conversation is in the sidebar and on the page, with its turns and sources
    page.reload()
    expect(page.locator("#collection")).to_have_value("docs")
    item = page.locator(f".conv-item[data-id='{conversation_id}']")
    expect(item).to_have_attribute("aria-current", "true")
    expect(item).to_contain_text("How long does sourdough dough ferment?")
    expect(page.locator(".turn")).to_have_count(2)
    expect(page.locator(".turn").first.locator(".source-card").first).to_contain_text("sourdough.md")
    with page.expect_request("**/api/ask") as third:
        ask(page, "What about the bulk fermentation?")
    assert third.value.post_data_json["conversation_id"] == conversation_id
    expect(page.locator(".turn")).to_have_count(3)


def test_conversations_sidebar_new_search_rename_delete(page, live_server):
    open_page(page)
    page.select_option("#collection", "archive")
    ask(page, "When is the spring fair?")
    first = page.locator(".conv-item").first
    expect(first).to_contain_text("When is the spring fair?")
    page.click("#new-chat")
    expect(page.locator(".turn")).to_have_count(0)
    ask(page, "Which Saturday in May?")
    expect(page.locator(".conv-item").first).to_contain_text("Which Saturday in May?")
    expect(page.locator(".conv-item").nth(1)).to_contain_text("When is the spring fair?")

    # search by title (words no other test's conversation on the shared server has in its title)
    page.fill("#conv-search", "the spring fair?")
    expect(page.locator(".conv-item")).to_have_count(1)
    expect(page.locator(".conv-item")).to_contain_text("spring fair")

    # rename, then delete (the delete button asks once more in place)
    item = page.locator(".conv-item").first
    conv_id = item.get_attribute("data-id")
    item.locator(".conv-rename").click()
    page.fill(".conv-rename-form input", "Fair planning")
    page.press(".conv-rename-form input", "Enter")
    # the listing for "planning" itself (the rename's own, for the words before, finds it too: by its question)
    with page.expect_response("**/api/conversations?*q=planning*"):
        page.fill("#conv-search", "planning")
    expect(page.locator(".conv-item")).to_have_count(1)
    expect(page.locator(".conv-item")).to_have_text(re.compile("Fair planning"))
    assert httpx.get(f"{live_server}/api/conversations/{conv_id}").json()["title"] == "Fair planning"
    delete = page.locator(".conv-item .conv-delete")
    delete.click()
    expect(delete).to_have_class(re.compile("armed"))
    # a refresh of the list that changes nothing keeps the button armed
    with page.expect_response("**/api/conversations?*"):
        page.dispatch_event("#conv-search", "input")
    page.evaluate("() => new Promise((done) => setTimeout(done, 50))")
    expect(delete).to_have_class(re.compile("armed"))
    delete.click()
    expect(page.locator(".conv-item")).to_have_count(0)
    assert httpx.get(f"{live_server}/api/conversations/{conv_id}").status_code == 404


def test_code_in_answers_is_highlighted_with_a_copy_button(page):
    open_page(page)
    out = page.evaluate("""async () => {
      const { renderMarkdown, decorateCode } = await import('/static/markdown.js');
      const box = document.createElement('div');
      renderMarkdown(box, "Run this [1]:\\n\\n```python\\nhours = 4  # bulk\\n```\\n", 9);
      const copied = [];
      decorateCode(box, (text) => copied.push(text));
      box.querySelector('.copy-code').click();
      return {
        highlighted: box.querySelectorAll('code.hljs .hljs-comment, code.hljs .hljs-number').length,
        citation: box.querySelector('a.citation')?.getAttribute('href'),
        copied,
      };
    }""")
    assert out["highlighted"] >= 2
    assert out["citation"] == "#src-9-1"
    assert out["copied"] == ["hours = 4  # bulk\n"]


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
