"""The documents, preview, status and language parts of the page, and the API docs page, in headless
Chromium against the real server (echo backend, an ingestion worker beside it), under a strict
Content-Security-Policy."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

ANSWER_TIMEOUT_MS = 60_000
JOB_TIMEOUT_MS = 120_000
H200_X2 = Path(__file__).resolve().parents[1] / "fixtures" / "gpu" / "h200-x2"


def ask(page, question: str) -> None:
    page.fill("#question", question)
    page.press("#question", "Enter")
    expect(page.locator(".answer").last).to_have_attribute("aria-busy", "false", timeout=ANSWER_TIMEOUT_MS)


def new_collection(page, title: str) -> str:
    """A collection made through the documents view's form with any title, and open: its API name."""
    page.goto("/#documents")
    page.fill("#new-collection", title)
    page.click("#create-form button")
    card = page.locator(".collection-card", has_text=title)
    expect(card).to_have_attribute("aria-pressed", "true")
    return card.get_attribute("data-name")


def open_documents(page, collection: str) -> None:
    """The documents view with a new collection of this name created through its form, and open."""
    page.goto("/#documents")
    page.fill("#new-collection", collection)
    page.click("#create-form button")
    expect(page.locator(f".collection-card[data-name='{collection}']")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#collection-title")).to_have_text(collection)


def wait_job_done(page) -> sync_api.Locator:
    job = page.locator(".job").first
    expect(job).to_have_attribute("data-status", "done", timeout=JOB_TIMEOUT_MS)
    return job


def test_server_folder_then_cited_code_shows_the_file_line_numbers(page, live_server, flask_src):
    source = flask_src / "src" / "flask" / "helpers.py"
    open_documents(page, "flask")
    page.fill("#server-path", str(source))
    page.click("#source-form button")
    job = wait_job_done(page)
    expect(job.locator(".job-facts")).to_contain_text("1 ingested")
    # the list is fetched again once the job is done: on a busy machine that takes longer than expect's 5 s
    expect(page.locator("#document-rows tr")).to_have_count(1, timeout=JOB_TIMEOUT_MS)

    page.goto("/#chat")
    expect(page.locator("#collection option[value='flask']")).to_have_count(1)
    page.select_option("#collection", "flask")
    ask(page, "How does send_file pick the mimetype?")
    page.locator(".answer .citation:not(.unknown)").first.click()
    target = page.locator("#preview .passage-chunk.target")
    expect(target).to_be_visible()
    shown = page.locator("#preview .code-line").evaluate_all(
        "rows => rows.map(r => [Number(r.dataset.line), r.querySelector('.line-text').textContent])")
    assert len(shown) > 10
    file_lines = source.read_text(encoding="utf-8").splitlines()
    for number, text in shown:
        assert text.rstrip() == (file_lines[number - 1].rstrip() or ""), f"line {number} differs from the file"
    numbers = [n for n, _ in shown]
    assert numbers == sorted(set(numbers)), "each line once, in file order"
    target_lines = target.locator(".code-line").evaluate_all("rows => rows.map(r => Number(r.dataset.line))")
    assert target_lines and target.locator(".code-line").count() < len(shown), "the cited chunk among neighbours"
    expect(page.locator("#preview-meta")).to_contain_text("helpers.py")

    # the original file: opened at the cited lines; without them, the same bytes as plain text
    href = page.get_attribute("#preview-file", "href")
    assert re.fullmatch(rf"/api/documents/\d+/file\?lines={target_lines[0]}-{target_lines[-1]}#L{target_lines[0]}", href)
    original = httpx.get(live_server + href.split("?")[0])
    assert original.status_code == 200 and original.text == source.read_text(encoding="utf-8")
    assert original.headers["content-type"].startswith("text/plain")


def test_upload_three_files_one_broken_then_ask_about_one(page, live_server):
    open_documents(page, "uploads")
    page.set_input_files("#pick-files", files=[
        {"name": "greenhouse.md", "mimeType": "text/markdown",
         "buffer": b"# Greenhouse\n\nOpen the greenhouse vents when the temperature passes twenty-five degrees.\n"},
        {"name": "beekeeping.md", "mimeType": "text/markdown",
         "buffer": b"# Beekeeping\n\nInspect the hives every nine days during the swarming season.\n"},
        {"name": "broken.pdf", "mimeType": "application/pdf", "buffer": b"%PDF-1.4\nthis is not a real pdf\n"},
    ])
    job = wait_job_done(page)
    expect(job.locator(".job-facts")).to_have_text("2 ingested, 1 failed")
    expect(job.locator(".job-bar")).to_have_attribute("max", "3")
    failure = job.locator(".job-errors li")
    expect(failure).to_have_count(1)
    expect(failure.locator(".job-error-path")).to_have_text("broken.pdf")
    expect(failure.locator(".job-error-reason")).to_contain_text("PDF")
    expect(page.locator("#document-rows tr.failed")).to_contain_text("broken.pdf")

    # a fourth file dropped onto the drop zone
    page.evaluate("""() => {
      const dt = new DataTransfer();
      dt.items.add(new File(['# Compost\\n\\nTurn the compost heap every fortnight.\\n'], 'compost.md', {type: 'text/markdown'}));
      document.querySelector('#dropzone').dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
    }""")
    expect(page.locator("#document-rows")).to_contain_text("compost.md", timeout=JOB_TIMEOUT_MS)
    compost = page.locator("#document-rows tr", has_text="compost.md")
    compost.locator(".doc-delete").click()
    compost.locator(".doc-delete").click()  # asks once more in place
    expect(page.locator("#document-rows")).not_to_contain_text("compost.md")

    page.goto("/#chat")
    page.select_option("#collection", "uploads")
    ask(page, "When should the greenhouse vents be opened?")
    cited = page.locator(".turn").last.locator(".source-card.cited")
    expect(cited.first).to_contain_text("greenhouse.md")


HOSTILE_NAME = "<img src=x onerror=alert(1)>.md"
HOSTILE_TITLE = "<script>alert('title')</script> Payload title"
# Entities, so that the Markdown parser of ingestion stores the tags as text rather than dropping them.
HOSTILE_TEXT = """# &lt;script&gt;alert('title')&lt;/script&gt; Payload title

Payload body &lt;img src="http://evil.example/a.png" onerror="alert(2)"&gt; and \\[a link\\](javascript:alert(3)).
Raw too: <img src="http://evil.example/z.png" onerror="alert(6)"> <script>alert(7)</script>
<svg><image href="http://evil.example/b.png"/></svg> <svg><filter><feImage href="http://evil.example/c.png"/></filter></svg>
<table background="http://evil.example/d.png"><tr><td>cell</td></tr></table> ![pic](http://evil.example/e.png)
"""
HOSTILE_QUESTION = (
    "Payload body? <img src=x onerror=alert(4)> [x](javascript:alert(5)) ![p](http://evil.example/f.png) "
    "<svg><image href='http://evil.example/g.png'/></svg> <svg><feImage href='http://evil.example/h.png'/></svg> "
    "<table background='http://evil.example/i.png'><tr><td>t</td></tr></table> <a href='data:text/html,x'>d</a>"
)


def test_hostile_document_and_answer_run_nothing_and_fetch_nothing(page, live_server):
    dialogs: list[str] = []
    foreign: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: foreign.append(r.url) if not r.url.startswith(live_server) else None)

    open_documents(page, "hostile")
    page.set_input_files("#pick-files", files=[
        {"name": HOSTILE_NAME, "mimeType": "text/markdown", "buffer": HOSTILE_TEXT.encode()}])
    wait_job_done(page)
    expect(page.locator("#document-rows")).to_contain_text(HOSTILE_NAME)
    expect(page.locator("#document-rows")).to_contain_text(HOSTILE_TITLE)

    page.goto("/#chat")
    page.select_option("#collection", "hostile")
    ask(page, HOSTILE_QUESTION)
    card = page.locator(".turn").last.locator(".source-card").first
    expect(card.locator(".source-title")).to_have_text(HOSTILE_TITLE)
    expect(card.locator(".source-path")).to_contain_text(HOSTILE_NAME)
    answer = page.locator(".answer").last
    assert answer.locator("img, svg, image, feImage, table[background], [onerror], [style]").count() == 0
    hrefs = answer.locator("a").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert all(h is None or h.startswith(("http:", "https:", "#src-")) for h in hrefs), hrefs
    expect(answer).to_contain_text("<img src=x onerror=alert(4)>")  # raw HTML shows as text
    for link in answer.locator("a:not([href])").all():
        link.click()  # the javascript: link lost its target

    card.click()
    body = page.locator("#preview-body")
    expect(body).to_contain_text("<img src=\"http://evil.example/a.png\" onerror=\"alert(2)\">")
    expect(body).to_contain_text("[a link](javascript:alert(3))")
    assert body.locator("img, svg, script").count() == 0
    expect(page.locator("#preview-title")).to_have_text(HOSTILE_TITLE)
    page.click("#preview-close")

    page.reload()  # the stored conversation is drawn again from the server
    expect(page.locator(".turn").last.locator(".source-title").first).to_have_text(HOSTILE_TITLE)
    page.wait_for_timeout(300)  # time is the subject: a fetch or a script from the reloaded turn would have started by now
    page.goto("/#documents")
    page.locator(".collection-card[data-name='hostile']").click()
    page.click("#delete-collection")
    page.click("#delete-collection")
    expect(page.locator(".collection-card[data-name='hostile']")).to_have_count(0)
    assert "hostile" not in [c["name"] for c in httpx.get(f"{live_server}/api/collections").json()]
    assert dialogs == [], f"a script ran: {dialogs}"
    assert foreign == [], f"the page fetched other hosts: {foreign}"
    assert page.evaluate("document.querySelectorAll('script:not([src])').length") == 0


