"""Screenshots of every view of the page at phone and desktop widths, light and dark, English and Chinese,
written as test artifacts; axe-core finds no serious or critical accessibility violation on any of them.

The views: a saved conversation (chat), the passage preview, the conversations drawer open (phones), a
new conversation, the documents view with a job card that names its failed and skipped files, and the
status view."""

from __future__ import annotations

import pytest

from tests.web.conftest import artifacts_dir, strict_page
from tests.web.test_job_outcomes import NOTES, PNG, job_card
from tests.web.test_pages import open_documents, with_recorded_gpus

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

WIDTHS = {390: 844, 1440: 900}
OUTCOMES = "looks"  # a collection whose last job ingested a note, skipped an image and failed on a PDF
DAMAGED_PDF = {"name": "torn.pdf", "mimeType": "application/pdf", "buffer": b"%PDF-1.4\nthis is not a real pdf\n"}


def axe_problems(page) -> list[str]:
    """The serious and critical axe-core violations on the page as it is now, one line each."""
    from axe_playwright_python.sync_playwright import Axe

    violations = Axe().run(page).response["violations"]
    return [f"{v['id']} ({v['impact']}, {v['help']}): {[n['target'] for n in v['nodes']][:4]}"
            for v in violations if v["impact"] in ("serious", "critical")]


@pytest.fixture(scope="module")
def conversation(browser, live_server) -> int:
    """A saved conversation over `docs` with an answer, its sources and a code block."""
    page, errors, context = strict_page(browser, live_server)
    page.goto("/")
    expect(page.locator("#collection")).to_be_enabled()
    page.select_option("#collection", "docs")
    with page.expect_request("**/api/ask") as sent:
        page.fill("#question", "How long does sourdough dough ferment? Show it as `code`:\n\n```python\nhours = 4\n```")
        page.press("#question", "Enter")
    expect(page.locator(".answer").last).to_have_attribute("aria-busy", "false", timeout=60_000)
    context.close()
    assert not errors, errors
    return sent.value.post_data_json["conversation_id"]


@pytest.fixture(scope="module")
def outcomes(browser, live_server) -> str:
    """A collection whose job card and last-job list name a skipped image and a failed PDF."""
    page, errors, context = strict_page(browser, live_server)
    open_documents(page, OUTCOMES)
    page.set_input_files("#pick-files", files=[NOTES[0], {"name": "photo.png", "mimeType": "image/png", "buffer": PNG},
                                               DAMAGED_PDF])
    expect(job_card(page).locator(".job-facts")).to_have_text("1 ingested, 1 failed, 1 skipped")
    context.close()
    assert not errors, errors
    return OUTCOMES


def look_at(page, out, problems: dict[str, list[str]], view: str, name: str, *, full_page: bool = False) -> None:
    """A screenshot of the page as it is (a whole page from its top: a sticky header stays at the top of the
    picture), and axe-core's serious and critical findings on it."""
    if full_page:
        page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=out / f"{view}-{name}.png", full_page=full_page)
    found = axe_problems(page)
    if found:
        problems[f"{view}-{name}"] = found


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_screenshots_and_accessibility(browser, live_server, conversation, outcomes, tmp_path_factory, lang):
    out = artifacts_dir(tmp_path_factory)
    problems: dict[str, list[str]] = {}
    for scheme in ("light", "dark"):
        for width, height in WIDTHS.items():
            page, errors, context = strict_page(
                browser, live_server, viewport={"width": width, "height": height}, color_scheme=scheme,
                locale="zh-CN" if lang == "zh" else "en-GB")
            context.add_init_script(
                f"localStorage.setItem('rag.conversation', '{conversation}');"
                f"localStorage.setItem('rag.documents.collection', '{outcomes}');")
            with_recorded_gpus(context, live_server)
            name = f"{lang}-{scheme}-{width}"

            page.goto("/")
            expect(page.locator(".turn .source-card").first).to_be_visible()
            expect(page.locator(f".conv-item[data-id='{conversation}']")).to_have_attribute("aria-current", "true")
            look_at(page, out, problems, "chat", name)

            page.locator(".turn .source-card").first.click()
            expect(page.locator("#preview .passage-chunk.target")).to_be_visible()
            look_at(page, out, problems, "preview", name)
            page.click("#preview-close")

            if width < 768:  # the sidebar is a drawer on phones
                page.click("#sidebar-toggle")
                expect(page.locator("#sidebar")).to_be_visible()
                look_at(page, out, problems, "drawer", name)
            page.click("#new-chat")
            expect(page.locator("#intro")).to_be_visible()
            look_at(page, out, problems, "new", name)

            page.goto("/#documents")
            expect(page.locator("#document-rows tr").first).to_be_visible()
            expect(page.locator("#last-job .job-failed")).to_be_visible()
            page.locator(".job .job-issues summary").first.click()  # a card's list of files, open
            look_at(page, out, problems, "documents", name, full_page=True)

            page.goto("/#status")
            expect(page.locator(".gpu-card")).to_have_count(2)
            look_at(page, out, problems, "status", name, full_page=True)
            context.close()
            assert not errors, f"{name}: {errors}"
    assert not problems, "serious or critical accessibility violations:\n" + "\n".join(
        f"{where}: {line}" for where, lines in problems.items() for line in lines)
