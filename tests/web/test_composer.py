"""The question box and what sits beside it, in headless Chromium against the real server (echo backend):
the collections to ask stay in view beside the question while the conversation scrolls, a question can
be asked in two collections at once, and the sidebar marks the current conversation apart from one the
pointer is over."""

from __future__ import annotations

import httpx
import pytest

from tests.web.conftest import checked_page

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

ANSWER_TIMEOUT_MS = 60_000  # the first question also warms the embedder up on a shared CPU
QUESTIONS = ["How long does sourdough dough ferment?", "How often is the starter fed?",
             "How often should the chain be lubricated?"]


def ask(page, question: str) -> None:
    page.fill("#question", question)
    page.press("#question", "Enter")
    expect(page.locator(".answer").last).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)


def chosen(page) -> list[str]:
    return page.eval_on_selector("#collection", "s => [...s.selectedOptions].map((o) => o.value)")


def assert_beside_the_question(page, where: str) -> None:
    """The collection list lies wholly in the window, uncovered, and next to the question box (with its label)."""
    inner = page.evaluate("innerHeight")
    picker, question = page.locator("#collection").bounding_box(), page.locator("#question").bounding_box()
    labelled = page.locator(".composer .picker").bounding_box()
    assert picker["y"] >= 0 and picker["y"] + picker["height"] <= inner, f"{where}: the list is out of view: {picker}"
    assert question["y"] >= 0 and question["y"] + question["height"] <= inner, f"{where}: the question box is out of view"
    on_top = page.evaluate("([x, y]) => document.elementFromPoint(x, y)?.closest('#collection') !== null",
                           [picker["x"] + picker["width"] / 2, picker["y"] + picker["height"] / 2])
    assert on_top, f"{where}: something covers the collection list"
    gap_x = max(question["x"] - (labelled["x"] + labelled["width"]), labelled["x"] - (question["x"] + question["width"]), 0)
    gap_y = max(question["y"] - (labelled["y"] + labelled["height"]), labelled["y"] - (question["y"] + question["height"]), 0)
    assert max(gap_x, gap_y) <= 16, f"{where}: the list is {gap_x}, {gap_y} px away from the question box"


@pytest.mark.parametrize("width, height", [(1200, 900), (390, 844)])
def test_the_collections_stay_beside_the_question_while_the_conversation_scrolls(browser, live_server, width, height):
    with checked_page(browser, live_server, viewport={"width": width, "height": height}) as page:
        page.goto("/")
        expect(page.locator("#collection")).to_be_enabled()
        page.select_option("#collection", "docs")
        for question in QUESTIONS:
            ask(page, question)
        assert page.evaluate("document.documentElement.scrollHeight > 1.5 * innerHeight"), "the conversation does not scroll"
        for where, top in (("top", "0"), ("middle", "document.documentElement.scrollHeight / 2"),
                           ("bottom", "document.documentElement.scrollHeight")):
            page.evaluate(f"window.scrollTo(0, {top})")
            page.wait_for_function(f"Math.abs(scrollY - Math.min({top}, document.documentElement.scrollHeight - innerHeight)) < 2")
            assert_beside_the_question(page, f"{width} px, scrolled to the {where}")


def test_a_question_to_two_collections_sends_both_and_is_answered_from_both(page, live_server):
    page.goto("/")
    expect(page.locator("#collection")).to_be_enabled()
    page.select_option("#collection", "docs")
    page.locator("#collection option[value='archive']").click()  # a click adds one, no modifier key needed
    assert chosen(page) == ["archive", "docs"]

    with page.expect_request("**/api/ask") as sent:
        ask(page, "When is the spring fair, and how long does the dough ferment?")
    body = sent.value.post_data_json
    assert body["collections"] == ["archive", "docs"] and "collection" not in body
    saved = httpx.get(f"{live_server}/api/conversations/{body['conversation_id']}").json()
    assert saved["collections"] == ["archive", "docs"]
    assert {s["collection"] for s in saved["turns"][0]["sources"]} == {"archive", "docs"}

    # a click takes one out again, and a question then goes to the other alone
    page.locator("#collection option[value='archive']").click()
    assert chosen(page) == ["docs"]
    with page.expect_request("**/api/ask") as second:
        ask(page, "How often is the starter fed?")
    assert second.value.post_data_json["collections"] == ["docs"]

    # the conversation opened again chooses the collections it was started with
    page.reload()
    expect(page.locator(".turn")).to_have_count(2)
    assert chosen(page) == ["archive", "docs"]


def test_the_current_conversation_is_marked_apart_from_the_one_under_the_pointer(page, live_server):
    other = httpx.post(f"{live_server}/api/conversations", json={"title": "Another conversation",
                                                                  "collections": ["docs"]}).json()
    page.goto("/")
    expect(page.locator("#collection")).to_be_enabled()
    page.select_option("#collection", "docs")
    with page.expect_request("**/api/ask") as sent:
        ask(page, "How long does sourdough dough ferment?")
    current_id = sent.value.post_data_json["conversation_id"]
    current = page.locator(f".conv-item[data-id='{current_id}']")
    hovered = page.locator(f".conv-item[data-id='{other['id']}']")
    expect(current).to_have_attribute("aria-current", "true")
    expect(current.locator(".conv-open")).to_have_attribute("aria-current", "true")
    expect(hovered).not_to_have_attribute("aria-current", "true")
    expect(page.locator(".conv-item[aria-current]")).to_have_count(1)

    hovered.hover()
    look = "n => { const s = getComputedStyle(n); return [s.backgroundColor, s.boxShadow, getComputedStyle(n.querySelector('.conv-open')).fontWeight]; }"
    current_look, hovered_look = current.evaluate(look), hovered.evaluate(look)
    assert hovered_look[0] != "rgba(0, 0, 0, 0)", "hover shows nothing"
    assert all(a != b for a, b in zip(current_look, hovered_look)), (
        f"the current conversation looks like the hovered one: {current_look} vs {hovered_look}")

    # choosing the other one moves the mark
    hovered.locator(".conv-open").click()
    expect(hovered).to_have_attribute("aria-current", "true")
    expect(hovered.locator(".conv-open")).to_have_attribute("aria-current", "true")
    expect(current).not_to_have_attribute("aria-current", "true")
    expect(current.locator(".conv-open")).not_to_have_attribute("aria-current", "true")