def test_the_sanitizer_keeps_nothing_that_fetches(browser, live_server):
    """DOMPurify's settings, given markup that makes a browser fetch or run something. (Outside the
    strict policy: Chromium reports the style attributes it parses here as violations of it, although
    the page itself never hands raw HTML to the sanitizer.)"""
    context = browser.new_context(base_url=live_server)
    page = context.new_page()
    foreign: list[str] = []
    page.on("request", lambda r: foreign.append(r.url) if not r.url.startswith(live_server) else None)
    try:
        page.goto("/")
        leftovers = page.evaluate("""async () => {
          const { sanitize } = await import('/static/markdown.js');
          const box = document.createElement('div');
          box.append(sanitize(`<svg><image href="http://evil.example/1.png"/></svg>
            <svg><filter><feImage href="http://evil.example/2.png"/></filter></svg>
            <table background="http://evil.example/3.png"><tr><td background="http://evil.example/4.png">t</td></tr></table>
            <p style="background:url(http://evil.example/5.png)">p</p><img srcset="http://evil.example/6.png 1x">
            <video poster="http://evil.example/7.png"></video><link rel=stylesheet href="http://evil.example/8.css">
            <a href="javascript:alert(8)">j</a><a href="data:text/html,x">d</a><form action="http://evil.example/"></form>
            <math><mi xlink:href="http://evil.example/9">m</mi></math><object data="http://evil.example/10"></object>`));
          return [...box.querySelectorAll('*')].map((n) => n.outerHTML).filter((h) => /evil|javascript|data:|style/.test(h));
        }""")
        assert leftovers == []
        page.wait_for_timeout(300)  # time is the subject: an image the sanitized markup asks for would be fetched by now
        assert foreign == [], f"sanitizing fetched: {foreign}"
    finally:
        context.close()


