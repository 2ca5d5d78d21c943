"""The page on a phone (390x844) and in Chinese, in headless Chromium against the real server (echo
backend), under the page's own Content-Security-Policy: the conversations drawer opens and closes the
ways a phone user expects, short Chinese labels stay whole, every label for screen readers is in the
page's language, server errors are said in it, and collection names may be in any language."""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Iterator

import httpx
import pytest

from tests.support.wait import wait_until
from tests.web.conftest import checked_page
from tests.web.test_pages import with_recorded_gpus

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
LOCALES = {"en": "en-GB", "zh": "zh-CN"}
ANSWER_TIMEOUT_MS = 60_000  # the first question also warms the embedder up on a shared CPU

# A document whose title and file name have no place to break: the table gives its column all the room
# it can, which squeezes the short columns beside it.
LONG_NAME = "an_extremely_long_file_name_without_any_break_opportunities_whatsoever_for_the_layout.md"
LONG_TEXT = b"# Ein_sehr_langer_Titel_ohne_Leerzeichen_der_die_Tabelle_breit_macht_und_immer_weiter\n\nFeed the starter daily.\n"

# The words that may stay in Latin letters inside a Chinese label: keys as printed on keyboards.
KEY_NAMES = {"Enter", "Shift", "Esc"}

# Distinct lines of text an element's own text takes (text nodes measured, not boxes).
LINES = """(n) => {
  const tops = [];
  const walker = document.createTreeWalker(n, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    if (!t.nodeValue.trim() || t.parentElement.closest('.visually-hidden')) continue;
    const range = document.createRange();
    range.selectNodeContents(t);
    for (const r of range.getClientRects()) {
      if (r.width > 0 && !tops.some((y) => Math.abs(y - r.top) < 4)) tops.push(r.top);
    }
  }
  return tops.length;
}"""

LABELS = """() => [...document.querySelectorAll('[aria-label], [title], [placeholder]')].flatMap((n) =>
  ['aria-label', 'title', 'placeholder'].filter((a) => n.hasAttribute(a))
    .map((a) => [`${n.tagName.toLowerCase()}${n.id ? '#' + n.id : ''}.${n.className}`, a, n.getAttribute(a)]))"""


@contextmanager
def phone(browser, base: str, lang: str = "en", **context_args) -> Iterator:
    """A page at 390x844 in `lang`, under the page's CSP; a page error fails the test."""
    with checked_page(browser, base, viewport=PHONE, locale=LOCALES[lang], **context_args) as pg:
        yield pg


def ask(page, question: str) -> None:
    page.fill("#question", question)
    page.press("#question", "Enter")
    expect(page.locator(".answer").last).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)


def upload_long_named(base: str, collection: str) -> None:
    """A collection holding one document with an unbreakable name, ingested."""
    httpx.post(f"{base}/api/collections", json={"name": collection})
    job = httpx.post(f"{base}/api/collections/{collection}/documents", headers={"X-Requested-By": "web"},
                     files={"files": (LONG_NAME, LONG_TEXT, "text/markdown")}).json()
    wait_until(lambda: httpx.get(f"{base}/api/jobs/{job['job']}").json()["status"], accept=lambda s: s == "done",
               timeout=120, interval=0.2, what="the upload's ingestion job finishing")


def assert_one_line(page, selector: str, at_least: int = 1) -> None:
    labels = page.locator(selector)
    expect(labels.first).to_be_visible()
    shown = [(n.inner_text().strip(), n.evaluate(LINES)) for n in labels.all() if n.is_visible()]
    shown = [(text, lines) for text, lines in shown if text and lines]  # 0: only text for screen readers
    assert len(shown) >= at_least, (selector, shown)
    assert all(lines == 1 for _, lines in shown), f"{selector}: labels broken over lines: {shown}"


# ---------------------------------------------------------------- 1. the drawer on a phone

