"""What became of each file of an ingestion job, on the page: the job card counts the ingested, failed and
skipped files and names each failed or skipped one with its reason in the page's language (a skipped one
whose reason the page has no words for, by its kind too); the documents view lists the last job's files that were not ingested, with a button that
reads the failed ones again. Headless Chromium against the real server (echo backend, a worker beside it)."""

from __future__ import annotations

import pytest

from tests.web.test_pages import JOB_TIMEOUT_MS, open_documents

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

NOTES = [
    {"name": "tides.md", "mimeType": "text/markdown",
     "buffer": b"# Tides\n\nSpring tides come two days after the full and the new moon.\n"},
    {"name": "knots.md", "mimeType": "text/markdown",
     "buffer": b"# Knots\n\nA bowline makes a fixed loop that does not slip under load.\n"},
]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(64)  # no picture in it: left out as a damaged image
GIF = b"GIF89a" + bytes(64)  # a type OCR does not read


def job_card(page):
    """The newest job card, once its job has finished."""
    card = page.locator(".job").first
    expect(card).to_have_attribute("data-status", "done", timeout=JOB_TIMEOUT_MS)
    return card


def listed(box, which: str) -> list[dict]:
    """The files a details list of a card or of the documents view names: path, kind, reason."""
    return box.locator(f".job-{which} li[data-path]").evaluate_all("""items => items.map(li => ({
        path: li.querySelector('.job-error-path').textContent,
        kind: li.querySelector('.job-issue-kind')?.textContent ?? null,
        reason: li.querySelector('.job-error-reason').textContent}))""")


def test_an_empty_pdf_beside_two_notes_is_named_with_its_reason_and_a_failed_one_is_retried(page):
    open_documents(page, "outcomes")
    page.set_input_files("#pick-files", files=[*NOTES, {"name": "blank.pdf", "mimeType": "application/pdf", "buffer": b""}])
    card = job_card(page)
    expect(card.locator(".job-facts")).to_have_text("2 ingested, 1 skipped")
    expect(card.locator(".job-skipped summary")).to_have_text("Skipped files (1)")
    # a reason the page says in its own words needs no kind before it
    assert listed(card, "skipped") == [{"path": "blank.pdf", "kind": None, "reason": "empty file"}]
    expect(page.locator("#document-rows tr")).to_have_count(2)
    last = page.locator("#last-job")
    expect(last).to_be_visible()
    expect(last.locator("h4")).to_contain_text("Not ingested by the last job")
    assert listed(last, "skipped") == [{"path": "blank.pdf", "kind": None, "reason": "empty file"}]
    expect(last.locator("#retry-failed")).to_have_count(0)  # nothing failed: nothing to read again

    # a damaged PDF fails: the card and the documents view name it, and it can be read again
    page.set_input_files("#pick-files", files=[{"name": "torn.pdf", "mimeType": "application/pdf",
                                               "buffer": b"%PDF-1.4\nthis is not a real pdf\n"}])
    expect(page.locator(".job")).to_have_count(2)
    card = job_card(page)
    expect(card.locator(".job-facts")).to_have_text("0 ingested, 1 failed")
    failed = listed(card, "failed")
    assert [f["path"] for f in failed] == ["torn.pdf"] and "PDF" in failed[0]["reason"]
    expect(last.locator(".job-failed")).to_have_attribute("open", "")
    expect(last.locator(".job-failed li[data-path='torn.pdf'] .job-error-reason")).to_contain_text("PDF")
    last.locator("#retry-failed").click()
    expect(page.locator("#docs-status")).to_have_text("Reading 1 failed file again.")
    expect(page.locator(".job")).to_have_count(3)
    retried = job_card(page)
    expect(retried.locator(".job-facts")).to_have_text("0 ingested, 1 failed")
    assert [f["path"] for f in listed(retried, "failed")] == ["torn.pdf"]


def test_images_left_out_are_said_to_be_images_in_english_and_chinese(page):
    open_documents(page, "pictures")
    page.set_input_files("#pick-files", files=[NOTES[0], *({"name": f"photo{i}.gif", "mimeType": "image/gif",
                                                            "buffer": GIF} for i in range(3))])
    card = job_card(page)
    expect(card.locator(".job-facts")).to_have_text("1 ingested, 3 skipped")
    assert listed(card, "skipped") == [{"path": f"photo{i}.gif", "kind": None,
                                        "reason": "image type whose text is not read (PNG, JPEG and TIFF are)"}
                                       for i in range(3)]
    assert listed(page.locator("#last-job"), "skipped") == listed(card, "skipped")

    page.evaluate("localStorage.setItem('rag.lang', 'zh'); localStorage.setItem('rag.documents.collection', 'pictures')")
    page.reload()
    card = job_card(page)
    expect(card.locator(".job-facts")).to_have_text("已导入 1 个，跳过 3 个")
    expect(card.locator(".job-skipped summary")).to_have_text("跳过的文件（3）")
    assert {f["reason"] for f in listed(card, "skipped")} == {"不读取这种图片中的文字（只读取 PNG、JPEG 和 TIFF）"}
