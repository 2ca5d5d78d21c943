"""The page shows how well an answer's sources support it: the real server (echo backend giving fixed
answers to known questions) over one small document, in headless Chromium."""

from __future__ import annotations

import json
from typing import Iterator

import httpx
import pytest

from assistant.answers.support import NO_ANSWER, NOT_IN_DOCUMENTS, support
from indexes.retrieval.hits import merge_texts
from tests.web.conftest import ask_in_new_chat, served
from tests.web.test_looks import axe_problems

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

LIGHTHOUSE = """# The harbour lighthouse

The harbour lighthouse was built in 1874 from granite quarried on the island.
Its lamp can be seen twenty nautical miles out on a clear night.
"""

SUPPORTED = "The harbour lighthouse was built in 1874 from granite quarried on the island."
UNSUPPORTED = "Its keeper's cat won the county fair prize in 1990."
MIXED = ("When was the harbour lighthouse built?", f"{SUPPORTED} [1] {UNSUPPORTED} [1]")
REPLACED = ("What colour is the keeper's boat?", "The keeper's boat is painted bright orange with a blue stripe. [1]")
ABSTAINED = ("Who owns the lighthouse today?", NOT_IN_DOCUMENTS["en"])
SILENT = ("Who lit the lighthouse lamp first?", "")  # the model ends without a word
QUOTED = ("What is the lighthouse made of?", "The lighthouse is made of granite [1].")  # less than its source says


@pytest.fixture(scope="module")  # this module's server: the `page` fixture (conftest) opens on it
def live_server(tmp_path_factory) -> Iterator[str]:
    """A server whose echo backend answers four known questions with fixed replies (one with nothing), over a collection
    holding one short document; unsupported answers are replaced."""
    with served(tmp_path_factory, "support-web", {"harbour": {"lighthouse.md": LIGHTHOUSE}}, ASSISTANT_BACKEND="echo",
                ASSISTANT_ECHO_REPLIES=json.dumps(dict([MIXED, REPLACED, ABSTAINED, SILENT, QUOTED])),
                ASSISTANT_GENERATION_REPLACE_UNSUPPORTED="on", ASSISTANT_GENERATION_QUOTE_SOURCES="on") as base:
        yield base


def open_page(page) -> None:
    page.goto("/")
    expect(page.locator("#collection")).to_be_enabled()
    page.select_option("#collection", "harbour")


def test_citations_sentences_and_the_supporting_span(page, live_server):
    open_page(page)
    turn = ask_in_new_chat(page, MIXED[0])
    answer = turn.locator(".answer-block > .answer")
    expect(turn.locator(".turn-error")).to_have_count(0)

    chips = answer.locator("a.citation")
    expect(chips).to_have_count(2)
    expect(chips.nth(0)).to_have_attribute("data-support", "supported")
    expect(chips.nth(0)).to_have_attribute("aria-label", "Source 1: Supported (about 100% of the claim is found in the source)")
    expect(chips.nth(1)).to_have_attribute("data-support", "weak")
    assert "Weakly or not supported" in chips.nth(1).get_attribute("aria-label")

    unsupported = answer.locator(".sentence.unsupported")
    expect(unsupported).to_have_count(1)
    assert unsupported.inner_text().startswith(UNSUPPORTED)
    flag = answer.locator(".claim-flag")
    expect(flag).to_have_count(1)
    assert flag.get_attribute("aria-label").startswith("This sentence is not supported by the source it cites")
    expect(answer.locator(".sentence:not(.unsupported)")).to_have_count(1)
    expect(turn.locator(".answer-check")).to_have_count(0)  # one claim is supported: no note on the whole answer

    card = turn.locator(".source-card").first
    expect(card).to_have_attribute("data-support", "supported")
    expect(card.locator(".source-support")).to_contain_text("Supported")
    expect(card.locator(".source-support .support-score")).to_have_text("about 100% of the claim is found in the source")

    chunk_id = card.get_attribute("data-chunk")
    context = httpx.get(f"{live_server}/api/chunks/{chunk_id}/context", timeout=10).json()
    text = next(c["text"] for c in context["chunks"] if c["target"])
    span = support(SUPPORTED, text)
    assert span.supported and 0 <= span.char_start < span.char_end
    expected = text[span.char_start:span.char_end]
    assert "built in 1874" in expected

    chips.nth(0).click()  # the citation opens its source's passage
    mark = page.locator("#preview mark.support-span")
    expect(mark).to_have_count(1)
    expect(mark).to_have_text(expected)
    expect(mark).to_be_in_viewport()
    for scheme in ("light", "dark"):  # the marks keep their contrast in both
        page.emulate_media(color_scheme=scheme)
        assert not axe_problems(page), scheme
    page.click("#preview-close")
    page.emulate_media(color_scheme="dark")
    assert not axe_problems(page), "the answer with its marks, dark"

    page.evaluate("localStorage.setItem('rag.lang', 'zh')")
    page.reload()  # the saved turn comes back with its sources' support, in Chinese
    restored = page.locator(".turn").last
    expect(restored.locator(".source-card").first.locator(".support-label")).to_have_text("有依据")
    expect(restored.locator(".source-card").first.locator(".support-score")).to_have_text("来源中约含该说法 100% 的内容")
    # the saved turn keeps its check: each citation and the unsupported sentence marked as before the reload
    restored_chips = restored.locator(".answer-block > .answer a.citation")
    expect(restored_chips).to_have_count(2)
    expect(restored_chips.nth(0)).to_have_attribute("data-support", "supported")
    expect(restored_chips.nth(1)).to_have_attribute("data-support", "weak")
    expect(restored.locator(".answer-block > .answer .sentence.unsupported")).to_have_count(1)


