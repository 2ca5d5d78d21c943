"""Ask about one document from the page, in headless Chromium against the real server (echo backend): from
its row in the documents view and from a source's preview; the request names the document, the answer's
sources are that document's, the choice is undone by its ✕, and a reload asks where the conversation's last
question was asked (the scope is kept with the turn). Screenshots at 390 and 1440 px; no serious or
critical axe-core violation."""

from __future__ import annotations

import httpx
import pytest

from tests.web.conftest import artifacts_dir
from tests.web.test_first_visit import shoot

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

ANSWER_TIMEOUT_MS = 60_000  # the first question also warms the embedder up on a shared CPU


def ask_and_wait(page, question: str) -> dict:
    """Ask on the page as it is; the /api/ask request body, once the answer is complete."""
    page.fill("#question", question)
    with page.expect_request(lambda r: r.url.endswith("/api/ask")) as sent:
        page.press("#question", "Enter")
    turn = page.locator(".turn").last
    expect(turn.locator(".answer-block > .answer")).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    expect(turn.locator(".timings")).to_be_visible()
    return sent.value.post_data_json


def last_turn(base: str) -> dict:
    [conv] = httpx.get(f"{base}/api/conversations", params={"limit": 1}, timeout=10).json()["conversations"]
    return httpx.get(f"{base}/api/conversations/{conv['id']}", timeout=10).json()["turns"][-1]


def test_a_document_is_asked_about_from_its_row_and_from_the_preview(page, live_server, tmp_path_factory):
    docs = httpx.get(f"{live_server}/api/collections/docs/documents", timeout=10).json()["documents"]
    bicycle = next(d for d in docs if d["path"] == "bicycle.md")

    page.goto("/#documents")
    page.locator(".collection-card[data-name='docs']").click()
    # the collection's job card renders after its rows and moves them down: click once the panel is whole
    expect(page.locator("#collection-panel .job").first).to_be_visible()
    row = page.locator(f"#document-rows tr[data-id='{bicycle['id']}']")
    row.get_by_role("button", name="Ask about this document: bicycle.md").click()
    expect(page.locator("#view-chat")).to_be_visible()
    expect(page.locator("#doc-scope")).to_contain_text("Questions are about Bicycle maintenance alone.")
    expect(page.locator("#question")).to_be_focused()
    page.click("#new-chat")

    body = ask_and_wait(page, "How often is the chain lubricated?")
    assert body["document"] == bicycle["id"] and body["collections"] == ["docs"]
    turn = last_turn(live_server)
    assert turn["sources"] and {s["path"] for s in turn["sources"]} == {"bicycle.md"}

    # from a source's preview: another document
    page.get_by_role("button", name="Ask the collections again, not this document").click()
    expect(page.locator("#doc-scope")).to_have_count(0)
    body = ask_and_wait(page, "How long does sourdough bulk fermentation take?")
    assert "document" not in body
    card = page.locator(".turn").last.locator(".source-card", has_text="sourdough.md").first
    card.click()
    ask_here = page.locator("#preview .preview-ask")
    expect(ask_here).to_be_visible()
    ask_here.click()
    expect(page.locator("#preview")).not_to_be_visible()
    expect(page.locator("#doc-scope")).to_contain_text("Sourdough bread")
    body = ask_and_wait(page, "When is the starter fed?")
    sourdough = next(d for d in docs if d["path"] == "sourdough.md")
    assert body["document"] == sourdough["id"]
    assert {s["path"] for s in last_turn(live_server)["sources"]} == {"sourdough.md"}

    # a reload: the conversation's last question was about that document, and so are the next ones
    page.reload()
    expect(page.locator(".turn")).to_have_count(3)
    expect(page.locator("#doc-scope")).to_contain_text("Questions are about Sourdough bread alone.")
    problems: dict[str, list[str]] = {}
    shoot(page, artifacts_dir(tmp_path_factory), problems, "scope-after-reload")
    assert not problems, problems
    body = ask_and_wait(page, "How long is the bulk fermentation?")
    assert body["document"] == sourdough["id"]
    assert last_turn(live_server)["document"]["path"] == "sourdough.md"
    # asked of the collections again: a reload keeps that too
    page.get_by_role("button", name="Ask the collections again, not this document").click()
    assert "document" not in ask_and_wait(page, "How often is the chain lubricated?")
    page.reload()
    expect(page.locator(".turn")).to_have_count(5)
    expect(page.locator("#doc-scope")).to_have_count(0)
