"""Every reason the server gives is said in the page's language, in headless Chromium against the real
server (echo backend, a worker beside it): a password-protected PDF, an empty file and a binary one left
out of an upload are named in Chinese on the job card and in the document table, with no English words of
the server's; a refused upload name too; and counts take their plural form ("1 token", "2 tokens") or
none (Chinese). Screenshots at 390 and 1440 px; no serious or critical axe-core violation."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.conftest import shared_path
from tests.web.conftest import artifacts_dir, checked_page
from tests.web.test_pages import new_collection
from tests.web.test_first_visit import shoot
from tests.web.test_job_outcomes import job_card, listed

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

ENGLISH_WORD = re.compile(r"\b(?!PDF\b)[A-Za-z]{3,}\b")  # "PDF" is the same word in both


def test_ingest_reasons_and_refusals_are_said_in_chinese(browser, live_server, tmp_path_factory):
    locked = shared_path("corpora", "messy-docs", "password.pdf")
    if not locked.exists():
        pytest.skip(f"{locked} is missing")
    with checked_page(browser, live_server, locale="zh-CN", viewport={"width": 1440, "height": 900}) as page:
        name = new_collection(page, "问题文件")
        try:
            page.set_input_files("#pick-files", files=[
                {"name": "locked.pdf", "mimeType": "application/pdf", "buffer": locked.read_bytes()},
                {"name": "empty.md", "mimeType": "text/markdown", "buffer": b""},
                {"name": "blob.dat", "mimeType": "application/octet-stream", "buffer": bytes(range(256)) * 8},
                {"name": "tides.md", "mimeType": "text/markdown",
                 "buffer": b"# Tides\n\nSpring tides come two days after the full and the new moon.\n"}])
            job = job_card(page)
            failed = {f["path"]: f["reason"] for f in listed(job, "failed")}
            skipped = {f["path"]: f for f in listed(job, "skipped")}
            assert failed == {"locked.pdf": "PDF 有密码保护或已加密：请另存为无密码的文件"}
            assert skipped["empty.md"] == {"path": "empty.md", "kind": None, "reason": "空文件"}
            assert skipped["blob.dat"]["reason"] == "二进制文件，不是文档"
            for reason in [*failed.values(), *(f["reason"] for f in skipped.values())]:
                assert not ENGLISH_WORD.search(reason), reason
            row_error = page.locator("#document-rows tr.failed .doc-error")
            expect(row_error).to_have_text("PDF 有密码保护或已加密：请另存为无密码的文件")
            problems: dict[str, list[str]] = {}
            shoot(page, artifacts_dir(tmp_path_factory), problems, "reasons-zh")
            assert not problems, problems

            # a name the server refuses before anything is written, in the page's words
            page.set_input_files("#pick-files", files=[{"name": ".hidden.md", "mimeType": "text/markdown",
                                                        "buffer": b"# Hidden\n"}])
            expect(page.locator("#docs-status")).to_have_text("“.hidden.md”以点开头：不读取隐藏文件。")
        finally:
            httpx.delete(f"{live_server}/api/collections/{name}", headers={"X-Requested-By": "test"}).raise_for_status()


@pytest.mark.parametrize("lang, one, two", [("en", "1 token", "2 tokens"), ("zh", "1 个词元", "2 个词元")])
def test_counts_take_the_plural_form_of_the_pages_language(browser, live_server, lang, one, two):
    with checked_page(browser, live_server) as page:
        page.goto("/")
        said = page.evaluate("""async (lang) => {
            const i18n = await import("/static/i18n.js");
            i18n.setLanguage(lang);
            return [i18n.t("status.tokens", { n: 1 }), i18n.t("status.tokens", { n: 2 }),
                    i18n.t("docs.retrying", { n: 1 }), i18n.t("docs.retrying", { n: 3 })];
        }""", lang)
        assert said[:2] == [one, two]
        if lang == "en":
            assert said[2:] == ["Reading 1 failed file again.", "Reading 3 failed files again."]