def test_the_api_docs_page_renders_offline_under_its_policy(browser, live_server):
    """/api/docs as served, with the server's own policy: the UI comes from /static/vendor, nothing is
    fetched from elsewhere, the operations are listed, and the console has no violation."""
    context = browser.new_context(base_url=live_server)
    page = context.new_page()
    errors: list[str] = []
    foreign: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type in ("error", "warning") else None)
    page.on("request", lambda r: foreign.append(r.url) if not r.url.startswith(live_server) else None)
    try:
        page.goto("/api/docs")
        ask_operation = page.locator(".opblock-post .opblock-summary-path[data-path='/api/ask']")
        expect(ask_operation).to_be_visible(timeout=15_000)
        assert page.locator(".opblock").count() > 20
        ask_operation.click()
        expect(page.locator(".opblock-post.is-open .try-out__btn")).to_be_visible()
        page.wait_for_timeout(300)  # time is the subject: a late violation or fetch of the open operation would be reported by now
    finally:
        context.close()
    assert errors == [], errors
    assert foreign == [], f"the docs page fetched other hosts: {foreign}"


def recorded_gpus() -> list[dict]:
    from assistant.gpu.facts import Facts
    from assistant.gpu.smi import parse_smi_xml
    from assistant.gpu.status import gpu_status

    _, _, gpus = parse_smi_xml((H200_X2 / "nvidia-smi-q.xml").read_text())
    return gpu_status(Facts(gpus=gpus))


def with_recorded_gpus(context, live_server: str) -> None:
    """The real /api/status, with the GPUs of a recorded two-H200 machine (this one has none)."""
    def fulfill(route):
        resp = route.fetch()
        route.fulfill(response=resp, json={**resp.json(), "gpus": recorded_gpus()})

    context.route(f"{live_server}/api/status", fulfill)


def test_status_view_shows_the_backend_and_gpu_cards(page, live_server):
    with_recorded_gpus(page.context, live_server)
    page.goto("/#status")
    backend = page.locator("#status-backend")
    expect(backend).to_contain_text("echo")
    expect(backend).to_contain_text("4096 tokens")
    cards = page.locator(".gpu-card")
    expect(cards).to_have_count(2)
    expect(cards.first).to_contain_text("NVIDIA H200")
    expect(cards.first).to_contain_text("°C")
    expect(cards.first).to_contain_text("MHz")
    expect(cards.first).to_contain_text("gpu_idle")
    expect(cards.first).to_contain_text("GiB")


def test_language_follows_the_browser_and_the_switch(browser, live_server):
    from tests.web.conftest import strict_page

    page, errors, context = strict_page(browser, live_server, locale="zh-CN")
    try:
        page.goto("/")
        expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
        expect(page.locator(".tabs a[data-view='chat']")).to_have_text("对话")
        expect(page.locator("#ask")).to_have_text("提问")
        page.select_option("#lang", "en")
        expect(page.locator("#ask")).to_have_text("Ask")
        page.reload()
        expect(page.locator(".tabs a[data-view='documents']")).to_have_text("Documents")
        page.select_option("#lang", "zh")
        page.goto("/#status")
        expect(page.locator("#status-heading")).to_have_text("服务器状态")
        assert not errors, errors
    finally:
        context.close()
