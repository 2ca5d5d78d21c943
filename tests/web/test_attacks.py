"""What another site can make the user's browser do to the server on 127.0.0.1, in real Chromium: a page
on another origin posts JSON as text/plain and a multipart upload (simple requests, no preflight), and
a rebinding name that resolves to 127.0.0.1 reads the API. All refused; nothing is written."""

from __future__ import annotations

import http.server
import threading

import httpx
import pytest

from evals.local_server import free_port
from tests.web.conftest import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.browser

ATTACK_PAGE = """<!doctype html><html><body><script>
const target = "%(target)s";
async function attack() {
  const out = {};
  try {
    await fetch(target + "/api/conversations", {method: "POST", mode: "no-cors",
      headers: {"Content-Type": "text/plain"}, body: JSON.stringify({title: "pwned-text-plain"})});
    out.textPlain = "sent";
  } catch (e) { out.textPlain = String(e); }
  try {
    await fetch(target + "/api/ask", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
      body: JSON.stringify({question: "pwned?", collection: "docs"})});
    out.ask = "sent";
  } catch (e) { out.ask = String(e); }
  const form = new FormData();
  form.append("file", new Blob(["# pwned upload"], {type: "text/markdown"}), "pwned.md");
  try {
    await fetch(target + "/api/collections/docs/documents", {method: "POST", mode: "no-cors", body: form});
    out.multipart = "sent";
  } catch (e) { out.multipart = String(e); }
  try {
    const r = await fetch(target + "/api/collections");  // a cross-origin read: CORS keeps the body from the page
    out.read = await r.text();
  } catch (e) { out.read = "blocked: " + e; }
  document.title = "done";
  window.result = out;
}
attack();
</script></body></html>"""


@pytest.fixture
def attacker_site(live_server):
    """A page on another site (http://localhost:PORT, not 127.0.0.1) aimed at the server."""
    port = free_port()
    body = (ATTACK_PAGE % {"target": live_server}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://localhost:{port}/"
    server.shutdown()


def state(live_server: str) -> tuple[list, list]:
    conversations = httpx.get(f"{live_server}/api/conversations").json()["conversations"]
    jobs = httpx.get(f"{live_server}/api/jobs").json()
    return [c["title"] for c in conversations], [j["id"] for j in jobs]


def test_cross_site_requests_from_another_page_change_nothing(browser, live_server, attacker_site):
    before = state(live_server)
    context = browser.new_context()
    page = context.new_page()
    page.goto(attacker_site)
    page.wait_for_function("document.title === 'done'", timeout=30_000)
    result = page.evaluate("window.result")
    context.close()
    after = state(live_server)
    print(f"attack page: {result}")
    assert after == before, "a cross-site request changed the server's state"
    assert not any("pwned" in t for t in after[0])
    assert "docs" not in result["read"]  # the page could not read the collections


def test_a_rebinding_name_gets_no_answer(browser, live_server):
    """Chromium told that attacker.test is 127.0.0.1 (what DNS rebinding achieves): every request carries
    `Host: attacker.test`, which the server refuses."""
    port = live_server.rsplit(":", 1)[1]
    rebound = browser.browser_type.launch(executable_path=str(CHROMIUM), headless=True,
                                          args=[*CHROMIUM_ARGS, "--host-resolver-rules=MAP attacker.test 127.0.0.1"])
    try:
        page = rebound.new_page()
        response = page.goto(f"http://attacker.test:{port}/")
        status = response.status if response else None
        api = page.evaluate("fetch('/api/collections').then(r => r.status + ' ' + r.statusText).catch(e => String(e))")
        body = page.evaluate("fetch('/api/collections').then(r => r.text()).catch(e => String(e))")
    finally:
        rebound.close()
    print(f"rebinding: page {status}, /api/collections {api}")
    assert status == 421 and api.startswith("421")
    assert "docs" not in body and "archive" not in body
