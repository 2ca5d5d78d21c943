"""The first ten minutes of a new user, in headless Chromium against a real server that starts with no
data (echo backend, an ingestion worker beside it): the empty chat page offers a drop zone and a folder
picker, says why Ask is disabled and links to the documents view; three dropped files become a collection
named after them and the first answer comes with its sources (the time this path takes is written as an
artifact). Around that answer: the screen reader's words (chosen collections, the answer's end, sources
named "[n] title — path"), a Markdown source read whole and raw, thumbs as icons, the conversations by day and found by their text, the theme
chosen on the page, an answer stopped before its first word, a queued message gone with its job, and on a
phone the collections on one line, the documents as cards and the server's health in reach; a text
without line breaks previewed in parts, opened at its highlight; a spreadsheet's sources named by sheet,
and its tables and a PDF's ruled table previewed as tables.
Screenshots at 390 and 1440 px; axe-core finds no serious or critical violation."""

from __future__ import annotations

import json
import re
import time
from typing import Iterator

import httpx
import pytest

from tests.support.wait import wait_until
from tests.web.conftest import DOCS, artifacts_dir, checked_page, served
from tests.web.test_looks import axe_problems

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

WIDTHS = {390: 844, 1440: 900}
INGEST_TIMEOUT_MS = 180_000  # the first ingestion also loads the embedder on a shared CPU
ANSWER_TIMEOUT_MS = 60_000

DROP = """([zone, files]) => {
  const transfer = new DataTransfer();
  for (const [name, text] of files) transfer.items.add(new File([text], name, { type: "text/markdown" }));
  document.querySelector(zone).dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
}"""


@pytest.fixture(scope="module")
def empty_server(tmp_path_factory) -> Iterator[str]:
    """A real server (and worker) over a data folder with nothing in it yet."""
    with served(tmp_path_factory, "first-visit", {}, worker=True, ASSISTANT_BACKEND="echo",
                ASSISTANT_ECHO_DELAY_S="0.2") as base:
        yield base


def shoot(page, out, problems: dict[str, list[str]], name: str) -> None:
    """Screenshots at both widths (the page as it is) and axe-core's serious and critical findings at each."""
    for width, height in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=out / f"first-{name}-{width}.png")
        found = axe_problems(page)
        if found:
            problems[f"{name}-{width}"] = found
    page.set_viewport_size({"width": 1440, "height": 900})