def drawer_closed(page) -> None:
    toggle = page.locator("#sidebar-toggle")
    expect(page.locator("#sidebar")).to_be_hidden()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(toggle).to_be_focused()


def show_drawer(page) -> None:
    page.click("#sidebar-toggle")
    expect(page.locator("#sidebar")).to_be_visible()


def open_drawer(page) -> None:
    """Open it with ☰, which it leaves in sight and says is expanded."""
    toggle = page.locator("#sidebar-toggle")
    show_drawer(page)
    expect(toggle).to_have_attribute("aria-expanded", "true")
    # the drawer leaves the ☰ it was opened with in sight and within reach
    box = toggle.bounding_box()
    on_top = page.evaluate("([x, y]) => document.elementFromPoint(x, y)?.id", [box["x"] + box["width"] / 2,
                                                                              box["y"] + box["height"] / 2])
    assert on_top == "sidebar-toggle", f"the open drawer covers ☰ ({on_top!r} is on top)"


def test_the_phone_drawer_closes_by_its_button_esc_a_tap_outside_and_navigation(browser, live_server):
    title = "Drawer conversation"
    conversation = httpx.post(f"{live_server}/api/conversations", json={"title": title, "collections": ["docs"]}).json()
    with phone(browser, live_server, has_touch=True) as page:
        page.goto("/")
        expect(page.locator("#collection")).to_be_enabled()
        expect(page.locator("#sidebar")).to_be_hidden()
        page.evaluate("() => { window.mainClicks = 0; document.querySelector('.main')"
                      ".addEventListener('click', () => { window.mainClicks += 1; }); }")

        # ☰ toggles it, and says so
        open_drawer(page)
        page.click("#sidebar-toggle")
        drawer_closed(page)

        # its own close button
        open_drawer(page)
        close = page.locator("#sidebar .sidebar-close")
        expect(close).to_be_visible()
        expect(close).to_have_attribute("aria-label", "Close conversations")
        close.click()
        drawer_closed(page)

        # Esc
        open_drawer(page)
        page.keyboard.press("Escape")
        drawer_closed(page)

        # a tap on the dimmed page beside it closes it, and the page beneath does not get the tap
        open_drawer(page)
        drawer = page.locator("#sidebar").bounding_box()
        x, y = (drawer["x"] + drawer["width"] + PHONE["width"]) / 2, PHONE["height"] * 0.6
        page.touchscreen.tap(x, y)
        drawer_closed(page)
        assert page.evaluate("window.mainClicks") == 0, "the tap on the dimmed area reached the page beneath"

        # choosing a conversation
        open_drawer(page)
        page.locator(f".conv-item[data-id='{conversation['id']}'] .conv-open").click()
        drawer_closed(page)
        expect(page.locator(f".conv-item[data-id='{conversation['id']}']")).to_have_attribute("aria-current", "true")

        # "New conversation", then a question: its answer streams in sight
        open_drawer(page)
        page.click("#new-chat")
        drawer_closed(page)
        page.select_option("#collection", "docs")
        ask(page, "How often is the starter fed?")
        answer = page.locator(".answer").last
        box = answer.bounding_box()
        seen = page.evaluate("([x, y]) => Boolean(document.elementFromPoint(x, y)?.closest('.turn'))",
                             [box["x"] + 10, box["y"] + box["height"] / 2])
        assert seen, "something covers the answer"
        expect(page.locator("#sidebar")).to_be_hidden()


def test_the_drawer_keeps_esc_for_itself_while_a_rename_is_open(browser, live_server):
    """Esc in the drawer's rename field cancels the rename and leaves the drawer open."""
    httpx.post(f"{live_server}/api/conversations", json={"title": "Rename me", "collections": ["docs"]})
    with phone(browser, live_server) as page:
        page.goto("/")
        expect(page.locator(".conv-item", has_text="Rename me").first).to_be_attached()
        open_drawer(page)
        item = page.locator(".conv-item", has_text="Rename me").first
        item.locator(".conv-rename").click()
        page.press(".conv-rename-form input", "Escape")
        expect(page.locator(".conv-rename-form")).to_have_count(0)
        expect(page.locator("#sidebar")).to_be_visible()
        expect(page.locator("#sidebar-toggle")).to_have_attribute("aria-expanded", "true")


