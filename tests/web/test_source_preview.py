"""Source cards and the passage preview, in headless Chromium against the real server (echo backend)
over a small Markdown guide (overlapping chunks, a table) and a Python file."""

from __future__ import annotations

import json
import re
from typing import Iterator

import httpx
import pytest

from tests.web.conftest import ask_in_new_chat, served

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

STEPS = [
    f"Step {i}: the {word} brewing step keeps the leaves of green tea moving in the pot for {i + 2} breaths."
    for i, word in enumerate(["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
                              "ninth", "tenth", "eleventh", "twelfth"])
]
GUIDE = "\n".join([
    "# Tea guide", "", "## Brewing", "", *STEPS, "",
    "## Water temperatures", "",
    "| Tea | Water | Minutes |", "|-----|-------|---------|",
    "| Green | 80 C | 2 |", "| Black | 95 C | 4 |", "| Oolong | 90 C | 3 |", "",
])
KETTLE = "\n".join([
    '"""A kettle for the tea guide."""', "", "",
    *[f"def helper_{i}(x):\n    \"\"\"Helper {i} adds {i}.\"\"\"\n    return x + {i}\n\n" for i in range(12)],
    "def boil_water(litres):",
    '    """Boil the water for the teapot until the kettle whistles."""',
    "    temperature = 20",
    "    while temperature < 100:",
    "        temperature += 5 * litres",
    "    return temperature", "",
])

NOTES = """# Kettle notes

The kettle descales with vinegar once a month. <img src="http://evil.example/a.png" onerror="alert(1)">

[a descaling link](javascript:alert(2)) and <script>alert(3)</script> stay words.

![a picture](http://evil.example/b.png)
"""

Q_TABLE = "Which water temperature does oolong tea need in minutes?"
Q_STEPS = "How do the brewing steps keep the leaves of green tea moving in the pot?"
Q_CODE = "How does boil_water make the kettle whistle for the teapot?"
Q_NOTES = "How often does the kettle descale with vinegar?"
Q_UNCITED = ("Should I rinse the teapot first?", "Yes, twice.")


@pytest.fixture(scope="module")  # this module's server: the `page` fixture (conftest) opens on it
def live_server(tmp_path_factory) -> Iterator[str]:
    """A server whose guide is cut into small overlapping chunks; the echo backend cites source 1,
    except for one question whose fixed reply cites nothing."""
    with served(tmp_path_factory, "preview-web", {"tea": {"guide.md": GUIDE, "kettle.py": KETTLE, "notes.md": NOTES}},
                ASSISTANT_BACKEND="echo", ASSISTANT_ECHO_REPLIES=json.dumps(dict([Q_UNCITED])),
                ASSISTANT_INGEST_CHUNK_TOKENS="80", ASSISTANT_INGEST_OVERLAP_TOKENS="32") as base:
        yield base


def ask(page, question: str):
    """Ask in a new conversation over the tea collection; the turn once its answer is complete."""
    page.goto("/")
    expect(page.locator("#collection")).to_be_enabled()
    page.select_option("#collection", "tea")
    return ask_in_new_chat(page, question)


def card_with(turn, text: str):
    """The first source card whose text holds text."""
    card = turn.locator(".source-card", has_text=text).first
    expect(card).to_be_visible()
    return card


def last_sources(base: str) -> list[dict]:
    """The sources of the latest answer, as the server saved them."""
    [conv] = httpx.get(f"{base}/api/conversations", params={"limit": 1}, timeout=10).json()["conversations"]
    return httpx.get(f"{base}/api/conversations/{conv['id']}", timeout=10).json()["turns"][-1]["sources"]


def context_of(base: str, chunk_ids: list[str]) -> dict:
    first, *others = chunk_ids
    params = {"chunks": ",".join(others)} if others else {}
    return httpx.get(f"{base}/api/chunks/{first}/context", params=params, timeout=10).json()


def test_a_markdown_table_in_a_source_renders_as_a_table(page):
    turn = ask(page, Q_TABLE)
    card_with(turn, "Water temperatures").click()
    table = page.locator("#preview .passage-chunk.target table")
    expect(table).to_be_visible()
    expect(table.locator("th")).to_have_text(["Tea", "Water", "Minutes"])
    expect(table.locator("tbody tr")).to_have_count(3)
    expect(table.locator("tbody tr").nth(2).locator("td")).to_have_text(["Oolong", "90 C", "3"])
    expect(page.locator("#preview h2", has_text="Water temperatures")).to_be_visible()  # the heading, rendered
    expect(page.locator("#preview-body")).not_to_contain_text("| Tea |")


