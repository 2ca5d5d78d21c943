"""Three things a new user meets in the first minutes, in headless Chromium against a real server (echo
backend, an ingestion worker beside it): "Add a folder" on the empty page makes a collection titled after
the folder, Chinese included; two sources of one title ("Leave types" in two folders of a zip) are told
apart by their paths, their titles whole on hover and in their accessible names, and a Markdown source read
whole follows the dark theme; conversations are grouped Today, Yesterday, Previous 7 days and Earlier, each with
its date on hover. Screenshots at 390 and 1440 px; axe-core finds no serious or critical violation."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from tests.support.wait import wait_until
from tests.web.conftest import ask_in_new_chat, artifacts_dir, assistant_command, base_env, checked_page, running_server
from tests.web.test_first_visit import INGEST_TIMEOUT_MS, shoot
from tests.web.test_looks import axe_problems
from tests.web.test_titles_and_zips import zip_of

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

LONG_TITLE = "What to consider while travelling abroad for work on a client's behalf"
HANDBOOK = {
    "uk/leave.md": "# Leave types\n\nIn the UK office annual leave is twenty-eight days, bank holidays included.\n",
    "us/leave.md": "# Leave types\n\nIn the US office annual leave is fifteen days, plus federal holidays.\n",
    "travel/abroad.md": f"# {LONG_TITLE}\n\nA trip abroad for a client needs the client's written approval first.\n",
}


@pytest.fixture
def empty_data(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """A real server and worker over an empty data folder (one per test: the empty page is what is tested);
    its base URL and its data folder."""
    root = tmp_path_factory.mktemp("folders")
    data = root / "data"
    env = base_env(ASSISTANT_BACKEND="echo")
    assistant_command()  # skips where the command is not installed
    with running_server(root, data, env, worker=True) as base:
        yield base, data


def test_a_folder_added_on_the_empty_page_becomes_a_collection_titled_after_it(
        browser, empty_data, tmp_path, tmp_path_factory):
    base, _ = empty_data
    folder = tmp_path / "员工手册"
    (folder / "政策").mkdir(parents=True)
    (folder / "年假.md").write_text("# 年假\n\n员工每年有十五天带薪年假。\n", encoding="utf-8")
    (folder / "政策" / "报销.md").write_text("# 报销\n\n差旅费用须在三十天内提交报销。\n", encoding="utf-8")
    problems: dict[str, list[str]] = {}
    with checked_page(browser, base, locale="zh-CN", viewport={"width": 1440, "height": 900}) as page:
        page.goto("/")
        expect(page.locator("#start")).to_be_visible()
        expect(page.locator("#ask")).to_be_disabled()
        page.set_input_files("#start-folder", folder)  # what the "Add a folder" picker hands the page
        expect(page.locator("#start-progress")).to_contain_text("已就绪", timeout=INGEST_TIMEOUT_MS)
        expect(page.locator("#start-progress")).to_contain_text("“员工手册”")
        [made] = httpx.get(f"{base}/api/collections", timeout=10).json()
        assert made["title"] == "员工手册" and made["documents"] == 2, made
        assert re.fullmatch(r"[0-9a-f]{8}", made["name"]), "an ASCII API name made from the title"
        expect(page.locator("#start")).to_be_hidden()
        expect(page.locator("#ask")).to_be_enabled()
        expect(page.locator(f"#collection option[value='{made['name']}']")).to_have_attribute("aria-selected", "true")
        turn = ask_in_new_chat(page, "年假有多少天？")
        expect(turn.locator(".source-card").first).to_be_visible()
        shoot(page, artifacts_dir(tmp_path_factory), problems, "folder-added-zh")
    assert not problems, problems


def test_sources_of_one_title_are_told_apart_by_path_and_read_whole_in_the_dark(
        browser, empty_data, tmp_path_factory):
    base, _ = empty_data
    httpx.post(f"{base}/api/collections", json={"title": "Staff handbook"}).raise_for_status()
    job = httpx.post(f"{base}/api/collections/staff-handbook/documents", headers={"X-Requested-By": "test"},
                     files={"files": ("handbook.zip", zip_of(HANDBOOK), "application/zip")}, timeout=60).json()["job"]
    wait_until(lambda: httpx.get(f"{base}/api/jobs/{job}").json()["status"], accept=lambda s: s == "done",
               timeout=INGEST_TIMEOUT_MS / 1000, interval=0.2, what="the zip's ingestion")
    problems: dict[str, list[str]] = {}
    with checked_page(browser, base, locale="en-GB", viewport={"width": 1440, "height": 900}) as page:
        page.add_init_script("localStorage.setItem('rag.collection', 'staff-handbook')")
        page.goto("/")
        turn = ask_in_new_chat(page, "How many days of annual leave are there, and what does a trip abroad need?")
        titles = turn.locator(".source-title")
        for path in ("uk/leave.md", "us/leave.md"):
            named = turn.locator(f".source-title[aria-label$='Leave types — {path}']")
            expect(named).to_have_count(1)
            expect(named).to_have_attribute("aria-label", re.compile(rf"^\[\d+\] Leave types — {re.escape(path)}$"))
            expect(named).to_have_text(f"Leave types ({path})")  # the two cards no longer read alike
        long = turn.locator(".source-title", has_text="What to consider")
        expect(long).to_have_attribute("title", f"{LONG_TITLE} — travel/abroad.md")  # whole on hover
        expect(long).to_have_attribute("aria-label", re.compile(rf"^\[\d+\] {re.escape(LONG_TITLE)} — travel/abroad\.md$"))
        assert titles.count() >= 3
        shoot(page, artifacts_dir(tmp_path_factory), problems, "same-titles")

        # a Markdown source read whole follows the page's theme: dark text colours on a dark preview
        page.select_option("#theme", "dark")
        turn.locator(".source-card", has_text="uk/leave.md").first.click()
        page.click("#preview-whole")
        heading = page.locator("#preview .whole-file h1")
        expect(heading).to_have_text("Leave types")
        ground = page.evaluate("getComputedStyle(document.querySelector('#preview')).backgroundColor")
        ink = heading.evaluate("(h) => getComputedStyle(h).color")
        assert brightness(ground) < 0.25 < 0.6 < brightness(ink), (ground, ink)
        shoot(page, artifacts_dir(tmp_path_factory), problems, "whole-dark")
    assert not problems, problems


def brightness(css_rgb: str) -> float:
    """A CSS rgb()/rgba() colour's mean channel, 0-1."""
    r, g, b = (int(v) for v in re.findall(r"\d+", css_rgb)[:3])
    return (r + g + b) / 765