# ---------------------------------------------------------------- 2. short Chinese labels stay whole

def test_short_chinese_labels_stay_on_one_line_on_a_phone(browser, live_server):
    upload_long_named(live_server, "long-names")
    with phone(browser, live_server, "zh") as page:
        with_recorded_gpus(page.context, live_server)
        page.add_init_script("localStorage.setItem('rag.documents.collection', 'long-names');")
        page.goto("/#documents")
        expect(page.locator("#document-rows tr")).to_have_count(1)
        expect(page.locator("table.documents th").first).to_have_text("文件")
        # on a phone each document is a card: its facts named by their column, the header out of sight
        assert page.evaluate("getComputedStyle(document.querySelector('#document-rows tr')).display") == "block"
        assert page.evaluate(
            "getComputedStyle(document.querySelector('#document-rows td:nth-child(3)'), '::before').content") == '"状态: "'
        for selector in ("#dropzone .picker-button", "#document-rows td:nth-child(3)",
                         "#document-rows td:nth-child(4)", ".doc-delete", "#create-form button",
                         "#delete-collection", "#source-form button", ".tabs a", ".collection-facts"):
            assert_one_line(page, selector)

        page.goto("/#chat")
        page.select_option("#collection", "docs")
        ask(page, "面团发酵需要多长时间？")
        for selector in ("#ask", "#stop", ".copy-answer", ".sources-title", ".source-support .support-label",
                         ".answer .citation"):
            assert_one_line(page, selector)
        show_drawer(page)
        assert_one_line(page, "#new-chat")

        page.goto("/#status")
        expect(page.locator(".gpu-card")).to_have_count(2)
        for selector in (".fact dt", "#status-refresh"):
            assert_one_line(page, selector)


# ---------------------------------------------------------------- 3. labels for screen readers in Chinese

def english_words(value: str, data: list[str]) -> list[str]:
    """The words of Latin letters (3 or more) left in a label once the data it names is taken out."""
    for known in sorted(data, key=len, reverse=True):
        value = value.replace(known, " ")
    return [w for w in re.findall(r"[A-Za-z]{3,}", value) if w not in KEY_NAMES]


def test_every_aria_label_title_and_placeholder_is_chinese(browser, live_server):
    with phone(browser, live_server, "zh") as page:
        with_recorded_gpus(page.context, live_server)
        page.add_init_script("localStorage.setItem('rag.documents.collection', 'docs');")
        seen: list[list[str]] = []
        page.goto("/")
        expect(page.locator("#collection")).to_be_enabled()
        page.select_option("#collection", "docs")
        ask(page, "面团需要发酵多久？")
        expect(page.locator(".turn .source-card").first).to_be_visible()
        seen += page.evaluate(LABELS)
        page.locator(".turn .source-card").first.click()
        expect(page.locator("#preview .passage-chunk.target")).to_be_visible()
        seen += page.evaluate(LABELS)
        page.click("#preview-close")
        show_drawer(page)
        page.locator(".conv-item .conv-rename").first.click()
        seen += page.evaluate(LABELS)
        page.press(".conv-rename-form input", "Escape")

        page.goto("/#documents")
        expect(page.locator("#document-rows tr").first).to_be_visible()
        expect(page.locator(".job").first).to_be_visible()
        seen += page.evaluate(LABELS)
        page.goto("/#status")
        expect(page.locator(".gpu-card")).to_have_count(2)
        seen += page.evaluate(LABELS)

    # what the labels may name as it is: the documents, collections, models and conversations
    collections = httpx.get(f"{live_server}/api/collections").json()
    data = [c["name"] for c in collections] + [c["embedder"] for c in collections if c["embedder"]]
    for c in collections:
        for d in httpx.get(f"{live_server}/api/collections/{c['name']}/documents").json()["documents"]:
            data += [d["path"], d["title"] or ""]
    data += [c["title"] for c in httpx.get(f"{live_server}/api/conversations").json()["conversations"]]
    data += ["echo", "NVIDIA H200"]
    names = {attr for _, attr, _ in seen}
    assert names >= {"aria-label", "title", "placeholder"}, names
    english = sorted({(where, attr, value) for where, attr, value in seen if english_words(value, [d for d in data if d])})
    assert not english, f"labels left in English: {english}"


