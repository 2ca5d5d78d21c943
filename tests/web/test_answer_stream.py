"""The answer as it streams, in headless Chromium against the real server (a slow echo backend giving
known replies): the source cards come before the first token, a new conversation is listed while its
answer is written, Stop keeps the cards (a citation still opens its source) and the stopped answer's
actions, and a stopped answer is there after a reload with its partial text, its sources and a stopped mark."""

from __future__ import annotations

import json
import re
from typing import Iterator

import httpx
import pytest

from tests.support.wait import wait_until
from tests.web.conftest import ANSWER_TIMEOUT_MS, DOCS, served

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

FERMENT = "How long does the dough ferment in bulk?"
STARTER = "How often is the sourdough starter fed?"
TAIL = " ".join(["and the dough keeps its rhythm"] * 6)  # 36 words: about 7 s at 0.2 s a word
REPLIES = {
    FERMENT: f"The dough ferments for four to six hours [1] {TAIL}",
    STARTER: f"Feed the starter [1] every twelve hours {TAIL}",
}

# The states the last turn goes through, in order: whether it shows source cards, and answer text.
WATCH_TURN = """() => {
  window.turnStates = [];
  new MutationObserver(() => {
    const turns = document.querySelectorAll('.turn');
    const turn = turns[turns.length - 1];
    if (!turn) return;
    const state = `${turn.querySelector('.source-card') ? 'cards' : ''}|${turn.querySelector('.answer').textContent.trim() ? 'text' : ''}`;
    if (window.turnStates[window.turnStates.length - 1] !== state) window.turnStates.push(state);
  }).observe(document.querySelector('#chat'), {subtree: true, childList: true, characterData: true});
}"""


@pytest.fixture(scope="module")  # this module's server: the `page` fixture (conftest) opens on it
def live_server(tmp_path_factory) -> Iterator[str]:
    """A server whose echo backend streams REPLIES a word every 0.2 s, over the sourdough/bicycle/solar docs."""
    with served(tmp_path_factory, "stream-web", {"docs": DOCS}, ASSISTANT_BACKEND="echo", ASSISTANT_ECHO_DELAY_S="0.2",
                ASSISTANT_ECHO_REPLIES=json.dumps(REPLIES)) as base:
        yield base


def start(page, question: str) -> None:
    """Open the page and ask in a new conversation (not waiting for the answer)."""
    page.goto("/")
    expect(page.locator("#collection")).to_be_enabled()
    page.click("#new-chat")
    page.evaluate(WATCH_TURN)
    page.fill("#question", question)
    page.press("#question", "Enter")


def test_cards_come_before_the_first_token_and_the_new_conversation_is_listed_while_streaming(page):
    start(page, FERMENT)
    turn = page.locator(".turn").last
    expect(turn.locator(".sources.pending .source-card").first).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    expect(turn.locator(".sources.pending .sources-title")).to_have_text("Retrieved, not yet cited")
    # The conversation is in the sidebar under its question while the answer is still being written.
    expect(page.locator(".conv-item .conv-open", has_text=FERMENT)).to_be_visible()
    expect(turn.locator(".answer-block > .answer")).to_have_attribute("aria-busy", "true")

    expect(turn.locator(".answer-block > .answer")).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    expect(turn.locator(".timings")).to_be_visible()  # the done event arrived
    states = page.evaluate("window.turnStates")
    assert "cards|" in states and states.index("cards|") < next(i for i, s in enumerate(states) if s.endswith("text")), (
        f"the cards were not shown before the first token: {states}")
    expect(turn.locator(".sources.pending")).to_have_count(0)  # redrawn from the final `sources` event
    expect(turn.locator(".sources-title.cited-group")).to_be_visible()
    expect(turn.locator(".source-card.cited").first).to_contain_text("sourdough.md")


def test_stop_keeps_the_cards_and_the_stopped_answer_is_there_after_a_reload(page, live_server):
    start(page, STARTER)
    turn = page.locator(".turn").last
    chip = turn.locator(".answer .citation").first
    expect(chip).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    page.click("#stop")
    expect(turn.locator(".stopped-mark")).to_have_text("Stopped.")
    cards = turn.locator(".source-card")
    expect(cards.first).to_be_visible()
    expect(chip).not_to_have_class(re.compile(r"\bunknown\b"))
    expect(turn.locator(".source-card.cited").first).to_contain_text("sourdough.md")
    chip.click()  # the citation of the partial answer opens its source
    expect(page.locator("#preview")).to_be_visible()
    expect(page.locator("#preview-meta")).to_contain_text("sourdough.md")
    page.click("#preview-close")
    # The stopped answer is stored: it can be judged and answered again at once, without a reload.
    expect(turn.locator(".turn-actions .regenerate")).to_be_visible(timeout=10_000)
    expect(turn.locator(".turn-actions .feedback-down")).to_be_visible()
    partial = turn.locator(".answer-block > .answer").inner_text().strip()
    assert partial.startswith("Feed the starter [1]") and len(partial) < len(REPLIES[STARTER]), partial

    conversation_id = int(page.evaluate("localStorage.getItem('rag.conversation')"))
    url = f"{live_server}/api/conversations/{conversation_id}"
    wait_until(lambda: httpx.get(url, timeout=10).json()["turns"], timeout=30, what="the stopped turn stored")
    page.reload()
    turn = page.locator(".turn").last
    expect(turn.locator(".question")).to_have_text(STARTER)
    expect(turn.locator(".stopped-mark")).to_have_text("Stopped.")
    answer = turn.locator(".answer-block > .answer")
    expect(answer).to_contain_text(partial)
    assert len(answer.inner_text()) < len(REPLIES[STARTER])
    expect(turn.locator(".source-card.cited").first).to_contain_text("sourdough.md")
    turn.locator(".answer .citation").first.click()
    expect(page.locator("#preview-meta")).to_contain_text("sourdough.md")
    page.click("#preview-close")
    expect(page.locator(f".conv-item[data-id='{conversation_id}'] .conv-open")).to_have_text(STARTER)


def test_a_question_asked_before_the_sidebar_has_loaded_is_not_stopped_by_the_page_starting(page):
    """The page reopens the last conversation once its lists are in; a question asked before then (a new
    chat, typed at once on a slow machine) must keep its answer rather than be replaced by that reopening."""
    held = []

    def hold_first_listing(route) -> None:
        if route.request.method == "GET" and not held:
            held.append(route)
        else:
            route.continue_()

    page.route(re.compile(r"/api/conversations\?"), hold_first_listing)
    page.goto("/")
    expect(page.locator("#collection")).to_be_enabled()
    page.evaluate(WATCH_TURN)
    page.fill("#question", FERMENT)
    page.press("#question", "Enter")
    answer = page.locator(".turn .answer-block > .answer")
    expect(answer).to_contain_text("four to six hours", timeout=ANSWER_TIMEOUT_MS)
    assert held, "the page's first listing of conversations was not held"
    held[0].continue_()  # the page's start goes on while the answer is still being written
    expect(page.locator(".conv-item[aria-current='true'] .conv-open")).to_have_text(FERMENT)
    expect(answer).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
    expect(page.locator(".turn")).to_have_count(1)
    expect(page.locator(".turn .stopped-mark")).to_have_count(0)
    assert answer.inner_text().strip().endswith("keeps its rhythm")