def test_conversations_are_grouped_by_the_day_they_were_last_used(browser, empty_data, tmp_path_factory):
    base, data = empty_data
    httpx.post(f"{base}/api/collections", json={"name": "notes"}).raise_for_status()
    days_ago = {"Asked today": 0, "Asked yesterday": 1, "Asked three days ago": 3, "Asked last month": 30}
    ids = {}
    for title in days_ago:
        conv = httpx.post(f"{base}/api/conversations", json={"collections": ["notes"]}).json()["id"]
        httpx.patch(f"{base}/api/conversations/{conv}", json={"title": title}).raise_for_status()
        ids[title] = conv
    # when each was last used: moved back in the server's own store, as time would have
    with sqlite3.connect(data / "store.db") as db:
        for title, days in days_ago.items():
            db.execute("UPDATE conversation SET updated_at = datetime(updated_at, ?) WHERE id = ?",
                       (f"-{days} days", ids[title]))
    problems: dict[str, list[str]] = {}
    with checked_page(browser, base, locale="en-GB", timezone_id="UTC",
                      viewport={"width": 1440, "height": 900}) as page:
        page.goto("/")
        listed = page.locator("#conv-list > li")
        expect(listed).to_have_count(8)
        expect(listed).to_have_text(["Today", re.compile("Asked today"), "Yesterday", re.compile("Asked yesterday"),
                                     "Previous 7 days", re.compile("Asked three days ago"), "Earlier",
                                     re.compile("Asked last month")])
        month = page.locator(".conv-open", has_text="Asked last month")
        expect(month).to_have_attribute("title", re.compile(r"^Asked last month\n.*\d"))  # its date on hover
        out = artifacts_dir(tmp_path_factory)
        page.screenshot(path=out / "first-conversations-by-day-1440.png")
        problems["1440"] = axe_problems(page)
        page.set_viewport_size({"width": 390, "height": 844})  # a phone: the list is in the drawer
        page.click("#sidebar-toggle")
        expect(page.locator("#sidebar .conv-day", has_text="Earlier")).to_be_visible()
        page.screenshot(path=out / "first-conversations-by-day-390.png")
        problems["390"] = axe_problems(page)
    assert not any(problems.values()), problems