# ---------------------------------------------------------------- 4. server errors in the page's words

def test_a_collection_that_exists_is_refused_in_chinese(browser, live_server):
    with phone(browser, live_server, "zh") as page:
        page.goto("/#documents")
        expect(page.locator(".collection-card[data-name='docs']")).to_be_visible()
        page.fill("#new-collection", "docs")
        with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/api/collections")) as created:
            page.click("#create-form button")
        assert created.value.status == 409
        # the page's own words, by the field, need no status before them
        expect(page.locator("#new-collection-error")).to_have_text("已有名为“docs”的文档集。")


def test_an_unknown_code_falls_back_to_the_servers_words(browser, live_server):
    """A code the page has no words for: the server's detail is shown as it came."""
    with phone(browser, live_server, "zh") as page:
        page.route("**/api/collections", lambda route: route.fulfill(status=409, json={
            "status_code": 409, "detail": "the store is being moved", "code": "store_moving"})
            if route.request.method == "POST" else route.fallback())
        page.goto("/#documents")
        expect(page.locator(".collection-card[data-name='docs']")).to_be_visible()
        page.fill("#new-collection", "fresh")
        page.click("#create-form button")
        expect(page.locator("#new-collection-error")).to_have_text("错误 409：the store is being moved")


# ---------------------------------------------------------------- 5. collection names in any language

NAME_RULES = {
    "en": ("Any name, in any language, up to 64 characters.", "Team notes 团队笔记",
           "A collection called “Team notes 团队笔记” already exists."),
    "zh": ("可用任何语言命名，最多 64 个字符。", "团队 笔记", "已有名为“团队 笔记”的文档集。"),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_collection_names_are_any_language_and_a_taken_one_is_refused_in_the_pages_words(browser, live_server, lang):
    rule, title, refusal = NAME_RULES[lang]
    with phone(browser, live_server, lang) as page:
        page.goto("/#documents")
        field = page.locator("#new-collection")
        hint = page.locator("#new-collection-hint")
        expect(hint).to_be_visible()  # before anything is typed
        expect(hint).to_have_text(rule)
        assert "new-collection-hint" in field.get_attribute("aria-describedby").split()

        field.fill(f"  {title} ")
        page.click("#create-form button")
        card = page.locator(".collection-card", has_text=title)
        expect(card).to_have_attribute("aria-pressed", "true")
        name = card.get_attribute("data-name")
        assert re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name), name  # the API's name, made by the server
        expect(page.locator("#collection-title")).to_have_text(title)
        try:
            error = page.locator("#new-collection-error")
            field.fill(title)
            page.click("#create-form button")
            expect(error).to_be_visible()
            expect(error).to_have_text(refusal)
            expect(field).to_have_attribute("aria-invalid", "true")
            assert "new-collection-error" in field.get_attribute("aria-describedby").split()
            field.fill("something else")
            expect(error).to_be_hidden()
            expect(field).not_to_have_attribute("aria-invalid", "true")
        finally:
            httpx.delete(f"{live_server}/api/collections/{name}", headers={"X-Requested-By": "test"}).raise_for_status()