def test_a_span_over_merged_chunks_is_read_as_python_merged_them(page):
    """Adjacent chunks of one source are merged (their shared lines once): the span's offsets count in
    the merged text, code points as Python counts them (an emoji is one)."""
    first = "def first():\n    return 1\n\n# a shared tail line of the two chunks\n"
    second = "# a shared tail line of the two chunks\ndef second():\n    return 2 + 3  # 🚀 fast\n"
    third = "   \n\ndef third():\n    return 'x'\n"
    merged = merge_texts([first, second, third])
    start, end = merged.index("return 1"), merged.index("third()") + len("third")
    page.goto("/")
    shown = page.evaluate(
        """async ([chunks, span]) => {
             const { supportText } = await import("/static/sources.js");
             return supportText(chunks, span);
           }""",
        [[{"chunk_id": i, "text": t} for i, t in enumerate((first, second, third))],
         {"char_start": start, "char_end": end}],
    )
    assert shown == merged[start:end]
    assert shown.count("# a shared tail line") == 1 and "🚀" in shown and shown.endswith("def third")


def test_a_replaced_answer_shows_the_model_answer_on_request_an_abstained_one_says_so_and_an_empty_one_too(page):
    open_page(page)
    turn = ask_in_new_chat(page, REPLACED[0])
    expect(turn.locator(".answer-block > .answer")).to_have_text(NOT_IN_DOCUMENTS["en"])
    expect(turn.locator(".answer-check.replaced")).to_be_visible()
    # It cites nothing: its sources are the closest passages, with no verdict on them.
    expect(turn.locator(".sources-title")).to_have_text(["Closest passages, none cited"])
    expect(turn.locator(".source-card .source-support")).to_have_count(0)
    expect(turn.get_by_role("button", name="Show the model's answer anyway")).to_have_attribute("aria-expanded", "false")
    toggle = turn.locator(".show-model-answer")
    model = turn.locator(".model-answer")
    expect(model).to_be_hidden()
    toggle.click()
    expect(model).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(toggle).to_have_text("Hide the model's answer")
    expect(model.locator(".answer")).to_contain_text("bright orange with a blue stripe")
    expect(model.locator(".sentence.unsupported")).to_have_count(1)
    expect(model.locator("a.citation")).to_have_attribute("data-support", "weak")
    toggle.click()
    expect(model).to_be_hidden()

    turn = ask_in_new_chat(page, ABSTAINED[0])
    expect(turn.locator(".answer-check.abstained")).to_have_text("∅ The answer says the documents do not contain this.")
    expect(turn.locator(".show-model-answer")).to_have_count(0)

    # An empty answer is the sentence that says so, with nothing to show "anyway".
    turn = ask_in_new_chat(page, SILENT[0])
    expect(turn.locator(".answer-block > .answer")).to_have_text(NO_ANSWER["en"])
    expect(turn.locator(".answer-check")).to_have_count(0)
    expect(turn.locator(".show-model-answer")).to_have_count(0)


def test_a_replaced_answer_and_the_verdicts_of_a_checked_one_survive_a_reload(page, live_server):
    open_page(page)
    turn = ask_in_new_chat(page, REPLACED[0])
    expect(turn.locator(".show-model-answer")).to_be_visible()
    conversation_id = int(page.evaluate("localStorage.getItem('rag.conversation')"))
    stored = httpx.get(f"{live_server}/api/conversations/{conversation_id}", timeout=10).json()["turns"][-1]
    assert stored["check"]["replaced"] is True and "bright orange" in stored["model_answer"]
    page.reload()
    turn = page.locator(".turn").last
    expect(turn.locator(".answer-block > .answer")).to_have_text(NOT_IN_DOCUMENTS["en"])
    expect(turn.locator(".answer-check.replaced")).to_be_visible()
    expect(turn.locator(".sources-title")).to_have_text(["Closest passages, none cited"])
    toggle = turn.get_by_role("button", name="Show the model's answer anyway")
    toggle.click()
    model = turn.locator(".model-answer")
    expect(model.locator(".answer")).to_contain_text("bright orange with a blue stripe")
    expect(model.locator(".sentence.unsupported")).to_have_count(1)

    turn = ask_in_new_chat(page, MIXED[0])
    expect(turn.locator(".answer-block > .answer a.citation")).to_have_count(2)
    page.reload()
    turn = page.locator(".turn").last
    chips = turn.locator(".answer-block > .answer a.citation")
    expect(chips.nth(0)).to_have_attribute("data-support", "supported")
    expect(chips.nth(1)).to_have_attribute("data-support", "weak")
    expect(turn.locator(".answer-block > .answer .sentence.unsupported")).to_have_count(1)


def test_the_sources_words_are_quoted_under_the_answer_and_after_a_reload(page):
    open_page(page)
    turn = ask_in_new_chat(page, QUOTED[0])
    answer = turn.locator(".answer-block > .answer")
    quote = answer.locator("blockquote")
    expect(quote).to_have_text(f"“{SUPPORTED}” [1]")
    expect(answer).to_contain_text("From the sources:")
    expect(quote.locator("a.citation")).to_have_count(1)  # the quote's marker opens its source like the answer's
    expect(answer.locator(".sentence")).to_have_count(1)  # the answer's sentence is checked, the quote is not a claim
    page.reload()
    expect(page.locator(".turn").last.locator(".answer-block > .answer blockquote")).to_have_text(f"“{SUPPORTED}” [1]")