def test_a_new_user_drops_three_files_and_gets_an_answer_with_sources(browser, empty_server, tmp_path_factory):
    out = artifacts_dir(tmp_path_factory)
    problems: dict[str, list[str]] = {}
    with checked_page(browser, empty_server, viewport={"width": 1440, "height": 900}, locale="en-GB") as page:
        started = time.monotonic()
        page.goto("/")
        # no dead end: where to put documents, why Ask waits, and the way to the documents view
        expect(page.locator("#start")).to_be_visible()
        expect(page.locator("#start-drop")).to_contain_text("Drop files or a folder here")
        expect(page.locator("#start label", has_text="Add a folder")).to_be_visible()
        expect(page.locator("#ask")).to_be_disabled()
        expect(page.locator("#ask-reason")).to_have_text(re.compile("Add documents first"))
        assert page.get_attribute("#ask", "aria-describedby") == "ask-reason"
        expect(page.locator("#start a[href='#documents']")).to_be_visible()
        expect(page.locator("#intro")).to_be_hidden()
        shoot(page, out, problems, "empty")

        page.evaluate(DROP, ["#start-drop", list(DOCS.items())])
        expect(page.locator("#start-progress")).to_contain_text("is ready", timeout=INGEST_TIMEOUT_MS)
        # titled after the files (the first two, and how many more); the server made its API name
        expect(page.locator("#start-progress")).to_contain_text("“sourdough, bicycle and 1 more”")
        name = "sourdough-bicycle-and-1-more"
        expect(page.locator("#start")).to_be_hidden()
        expect(page.locator("#ask")).to_be_enabled()
        expect(page.locator("#ask-reason")).to_be_hidden()
        chosen = page.locator(f"#collection option[value='{name}']")
        expect(chosen).to_have_attribute("aria-selected", "true")
        assert page.evaluate("getComputedStyle(document.querySelector('#collection option'), '::before').content") \
            == '"✓" / ""', "the tick is a mark, not a word a screen reader says"

        page.fill("#question", "How often should I feed the starter?")
        page.press("#question", "Enter")
        expect(page.locator(".turn .source-card").first).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
        expect(page.locator(".answer").last).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
        took = time.monotonic() - started
        (out / "first-answer.json").write_text(json.dumps({"empty_page_to_answer_with_sources_s": round(took, 1)}))
        print(f"empty page -> 3 files dropped -> first answer with sources: {took:.1f} s")

        # what a screen reader is told: the answer's end, once; each source by number, title and path
        expect(page.locator("#answer-live")).to_have_text("The answer is complete.")
        first = page.locator(".source-card .source-title").first
        expect(first).to_have_attribute("aria-label", re.compile(r"^\[1\] Sourdough bread — sourdough\.md$"))
        expect(first).to_have_attribute("title", "Sourdough bread — sourdough.md")
        # thumbs drawn as icons, named for what they mean
        up = page.locator(".turn-actions .feedback-up")
        expect(up.locator("svg.thumb")).to_have_count(1)
        expect(up).to_have_attribute("aria-label", "Good answer")
        up.click()
        expect(up).to_have_attribute("aria-pressed", "true")
        # the conversation under today, its title whole on hover, found by words of its answer
        expect(page.locator("#conv-list .conv-day").first).to_have_text("Today")
        expect(page.locator(".conv-open").first).to_have_attribute("title", re.compile("^How often should I feed the starter\\?\n"))
        page.fill("#conv-search", "echo:")  # in the answer, not in the title
        expect(page.locator(".conv-item")).to_have_count(1)
        page.fill("#conv-search", "nothing said this")
        expect(page.locator(".conv-item")).to_have_count(0)
        page.fill("#conv-search", "")
        expect(page.locator(".conv-item")).to_have_count(1)
        shoot(page, out, problems, "answer")

        # a Markdown source read whole in the preview: rendered at the passage, its raw text on request
        page.locator(".turn .source-card").first.click()
        expect(page.locator("#preview .passage-chunk.target").first).to_be_visible()
        page.click("#preview-whole")
        whole = page.locator("#preview .whole-file")
        expect(whole.locator("h1")).to_have_text("Sourdough bread")
        expect(whole.locator(".target").first).to_be_visible()
        page.click("#preview .raw-toggle")
        raw = page.locator("#preview .raw-file")
        expect(raw).to_contain_text("# Sourdough bread\n\n## Starter")
        assert raw.evaluate("(n) => getComputedStyle(n).whiteSpace") == "pre-wrap"
        expect(whole).to_be_hidden()
        page.click("#preview-close")

        # the theme chosen on the page wins over the system's, and is kept
        background = "getComputedStyle(document.body).backgroundColor"
        page.select_option("#theme", "dark")
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        assert page.evaluate(background) == "rgb(19, 20, 24)"
        shoot(page, out, problems, "dark")
        page.reload()
        expect(page.locator("#theme")).to_have_value("dark")
        assert page.evaluate(background) == "rgb(19, 20, 24)"
        page.select_option("#theme", "light")
        assert page.evaluate(background) == "rgb(247, 247, 248)"
        page.select_option("#theme", "system")
        assert page.get_attribute("html", "data-theme") is None
    assert not problems, "serious or critical accessibility violations:\n" + "\n".join(
        f"{where}: {line}" for where, lines in problems.items() for line in lines)


def stop_before_a_word(base: str, collection: str) -> int:
    """Ask through the API and hang up once the sources came, before the first word: the conversation's id."""
    conv = httpx.post(f"{base}/api/conversations", json={"collections": [collection]}).json()["id"]
    body = {"question": "Which pressure for road tyres?", "collections": [collection], "conversation_id": conv}
    with httpx.stream("POST", f"{base}/api/ask", json=body, headers={"Accept": "text/event-stream"}, timeout=60) as resp:
        for line in resp.iter_lines():
            if line.startswith("event: retrieved"):
                break
    wait_until(lambda: httpx.get(f"{base}/api/conversations/{conv}").json()["turns"],
               accept=lambda turns: len(turns) == 1, timeout=30, interval=0.2, what="the stopped turn being saved")
    return conv