def test_a_markdown_source_goes_through_the_answers_sanitizer_and_fetches_nothing(page, live_server):
    dialogs: list[str] = []
    foreign: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: foreign.append(r.url) if not r.url.startswith(live_server) else None)
    turn = ask(page, Q_NOTES)
    card_with(turn, "notes.md").click()
    body = page.locator("#preview-body")
    expect(body.locator(".passage.markdown .passage-chunk.target")).to_be_visible()
    expect(body).to_contain_text('<img src="http://evil.example/a.png" onerror="alert(1)">')  # raw HTML as text
    expect(body).to_contain_text("<script>alert(3)</script> stay words.")
    expect(body).to_contain_text("![a picture](http://evil.example/b.png)")
    assert body.locator("img, script, svg, [onerror], [style]").count() == 0
    hrefs = body.locator("a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert all(h is None or h.startswith(("http:", "https:")) for h in hrefs), hrefs
    page.wait_for_timeout(300)  # time is the subject: a fetch or a script would have started by now
    assert dialogs == [] and foreign == [], (dialogs, foreign)


def open_merged_source(page, base: str) -> tuple[list[str], dict[str, str]]:
    """Ask about the guide's steps and open a source made of adjacent chunks: its chunk ids, and the
    text of every chunk of its passage by id."""
    turn = ask(page, Q_STEPS)
    source = next(s for s in last_sources(base) if len(s["chunk_ids"]) > 1)  # adjacent chunks merged
    chunk_ids = [str(c) for c in source["chunk_ids"]]
    ctx = context_of(base, chunk_ids)
    texts = {str(c["chunk_id"]): c["text"] for c in ctx["chunks"]}
    turn.locator(f".source-card[data-n='{source['n']}']").click()
    expect(page.locator("#preview-body .passage-chunk.target").first).to_be_visible()
    return chunk_ids, texts


def test_overlapping_chunks_are_shown_once(page, live_server):
    _, texts = open_merged_source(page, live_server)
    assert [s for s in STEPS if sum(s in t for t in texts.values()) > 1], "the guide's chunks share sentences"
    shown = page.locator("#preview-body").inner_text()
    for step in STEPS:
        assert shown.count(step) <= 1, f"shown twice: {step}"


def test_every_merged_chunk_of_a_source_is_highlighted_and_in_view(page, live_server):
    chunk_ids, texts = open_merged_source(page, live_server)
    target = page.locator("#preview-body .passage-chunk.target")
    highlighted = " ".join(target.all_inner_texts())
    for cid in chunk_ids:
        for step in (s for s in STEPS if s in texts[cid]):
            assert step in highlighted, f"chunk {cid} is not highlighted: {step}"
    expect(target.first).to_be_in_viewport()  # scrolled to the start of the cited part


def test_the_original_opens_at_the_cited_lines(page, live_server):
    turn = ask(page, Q_CODE)
    card = card_with(turn, "kettle.py")
    card.click()
    expect(page.locator("#preview .passage.code .passage-chunk.target .code-line").first).to_be_visible()
    link = page.locator("#preview-file")
    href = link.get_attribute("href")
    found = re.fullmatch(r"/api/documents/\d+/file\?lines=(\d+)-(\d+)#L(\d+)", href)
    assert found, href
    first, last, anchor = map(int, found.groups())
    assert first == anchor and first <= last
    target_lines = page.locator("#preview .passage-chunk.target .code-line").evaluate_all(
        "rows => rows.map(r => Number(r.dataset.line))")
    assert target_lines == list(range(first, last + 1))

    with page.context.expect_page() as opened:
        link.click()
    original = opened.value
    original.wait_for_load_state()
    kettle = KETTLE.split("\n")
    marked = original.locator("mark")
    expect(marked).to_have_count(last - first + 1)
    assert [m[8:] for m in marked.all_inner_texts()] == kettle[first - 1:last]
    expect(original.locator(f"#L{first}")).to_be_in_viewport()
    expect(original.locator("#L1")).not_to_be_in_viewport()  # not the top of the file
    original.close()


def test_cards_say_where_and_why_without_raw_scores(page):
    turn = ask(page, Q_STEPS)
    cards = turn.locator(".source-card")
    expect(cards.first).to_be_visible()
    for text in cards.all_inner_texts():
        assert not re.search(r"\d\.\d{3}", text), f"a raw score on a card: {text!r}"
    for card in cards.all():
        expect(card.locator(".source-why")).to_have_text(re.compile(r"^Found by (words of your question|similar meaning)"))
        expect(card.locator(".source-path")).to_contain_text(re.compile(r"^\w+\.(md|py) · lines? \d+"))
    guide = card_with(turn, "Brewing")
    expect(guide.locator(".source-heading")).to_have_text("Tea guide › Brewing")
    snippet = guide.locator(".source-snippet").inner_text()
    assert snippet.lstrip("…").startswith("Step "), f"the snippet starts with its headings: {snippet!r}"


def test_an_answer_citing_nothing_is_flagged_in_both_languages(page):
    """"Yes, twice." states nothing the check counts as a claim, yet it cites nothing: it is flagged."""
    turn = ask(page, Q_UNCITED[0])
    expect(turn.locator(".answer-block > .answer")).to_have_text(Q_UNCITED[1])
    expect(turn.locator(".source-card").first).to_be_visible()
    note = turn.locator(".answer-check.uncited")
    expect(note).to_have_text("⚠ This answer cites no source; check it against the sources below.")
    expect(note).to_have_attribute("role", "note")
    page.evaluate("localStorage.setItem('rag.lang', 'zh')")
    page.reload()
    expect(page.locator(".turn")).to_have_count(1)  # the conversation comes back first
    turn = ask_in_new_chat(page, Q_UNCITED[0])
    expect(turn.locator(".answer-check.uncited")).to_have_text("⚠ 这个回答没有引用任何来源；请对照下方的来源核实。")
