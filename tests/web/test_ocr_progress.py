"""Scans uploaded from the page: while the worker reads their text through OCR the job card says so, in
English and in Chinese, and then counts them ingested. Headless Chromium against the real server (echo
backend, a worker beside it, the machine's tesseract)."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexes.ocr_tools import find_tools
from tests.web.test_job_outcomes import job_card
from tests.web.test_pages import JOB_TIMEOUT_MS, open_documents

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ocr"
TOOLS = find_tools()
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(TOOLS.tesseract is None or not {"eng", "chi_sim"} <= set(TOOLS.languages),
                       reason="OCR is not installed: apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim"),
]


def scans(*names: str) -> list[dict]:
    kinds = {".png": "image/png", ".pdf": "application/pdf"}
    return [{"name": n, "mimeType": kinds[Path(n).suffix], "buffer": (FIXTURES / n).read_bytes()} for n in names]


@pytest.mark.parametrize("lang, reading", [("en", "Reading text in images (OCR): "), ("zh", "正在识别图片中的文字（OCR）：")])
def test_the_job_card_says_when_a_files_text_is_read_from_images(page, lang, reading):
    name = f"scans-{lang}"
    open_documents(page, name)
    if lang == "zh":
        page.evaluate(f"localStorage.setItem('rag.lang', 'zh'); localStorage.setItem('rag.documents.collection', '{name}')")
        page.reload()
        expect(page.locator("#collection-title")).to_have_text(name)
    # Four scans, two of them PDFs to render first: the reading lasts a few of the page's 1 s polls even
    # on a fast machine (two small PNGs were once read between two polls).
    page.set_input_files("#pick-files", files=scans("scan-en.png", "scan-zh.png", "scan-en.pdf", "scan-zh.pdf"))
    ocr = page.locator(".job").first.locator(".job-ocr")
    expect(ocr).to_contain_text(reading, timeout=JOB_TIMEOUT_MS)
    expect(ocr).to_contain_text("scan-")
    card = job_card(page)
    expect(card.locator(".job-facts")).to_have_text("4 ingested" if lang == "en" else "已导入 4 个")
    expect(card.locator(".job-ocr")).to_have_count(0)  # done: nothing is being read any more