def test_a_stopped_turn_without_words_a_queued_message_that_goes_with_its_job_and_a_phone(
        browser, empty_server, tmp_path_factory):
    base = empty_server
    collection = "stops"
    httpx.post(f"{base}/api/collections", json={"name": collection})
    with checked_page(browser, base, viewport={"width": 1440, "height": 900}, locale="en-GB") as page:
        page.add_init_script(f"localStorage.setItem('rag.documents.collection', '{collection}')")
        page.goto("/#documents")
        expect(page.locator("#collection-title")).to_have_text(collection)
        page.set_input_files("#pick-files", files=[
            {"name": "bicycle.md", "mimeType": "text/markdown", "buffer": DOCS["bicycle.md"].encode()}])
        expect(page.locator("#docs-status")).to_have_text("Queued 1 file.")
        expect(page.locator(".job[data-status='done']")).to_be_visible(timeout=INGEST_TIMEOUT_MS)
        expect(page.locator("#docs-status")).to_be_hidden()  # the message went with its job
        problems: dict[str, list[str]] = {}
        shoot(page, artifacts_dir(tmp_path_factory), problems, "documents")
        page.set_viewport_size({"width": 390, "height": 844})  # a phone: each document a card
        row = page.locator("#document-rows tr").first
        assert row.evaluate("(r) => getComputedStyle(r).display") == "block"
        assert row.evaluate("(r) => r.getBoundingClientRect().width") > 300
        page.goto("/#chat")
        expect(page.locator("#health")).to_be_visible()  # the server's health within reach
        expect(page.locator("#health")).to_have_attribute("title", "echo")
        expect(page.locator("#collection")).to_be_enabled()
        assert page.locator("#collection").bounding_box()["height"] < 40  # the collections on one line
        page.set_viewport_size({"width": 1440, "height": 900})
        assert not problems, f"serious or critical accessibility violations: {problems}"

        conv = stop_before_a_word(base, collection)
        turn = httpx.get(f"{base}/api/conversations/{conv}").json()["turns"][0]
        assert (turn["status"], turn["answer"]) == ("stopped", "")
        page.evaluate(f"localStorage.setItem('rag.conversation', '{conv}')")
        page.goto("/#chat")
        page.reload()
        expect(page.locator(".stopped-mark")).to_have_text("Stopped before an answer.")
        actions = page.locator(".turn-actions button")
        expect(actions).to_have_count(1)
        expect(actions).to_have_class(re.compile("regenerate"))
        shoot(page, artifacts_dir(tmp_path_factory), problems, "stopped-before-an-answer")
        assert not problems, f"serious or critical accessibility violations: {problems}"
        actions.click()  # answered again: now a whole answer, with all its actions
        expect(page.locator(".turn-actions .feedback-up")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
        expect(page.locator(".stopped-mark")).to_have_count(0)


def upload(base: str, collection: str, name: str, data: bytes) -> None:
    """`name` uploaded into a new collection, and its ingestion finished."""
    httpx.post(f"{base}/api/collections", json={"name": collection})
    job = httpx.post(f"{base}/api/collections/{collection}/documents", headers={"X-Requested-By": "web"},
                     files={"files": (name, data, "text/plain")}).json()["job"]
    wait_until(lambda: httpx.get(f"{base}/api/jobs/{job}").json()["status"], accept=lambda s: s == "done",
               timeout=INGEST_TIMEOUT_MS / 1000, interval=0.2, what="the upload's ingestion")


def open_and_ask(page, collection: str, question: str) -> None:
    """The page opened with this collection chosen (as the one last used), the question sent."""
    page.add_init_script(f"localStorage.setItem('rag.collection', '{collection}')")
    page.goto("/")
    expect(page.locator(f"#collection option[value='{collection}']")).to_have_attribute("aria-selected", "true")
    page.fill("#question", question)
    page.press("#question", "Enter")


def test_a_text_without_line_breaks_opens_at_its_highlight_in_parts(browser, empty_server, tmp_path_factory):
    """A .txt of one 25,000-character line (as pasted articles are): the preview shows its parts, says which
    part (not "line 1") and opens scrolled to the source, however far down it lies."""
    lines = [f"Stage {i} of the river walk passes the old mill and the willow bank near village {i % 37}. "
             for i in range(300)]
    lines.insert(220, "The lighthouse keeper's cat is called Biscuit and sleeps on the lamp room stairs. ")
    upload(empty_server, "wall", "river-walk.txt", "".join(lines).encode())
    with checked_page(browser, empty_server, viewport={"width": 1440, "height": 900}, locale="en-GB") as page:
        open_and_ask(page, "wall", "What is the lighthouse keeper's cat called?")
        card = page.locator(".turn .source-card", has_text="lighthouse").first
        expect(card).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
        card.click()
        target = page.locator("#preview .passage-chunk.target").first
        expect(target).to_be_visible()
        expect(page.locator("#preview-meta")).to_contain_text(re.compile(r"part \d+ of \d+"))
        expect(page.locator("#preview-meta")).not_to_contain_text("line 1")
        body = page.locator("#preview-body")
        assert body.evaluate("(b) => b.scrollHeight > b.clientHeight"), "the passage is longer than the preview"
        seen = page.evaluate("""() => {
          const body = document.querySelector('#preview-body').getBoundingClientRect();
          const first = (document.querySelector('#preview mark.support-span')
            || document.querySelector('#preview .passage-chunk.target')).getBoundingClientRect();
          return first.top >= body.top && first.top < body.bottom;
        }""")
        assert seen, "the preview opened away from its highlight"
        problems: dict[str, list[str]] = {}
        shoot(page, artifacts_dir(tmp_path_factory), problems, "preview")
        assert not problems, f"serious or critical accessibility violations: {problems}"


def test_a_spreadsheet_is_named_by_its_sheets_and_tables_are_shown_as_tables(browser, empty_server, tmp_path,
                                                                             tmp_path_factory):
    """A workbook's source says its sheet (not "page 2") and previews as a table, as does a PDF's ruled table."""
    from tests.support.table_fixtures import write_pdf, write_xlsx

    write_xlsx(tmp_path / "inventory.xlsx")
    write_pdf(tmp_path / "prices.pdf")
    httpx.post(f"{empty_server}/api/collections", json={"name": "tables"})
    files = [("files", (name, (tmp_path / name).read_bytes(), "application/octet-stream"))
             for name in ("inventory.xlsx", "prices.pdf")]
    job = httpx.post(f"{empty_server}/api/collections/tables/documents", headers={"X-Requested-By": "web"},
                     files=files, timeout=60).json()["job"]
    wait_until(lambda: httpx.get(f"{empty_server}/api/jobs/{job}").json()["status"], accept=lambda s: s == "done",
               timeout=INGEST_TIMEOUT_MS / 1000, interval=0.2, what="the tables' ingestion")
    with checked_page(browser, empty_server, viewport={"width": 1440, "height": 900}, locale="en-GB") as page:
        open_and_ask(page, "tables", "Which monitor is 34 inch, and what does incident response cost per hour?")
        expect(page.locator(".answer").last).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
        sheet = page.locator(".turn .source-card", has_text="inventory.xlsx").first
        expect(sheet.locator(".source-path")).to_contain_text(re.compile("sheet “(Laptops|Monitors)”"))
        expect(sheet.locator(".source-path")).not_to_contain_text("page")
        sheet.click()
        expect(page.locator("#preview-meta")).to_contain_text("sheet “")
        expect(page.locator("#preview .passage-chunk.has-table table").first).to_be_visible()
        expect(page.locator("#preview .passage")).not_to_contain_text("|---")
        problems: dict[str, list[str]] = {}
        shoot(page, artifacts_dir(tmp_path_factory), problems, "sheet-table")
        page.click("#preview-close")
        page.locator(".turn .source-card", has_text="prices.pdf").first.click()
        expect(page.locator("#preview .passage-chunk.has-table table th", has_text="Response SLA").first).to_be_visible()
        shoot(page, artifacts_dir(tmp_path_factory), problems, "pdf-table")
        assert not problems, f"serious or critical accessibility violations: {problems}"
