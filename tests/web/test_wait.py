"""The wait for an answer, in the page, against the real in-process llama.cpp (the packaged Gemma-3-270M,
reading the prompt 16 tokens at a time): "Reading the sources… N %" as the model reads, the seconds gone
beside it (hidden from screen readers), and from the second question on, the usual wait the last answers
took; screenshots of the wait at 1440 and 390 pixels wide, with no serious or critical axe-core violation."""

from __future__ import annotations

import re

import pytest

from tests.web.conftest import DOCS, artifacts_dir, assistant_command, base_env, checked_page, ingest, running_server, write_folder
from tests.web.test_looks import axe_problems

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ANSWER_TIMEOUT_MS = 600_000  # a shared 2-core machine
# Every text the state line of an answer shows, and whether its clock was hidden from screen readers.
RECORD = """() => {
  window.waitTexts = [];
  window.waitObserver?.disconnect();
  window.waitObserver = new MutationObserver(() => {
    for (const state of document.querySelectorAll('.answer-state')) {
      const clock = state.querySelector('.wait-clock');
      window.waitTexts.push({ text: state.textContent, state: state.dataset.state,
        clockHidden: clock ? clock.getAttribute('aria-hidden') : null, role: state.getAttribute('role') });
    }
  });
  window.waitObserver.observe(document.querySelector('#chat'), { subtree: true, childList: true, characterData: true, attributes: true });
}"""


@pytest.fixture(scope="module")
def reading_web(tmp_path_factory):
    root = tmp_path_factory.mktemp("web-wait")
    data = root / "data"
    env = base_env(ASSISTANT_BACKEND="llamacpp", ASSISTANT_LLAMACPP_PACKAGED_MODEL="gemma-3-270m",
                   ASSISTANT_LLAMACPP_N_THREADS="2", ASSISTANT_LLAMACPP_N_CTX="2048", ASSISTANT_LLAMACPP_N_BATCH="16",
                   ASSISTANT_LLAMACPP_MAX_TOKENS="24")
    ingest(assistant_command(), write_folder(root / "docs", DOCS), "docs", data, env)
    with running_server(root, data, env) as base:
        yield base


def ask_and_record(page, question: str, turns: int, shot: str | None = None, shots=None,
                   problems: list[str] | None = None) -> list[dict]:
    """Ask the conversation's `turns`-th question; what its state line showed until the answer ended (with
    `shot`, a screenshot while the sources are read, and axe-core's serious findings then added to `problems`)."""
    page.evaluate(RECORD)
    page.fill("#question", question)
    page.press("#question", "Enter")
    if shot:
        expect(page.locator(".answer-state").last).to_contain_text(re.compile(r"\d+ %"), timeout=ANSWER_TIMEOUT_MS)
        page.screenshot(path=str(shots / shot))
        if problems is not None:
            problems.extend(f"{shot}: {line}" for line in axe_problems(page))
    expect(page.locator(".turn-actions")).to_have_count(turns, timeout=ANSWER_TIMEOUT_MS)
    return page.evaluate("window.waitTexts")


def test_the_page_shows_the_reading_the_seconds_and_the_usual_wait(browser, reading_web, tmp_path_factory):
    shots = artifacts_dir(tmp_path_factory)
    problems: list[str] = []
    for width, height in ((1440, 900), (390, 844)):
        with checked_page(browser, reading_web, viewport={"width": width, "height": height}) as page:
            page.goto("/")
            expect(page.locator("#collection")).to_be_enabled()
            seen = ask_and_record(page, "How often should the starter be fed?", 1, f"wait-reading-{width}.png", shots,
                                  problems)
            texts = [s["text"] for s in seen]
            shares = [int(m[1]) for t in texts if (m := re.search(r"Reading the sources… (\d+) %", t))]
            assert shares and shares == sorted(shares) and len(set(shares)) > 1, texts
            assert all(s["role"] == "status" for s in seen)
            assert not any("usually" in t for t in texts), "no answer yet to learn from"
            kept = page.evaluate("JSON.parse(localStorage.getItem('rag.waits'))")
            assert len(kept) == 1 and kept[0] > 0
            if kept[0] >= 1500:  # the seconds gone show from the first whole second on (a quiet machine answers sooner)
                assert any(re.search(r" · \d+ s$", t) for t in texts), ("the seconds gone", kept, texts)
            assert all(s["clockHidden"] == "true" for s in seen if s["clockHidden"] is not None)

            seen = ask_and_record(page, "How often should the chain be lubricated?", 2)
            usual = max(1, int(kept[0] / 1000 + 0.5))  # as the page rounds (Math.round)
            assert any(f"(usually about {usual} s)" in s["text"] for s in seen), [s["text"] for s in seen]
            assert len(page.evaluate("JSON.parse(localStorage.getItem('rag.waits'))")) == 2
    assert not problems, "serious or critical accessibility violations while waiting:\n" + "\n".join(problems)


def test_the_seconds_gone_tick_beside_the_state_whatever_the_machine(browser, reading_web):
    """The page's clock made fake: a wait of 2.5 s shows "· 2 s" beside its words, hidden from screen readers
    (the real answers above may come before the first whole second on a quiet machine)."""
    with checked_page(browser, reading_web) as page:
        page.clock.install()
        page.goto("/")
        expect(page.locator("#collection")).to_be_enabled()
        page.evaluate("""async () => {
          const { Wait } = await import('/static/wait.js');
          const state = document.createElement('p');
          document.querySelector('#chat').append(state);
          window.testState = state;
          new Wait(state).progress({ done: 40, total: 100 });
        }""")
        page.clock.run_for(2500)
        assert page.evaluate("window.testState.textContent") == "Reading the sources… 40 % · 2 s"
        assert page.evaluate("window.testState.querySelector('.wait-clock').getAttribute('aria-hidden')") == "true"
