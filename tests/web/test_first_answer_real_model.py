"""A new user's first minutes, timed, with what a new user gets: a server that starts with no data and the
default packaged model in-process (Qwen2.5-Coder-1.5B-Instruct on the CPU, every setting as shipped), an
ingestion worker beside it, headless Chromium. Open the page, drop three files, ask: the sources come, the
wait says how much of them the model has read, the first words, then the whole answer with its sources.
Each step's time from opening the page is written as an artifact (first-answer-real-model.json) and
printed; screenshots of the wait and the answer at 390 and 1440 px; axe-core finds no serious or critical
violation. Slow by nature: the model reads the prompt on the machine's own cores."""

from __future__ import annotations

import json
import re
import time
from typing import Iterator

import pytest

from tests.web.conftest import DOCS, artifacts_dir, checked_page, served
from tests.web.test_first_visit import DROP, INGEST_TIMEOUT_MS, shoot
from tests.web.test_wait import RECORD

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ANSWER_TIMEOUT_MS = 600_000  # the whole answer of a 1.5B model on a shared 2-core machine
QUESTION = "How often should I feed the starter?"


@pytest.fixture(scope="module")
def default_model_server(tmp_path_factory) -> Iterator[str]:
    """A real server and worker over an empty data folder, answering with the default packaged model."""
    with served(tmp_path_factory, "first-real", {}, worker=True, ASSISTANT_BACKEND="llamacpp") as base:
        yield base


def test_a_new_user_drops_three_files_and_the_default_model_answers_with_sources(
        browser, default_model_server, tmp_path_factory):
    out = artifacts_dir(tmp_path_factory)
    problems: dict[str, list[str]] = {}
    times: dict[str, float] = {}
    with checked_page(browser, default_model_server, viewport={"width": 1440, "height": 900}, locale="en-GB") as page:
        started = time.monotonic()

        def mark(step: str) -> None:
            times[step] = round(time.monotonic() - started, 1)

        page.goto("/")
        expect(page.locator("#start-drop")).to_be_visible()
        expect(page.locator("#ask")).to_be_disabled()
        mark("page_open_s")
        page.evaluate(DROP, ["#start-drop", list(DOCS.items())])
        expect(page.locator("#start-progress")).to_contain_text("is ready", timeout=INGEST_TIMEOUT_MS)
        expect(page.locator("#ask")).to_be_enabled()
        mark("three_files_ready_s")

        page.evaluate(RECORD)
        page.fill("#question", QUESTION)
        page.press("#question", "Enter")
        turn = page.locator(".turn").last
        expect(turn.locator(".source-card").first).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
        mark("sources_shown_s")
        expect(turn.locator(".answer-state")).to_contain_text(re.compile(r"Reading the sources… \d+ %"),
                                                              timeout=ANSWER_TIMEOUT_MS)
        shoot(page, out, problems, "real-model-wait")
        answer = turn.locator(".answer-block > .answer")
        expect(answer).not_to_have_text("", timeout=ANSWER_TIMEOUT_MS)
        mark("first_words_s")
        expect(answer).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)
        expect(turn.locator(".timings")).to_be_visible()
        mark("answer_with_sources_s")

        # what the wait said while the model read its prompt: shares that only grow
        said = [s["text"] for s in page.evaluate("window.waitTexts")]
        shares = [int(m[1]) for t in said if (m := re.search(r"Reading the sources… (\d+) %", t))]
        assert len(set(shares)) > 1 and shares == sorted(shares), said  # the prompt is longer than one batch
        # the answer is the documents' and cites the file that says it
        expect(answer).to_contain_text(re.compile(r"12|twelve", re.IGNORECASE))
        cited = turn.locator(".source-card.cited", has_text="sourdough.md")
        expect(cited.first).to_be_visible()
        expect(page.locator("#answer-live")).to_have_text("The answer is complete.")
        shoot(page, out, problems, "real-model-answer")

    said_once = list(dict.fromkeys(re.sub(r" · \d+ s$", "", t) for t in said))  # the words, not each second
    (out / "first-answer-real-model.json").write_text(json.dumps(
        {"question": QUESTION, **times, "wait_said": said_once}, ensure_ascii=False, indent=1))
    print("empty page -> 3 files dropped -> first answer with sources (default model):", times)
    assert not problems, "serious or critical accessibility violations:\n" + "\n".join(
        f"{where}: {line}" for where, lines in problems.items() for line in lines)
