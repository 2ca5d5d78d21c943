"""Screenshots of every main view (chat, preview, documents, status) at phone and desktop widths,
light and dark, English and Chinese, written as test artifacts; axe-core finds no serious or
critical accessibility violation on them."""

from __future__ import annotations

import pytest

from tests.web.conftest import artifacts_dir, strict_page
from tests.web.test_pages import with_recorded_gpus

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

WIDTHS = {390: 844, 1440: 900}
AXE_RUNS = {("en", "light", 1440), ("zh", "dark", 390)}


def axe_problems(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    violations = Axe().run(page).response["violations"]
    return [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:3]}"
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


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_screenshots_and_accessibility(browser, live_server, conversation, tmp_path_factory, lang):
    out = artifacts_dir(tmp_path_factory)
    problems: dict[str, list[str]] = {}
    for scheme in ("light", "dark"):
        for width, height in WIDTHS.items():
            page, errors, context = strict_page(
                browser, live_server, viewport={"width": width, "height": height}, color_scheme=scheme,
                locale="zh-CN" if lang == "zh" else "en-GB")
            context.add_init_script(
                f"localStorage.setItem('rag.conversation', '{conversation}');"
                "localStorage.setItem('rag.documents.collection', 'docs');")
            with_recorded_gpus(context, live_server)
            name = f"{lang}-{scheme}-{width}"
            check = (lang, scheme, width) in AXE_RUNS

            page.goto("/")
            expect(page.locator(".turn .source-card").first).to_be_visible()
            page.screenshot(path=out / f"chat-{name}.png")
            if check:
                problems["chat"] = axe_problems(page)

            page.locator(".turn .source-card").first.click()
            expect(page.locator("#preview .passage-chunk.target")).to_be_visible()
            page.screenshot(path=out / f"preview-{name}.png")
            if check:
                problems["preview"] = axe_problems(page)
            page.click("#preview-close")

            page.goto("/#documents")
            expect(page.locator("#document-rows tr").first).to_be_visible()
            expect(page.locator(".job").first).to_be_visible()
            page.screenshot(path=out / f"documents-{name}.png", full_page=True)
            if check:
                problems["documents"] = axe_problems(page)

            page.goto("/#status")
            expect(page.locator(".gpu-card")).to_have_count(2)
            page.screenshot(path=out / f"status-{name}.png", full_page=True)
            if check:
                problems["status"] = axe_problems(page)
            context.close()
            assert not errors, f"{name}: {errors}"
    assert not any(problems.values()), problems
