"""Collections named in any language and zips named by what they hold, in headless Chromium against a real
server that starts empty (echo backend, a worker beside it): files with Chinese names dropped on the first
visit become a collection titled after them, which the picker, the documents view and the preview show by
that title while the API knows it by a name made from it; a zip uploaded in the documents view gives
documents named by their paths inside it, and a second zip holding the same path replaces that document.
Screenshots at 390 and 1440 px; no serious or critical axe-core violation."""

from __future__ import annotations

import io
import re
import zipfile
from typing import Iterator

import httpx
import pytest

from tests.web.conftest import artifacts_dir, ask_in_new_chat, checked_page, served
from tests.web.test_pages import new_collection
from tests.web.test_first_visit import DROP, INGEST_TIMEOUT_MS, shoot
from tests.web.test_job_outcomes import job_card

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

CHINESE = {
    "年假规定.md": "# 年假\n\n员工每年有十五天带薪年假，须提前两周申请。\n",
    "报销流程.md": "# 报销\n\n差旅费用须在出差结束后三十天内提交报销。\n",
}


@pytest.fixture(scope="module")
def empty_server(tmp_path_factory) -> Iterator[str]:
    with served(tmp_path_factory, "titles", {}, worker=True, ASSISTANT_BACKEND="echo") as base:
        yield base


def zip_of(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return buffer.getvalue()


def test_files_with_chinese_names_make_a_collection_titled_after_them(browser, empty_server, tmp_path_factory):
    problems: dict[str, list[str]] = {}
    with checked_page(browser, empty_server, locale="zh-CN", viewport={"width": 1440, "height": 900}) as page:
        page.goto("/")
        expect(page.locator("#start")).to_be_visible()
        page.evaluate(DROP, ["#start-drop", list(CHINESE.items())])
        expect(page.locator("#start-progress")).to_contain_text("已就绪", timeout=INGEST_TIMEOUT_MS)
        expect(page.locator("#start-progress")).to_contain_text("“年假规定、报销流程”")
        [made] = httpx.get(f"{empty_server}/api/collections", timeout=10).json()
        assert made["title"] == "年假规定、报销流程" and re.fullmatch(r"[0-9a-f]{8}", made["name"]), made
        option = page.locator(f"#collection option[value='{made['name']}']")
        expect(option).to_have_text("年假规定、报销流程（2 个文档）")
        expect(option).to_have_attribute("aria-selected", "true")

        turn = ask_in_new_chat(page, "年假有多少天？")
        turn.locator(".source-card").first.click()
        expect(page.locator("#preview-meta")).to_contain_text("年假规定、报销流程 · ")
        shoot(page, artifacts_dir(tmp_path_factory), problems, "titles-preview-zh")
        page.click("#preview-close")

        page.goto("/#documents")
        card = page.locator(f".collection-card[data-name='{made['name']}']")
        expect(card.locator(".collection-name")).to_have_text("年假规定、报销流程")
        card.click()
        expect(page.locator("#collection-title")).to_have_text("年假规定、报销流程")
        expect(page.locator("#collection-api-name")).to_have_text(f"API 名称：{made['name']}")  # for keys and commands
        shoot(page, artifacts_dir(tmp_path_factory), problems, "titles-documents-zh")
    assert not problems, problems


def test_a_zip_s_files_are_named_by_their_paths_inside_it_and_a_later_zip_replaces_one(
        browser, empty_server, tmp_path_factory):
    problems: dict[str, list[str]] = {}
    with checked_page(browser, empty_server, locale="en-GB", viewport={"width": 1440, "height": 900}) as page:
        name = new_collection(page, "Staff handbook")
        assert name == "staff-handbook"

        page.set_input_files("#pick-files", files=[{"name": "handbook-2025.zip", "mimeType": "application/zip",
                                                   "buffer": zip_of({
            "handbook/leave.md": "# Leave\n\nEveryone has twenty days of paid leave a year.\n",
            "handbook/travel.md": "# Travel\n\nTrains are booked for trips under four hours.\n"})}])
        expect(job_card(page).locator(".job-facts")).to_have_text("2 ingested", timeout=INGEST_TIMEOUT_MS)
        rows = page.locator("#document-rows tr .doc-file")
        # the list is fetched again once the job is done: on a busy machine that takes longer than expect's 5 s
        expect(rows).to_have_text(["handbook/leave.md", "handbook/travel.md"],  # no "handbook-2025/" before them
                                  timeout=INGEST_TIMEOUT_MS)
        shoot(page, artifacts_dir(tmp_path_factory), problems, "zip-paths")

        page.set_input_files("#pick-files", files=[{"name": "handbook-2026.zip", "mimeType": "application/zip",
                                                   "buffer": zip_of({
            "handbook/leave.md": "# Leave\n\nEveryone has twenty-five days of paid leave a year.\n"})}])
        expect(page.locator(".job")).to_have_count(2)
        expect(job_card(page).locator(".job-facts")).to_have_text("1 ingested", timeout=INGEST_TIMEOUT_MS)
        expect(rows).to_have_text(["handbook/leave.md", "handbook/travel.md"], timeout=INGEST_TIMEOUT_MS)  # one per path

        page.goto("/#chat")
        page.select_option("#collection", name)
        turn = ask_in_new_chat(page, "How many days of paid leave are there?")
        leave = turn.locator(".source-card", has_text="handbook/leave.md").first
        expect(leave.locator(".source-path")).to_have_text(re.compile(r"^handbook/leave\.md"))
        expect(leave.locator(".source-snippet")).to_contain_text("twenty-five days")
        shoot(page, artifacts_dir(tmp_path_factory), problems, "zip-sources")
    assert not problems, problems
