"""What another web page could make the user's browser send: a rebinding Host, JSON sent as text/plain,
a cross-site multipart form, a foreign Origin. All refused with a JSON reason, nothing written; every
response carries the security headers."""

from __future__ import annotations

import base64
import hashlib
import json
import re

import pytest

from assistant.security.browser_defences import CONTENT_SECURITY_POLICY
from indexes.jobs import Jobs
from tests.support.stores import write_pages

ASK = {"question": "How early must flights be booked?", "collection": "handbook"}


@pytest.fixture
def services(settings_factory, make_services, embedder, tmp_path):
    (tmp_path / "root").mkdir()
    settings = settings_factory(ingest={"allowed_roots": [str(tmp_path / "root")]},
                                server={"allowed_hosts": ["testserver.local", "wiki.example.org", "*.corp.example"]})
    return make_services(settings, lambda s: write_pages(s, embedder, "handbook", {"t.md": ("Travel", "Book flights 14 days ahead.")}))


def jobs(services) -> int:
    return len(Jobs(services.store.engine).list(limit=500))


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8000", "127.0.0.1.attacker.example", "corp.example.evil"])
async def test_a_foreign_host_is_refused(client, host):
    r = await client.get("/api/collections", headers={"Host": host})
    assert r.status_code == 421 and "host" in r.json()["detail"]
    assert r.headers["content-security-policy"].startswith("default-src 'self'")


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1", "[::1]:8000", "wiki.example.org", "docs.corp.example:443"])
async def test_loopback_and_configured_hosts_are_answered(client, host):
    assert (await client.get("/api/collections", headers={"Host": host})).status_code == 200


@pytest.mark.parametrize("url", ["/api/ask", "/api/collections/handbook/sources", "/v1/chat/completions", "/api/conversations"])
async def test_json_sent_as_text_plain_is_415(client, services, url):
    before = jobs(services)
    r = await client.post(url, content=json.dumps(ASK | {"path": "/"}), headers={"Content-Type": "text/plain"})
    assert r.status_code == 415, r.text
    assert "application/json" in json.dumps(r.json())
    assert jobs(services) == before


async def test_a_cross_site_multipart_upload_is_refused(client, services, tmp_path):
    files = {"file": ("a.md", b"# hello\n")}
    r = await client.post("/api/collections/handbook/documents", files=files)  # what an HTML form can send
    assert r.status_code == 403 and "X-Requested-By" in r.json()["detail"]
    r = await client.post("/api/collections/handbook/documents", files=files,
                          headers={"X-Requested-By": "x", "Origin": "http://attacker.example"})
    assert r.status_code == 403 and "cross-origin" in r.json()["detail"]
    assert jobs(services) == 0 and not (services.settings.data_dir / "uploads").exists()
    r = await client.post("/api/collections/handbook/documents", files=files, headers={"X-Requested-By": "page"})
    assert r.status_code == 202
    r = await client.post("/api/ask", files=files, headers={"X-Requested-By": "page"})  # multipart only where uploads go
    assert r.status_code == 415


@pytest.mark.parametrize("headers", [{"Origin": "http://attacker.example"}, {"Origin": "null"},
                                     {"Origin": "http://localhost:9999"}, {"Sec-Fetch-Site": "cross-site"}])
async def test_state_changing_requests_from_another_origin_are_refused(client, headers):
    r = await client.post("/api/conversations", json={"title": "x"}, headers=headers)
    assert r.status_code == 403
    r = await client.delete("/api/collections/handbook", headers=headers)
    assert r.status_code == 403
    assert (await client.get("/api/collections")).json()[0]["name"] == "handbook"


async def test_same_origin_requests_pass(client):
    r = await client.post("/api/conversations", json={"title": "x"}, headers={"Origin": "http://testserver.local",
                                                                                "Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 201


@pytest.mark.parametrize("path", ["/", "/static/app.js", "/api/collections", "/health", "/api/docs/openapi.json"])
async def test_security_headers_on_every_response(client, path):
    r = await client.get(path)
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "img-src 'self' data:" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize("method, path, status", [
    ("GET", "/no/such/page", 404), ("GET", "/api/no-such-route", 404), ("POST", "/v1/nothing", 404),
    ("GET", "/static/no-such-file.js", 404), ("DELETE", "/health", 405), ("GET", "/api/chunks/0", 400),
])
async def test_security_headers_on_errors_and_unknown_routes(client, method, path, status):
    r = await client.request(method, path)
    assert r.status_code == status, r.text[:200]
    assert r.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY"


async def test_the_api_docs_page_uses_local_assets_and_allows_only_its_own_inline_script(client):
    r = await client.get("/api/docs")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    urls = re.findall(r"""(?:src|href)=["']([^"']+)""", r.text)
    assert urls and all(url.startswith("/static/") for url in urls), urls
    for url in urls:
        assert (await client.get(url)).status_code == 200, url
    inline = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", r.text, re.DOTALL)
    assert len(inline) == 1 and "SwaggerUIBundle" in inline[0]
    digest = base64.b64encode(hashlib.sha256(inline[0].encode()).digest()).decode()
    assert r.headers["content-security-policy"] == f"{CONTENT_SECURITY_POLICY}; script-src 'self' 'sha256-{digest}'"
    assert (await client.get("/")).headers["content-security-policy"] == CONTENT_SECURITY_POLICY
