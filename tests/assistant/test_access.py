"""API keys, scopes and collection allow-lists: every route × {no key, wrong key, read key for A, ingest key
for A, admin}. Collection B holds a canary; no response to a caller without access to B may carry it, and
every refusal is a 401/403 JSON message."""

from __future__ import annotations

import json

import pytest

from assistant.app import create_app
from indexes.apikeys import create_key
from indexes.conversations import create_conversation
from indexes.jobs import Jobs
from tests.support.stores import write_pages

CANARY = "zebracanary"
B_MARKERS = (CANARY, "zebra-plans", "zebra plans")

PAGES_A = {"handbook/travel.md": ("Travel", "Book flights through the travel desk at least 14 days before departure.")}
PAGES_B = {"secret/zebra-plans.md": ("Zebra plans", f"The {CANARY.upper()} merger closes in May; travel is frozen.")}


@pytest.fixture
def services(settings_factory, make_services, embedder, tmp_path):
    def fill(store):
        write_pages(store, embedder, "A", PAGES_A)
        write_pages(store, embedder, "B", PAGES_B)

    root = tmp_path / "roots"
    (root / "docs").mkdir(parents=True)
    return make_services(settings_factory(ingest={"allowed_roots": [str(root)]}), fill)


@pytest.fixture
def world(services, tmp_path):
    """Keys, and B's chunk, document, job and conversation (the admin's)."""
    engine = services.store.engine
    keys = {
        "read_A": create_key(engine, "reader", ["read"], ["A"])[1],
        "ingest_A": create_key(engine, "uploader", ["ingest"], ["A"])[1],
        "admin": create_key(engine, "admin", ["admin"], [])[1],
    }
    admin_id = 3
    b = services.store.get_collection("B")
    with services.store.session() as s:
        from sqlmodel import select

        from indexes.models import Chunk, Document

        doc_b = s.exec(select(Document).where(Document.collection_id == b.id)).first()
        chunk_b = s.exec(select(Chunk).where(Chunk.collection_id == b.id)).first()
    job = Jobs(engine).enqueue(b.id, "B", {"paths": [str(tmp_path / "roots" / "secret" / "zebra-plans.md")]}, owner_key=admin_id)
    conv = create_conversation(engine, "Zebra plans talk", ["B"], owner_key=admin_id)
    return {"keys": keys, "doc": doc_b.id, "chunk": chunk_b.id, "job": job.id, "conv": conv.id, "root": tmp_path / "roots"}


def mcp_call(tool: str, arguments: dict) -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def requests(w: dict) -> list[tuple[str, str, str, dict]]:
    """(route template, method, url, request kwargs) for every guarded route, aimed at collection B
    (destructive ones last)."""
    d, c, j, v = w["doc"], w["chunk"], w["job"], w["conv"]
    return [
        ("/api/collections", "GET", "/api/collections", {}),
        ("/api/collections/{name:str}/documents", "GET", "/api/collections/B/documents", {}),
        ("/api/chunks/{chunk_id:int}", "GET", f"/api/chunks/{c}", {}),
        ("/api/chunks/{chunk_id:int}/context", "GET", f"/api/chunks/{c}/context", {}),
        ("/api/documents/{document_id:int}/file", "GET", f"/api/documents/{d}/file", {}),
        ("/api/collections", "POST", "/api/collections", {"json": {"name": "C"}}),
        ("/api/search", "GET", "/api/search?q=zebra+merger&collection=B", {}),
        ("/api/ask", "POST", "/api/ask", {"json": {"question": "When does the merger close?", "collection": "B"}}),
        ("/api/ask", "POST", "/api/ask", {"json": {"question": "When does the merger close?", "conversation_id": v}}),
        ("/api/status", "GET", "/api/status", {}),
        ("/api/jobs", "GET", "/api/jobs", {}),
        ("/api/jobs", "GET", "/api/jobs?collection=B", {}),
        ("/api/jobs/{job_id:int}", "GET", f"/api/jobs/{j}", {}),
        ("/api/jobs/{job_id:int}/files", "GET", f"/api/jobs/{j}/files", {}),
        ("/api/conversations", "GET", "/api/conversations", {}),
        ("/api/conversations", "POST", "/api/conversations", {"json": {"title": "t", "collections": ["B"]}}),
        ("/api/conversations/{conversation_id:int}", "GET", f"/api/conversations/{v}", {}),
        ("/api/conversations/{conversation_id:int}", "PATCH", f"/api/conversations/{v}", {"json": {"title": "x"}}),
        ("/api/documents/{document_id:int}/summary", "POST", f"/api/documents/{d}/summary", {"json": {}}),
        ("/v1/models", "GET", "/v1/models", {}),
        ("/v1/chat/completions", "POST", "/v1/chat/completions",
         {"json": {"model": "rag:B", "messages": [{"role": "user", "content": "When does the merger close?"}]}}),
        ("/v1/embeddings", "POST", "/v1/embeddings", {"json": {"model": "x", "input": "hello"}}),
        ("/metrics", "GET", "/metrics", {}),
        ("/mcp", "POST", "/mcp", {"json": mcp_call("list_collections", {}), "headers": MCP_HEADERS}),
        ("/mcp", "POST", "/mcp", {"json": mcp_call("search", {"query": "zebra merger", "collection": "B"}), "headers": MCP_HEADERS}),
        ("/mcp", "POST", "/mcp", {"json": mcp_call("read_source", {"chunk_id": c}), "headers": MCP_HEADERS}),
        ("/mcp", "POST", "/mcp", {"json": mcp_call("ask", {"question": "merger?", "collection": "B"}), "headers": MCP_HEADERS}),
        ("/api/collections/{name:str}/sources", "POST", "/api/collections/B/sources", {"json": {"path": str(w["root"] / "docs")}}),
        ("/api/collections/{name:str}/documents", "POST", "/api/collections/B/documents",
         {"files": {"f": ("note.md", b"# hi\n")}, "headers": {"X-Requested-By": "test"}}),
        ("/api/jobs/{job_id:int}", "DELETE", f"/api/jobs/{j}", {}),
        ("/api/conversations/{conversation_id:int}", "DELETE", f"/api/conversations/{v}", {}),
        ("/api/collections/{name:str}/documents/{document_id:int}", "DELETE", f"/api/collections/B/documents/{d}", {}),
        ("/api/collections/{name:str}", "DELETE", "/api/collections/B", {}),
    ]


def guarded_routes(app) -> set[tuple[str, str]]:
    out = set()
    for route in app.routes:
        for handler in getattr(route, "route_handlers", None) or [route.route_handler]:
            if handler.opt.get("scope") == "public":
                continue
            methods = getattr(handler, "http_methods", None) or {"POST"}  # the /mcp mount
            out |= {(route.path, m) for m in methods if m != "OPTIONS"}
    return out


def is_denial(r) -> bool:
    if r.status_code not in (401, 403):
        return False
    body = r.json()
    return bool(body.get("detail") or (body.get("error") or {}).get("message"))


def carries_b(r) -> bool:
    return any(m in r.text.lower() for m in B_MARKERS)


IDENTITIES = ["none", "wrong", "read_A", "ingest_A", "admin"]


async def test_every_route_by_identity_leaks_nothing_of_collection_b(client, services, world):
    table = requests(world)
    assert guarded_routes(client.app) == {(t, m) for t, m, _, _ in table}, "every guarded route is in the matrix"
    results: dict[str, list] = {}
    for who in IDENTITIES:
        auth = {} if who == "none" else {"Authorization": "Bearer " + ("rag_not-a-key" if who == "wrong" else world["keys"][who])}
        rows = []
        for template, method, url, kwargs in table:
            headers = {**kwargs.get("headers", {}), **auth}
            r = await client.request(method, url, **{**kwargs, "headers": headers})
            rows.append((template, method, url, r))
        results[who] = rows

    for who in ("none", "wrong"):
        for _, method, url, r in results[who]:
            assert r.status_code == 401 and is_denial(r), (who, method, url, r.status_code, r.text[:200])
    for who in ("read_A", "ingest_A"):
        for _, method, url, r in results[who]:
            assert r.status_code < 500, (who, method, url, r.status_code, r.text[:300])
            assert not carries_b(r), (who, method, url, r.text[:300])
            if r.status_code in (401, 403):
                assert is_denial(r), (who, url, r.text)
    denied = {(who, m, u) for who in ("read_A", "ingest_A") for _, m, u, r in results[who] if is_denial(r)}
    # what each key may not do is refused outright, not merely emptied
    assert ("read_A", "GET", "/api/search?q=zebra+merger&collection=B") in denied
    assert ("read_A", "GET", f"/api/chunks/{world['chunk']}") in denied
    assert ("read_A", "POST", "/api/ask") in denied  # a read key may not ask
    assert ("read_A", "GET", "/metrics") in denied and ("ingest_A", "GET", "/metrics") in denied
    assert ("ingest_A", "POST", "/api/collections/B/sources") in denied
    assert ("ingest_A", "DELETE", "/api/collections/B") in denied
    assert ("ingest_A", "GET", f"/api/jobs/{world['job']}") in denied
    assert ("read_A", "GET", f"/api/conversations/{world['conv']}") in denied  # conversations need `ask`
    admin = {(m, u): r for _, m, u, r in results["admin"]}
    assert admin[("GET", "/api/search?q=zebra+merger&collection=B")].status_code == 200
    assert CANARY in admin[("GET", "/api/search?q=zebra+merger&collection=B")].text.lower()
    assert admin[("DELETE", "/api/collections/B")].status_code == 202
    denials = sum(is_denial(r) for rows in results.values() for *_, r in rows)
    print(f"matrix: {len(table)} requests x {len(IDENTITIES)} identities; {denials} refusals (401/403 JSON); "
          "0 responses with data of B to callers without access")


async def test_a_read_key_sees_its_collection_and_nothing_else(client, world):
    auth = {"Authorization": "Bearer " + world["keys"]["read_A"]}
    r = await client.get("/api/collections", headers=auth)
    assert [c["name"] for c in r.json()] == ["A"]
    r = await client.get("/api/search", params={"q": "flights", "collection": "A"}, headers=auth)
    assert r.status_code == 200 and r.json()["hits"]
    models = (await client.get("/v1/models", headers=auth)).json()["data"]
    assert "rag:A" in {m["id"] for m in models} and "rag:B" not in {m["id"] for m in models}


async def test_jobs_show_no_absolute_server_path(client, services, world):
    r = await client.get(f"/api/jobs/{world['job']}", headers={"Authorization": "Bearer " + world["keys"]["admin"]})
    assert r.status_code == 200
    assert str(world["root"]) not in r.text and str(services.settings.data_dir) not in r.text
    assert r.json()["params"]["paths"] == ["roots/secret/zebra-plans.md"]


async def test_keyless_on_loopback_until_a_key_exists(client, services):
    assert (await client.get("/api/collections")).status_code == 200
    # clients that always send a key (the openai package, editor plugins) work keyless too
    assert (await client.get("/api/collections", headers={"Authorization": "Bearer sk-placeholder"})).status_code == 200
    create_key(services.store.engine, "first", ["read"], ["*"])
    r = await client.get("/api/collections")
    assert r.status_code == 401 and "Bearer" in r.json()["detail"]
    assert (await client.get("/health")).status_code in (200, 503)  # liveness stays open


async def test_a_revoked_key_stops_working(client, services):
    from indexes.apikeys import revoke_key

    create_key(services.store.engine, "stays", ["read"], ["*"])  # the server is not keyless once the other goes
    row, secret = create_key(services.store.engine, "temp", ["read"], ["*"])
    auth = {"Authorization": f"Bearer {secret}"}
    assert (await client.get("/api/collections", headers=auth)).status_code == 200
    revoke_key(services.store.engine, str(row.id))
    assert (await client.get("/api/collections", headers=auth)).status_code == 401


def test_serve_refuses_another_address_without_keys(tmp_path):
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "assistant.cli", "serve", "--host", "0.0.0.0", "--backend", "echo",
                          "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "assistant keys create" in run.stderr and "0.0.0.0" in run.stderr


def test_keys_command_shows_a_key_once_and_stores_its_hash(tmp_path):
    import subprocess
    import sys

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "assistant.cli", "keys", *args, "--data-dir", str(tmp_path)],
                              capture_output=True, text=True, timeout=60)

    made = cli("create", "ci", "--scope", "read", "--scope", "ask", "--collection", "docs")
    assert made.returncode == 0, made.stderr
    secret = made.stdout.split(": ", 1)[1].strip()
    assert secret.startswith("rag_")
    listed = cli("list", "--json")
    keys = json.loads(listed.stdout)
    assert keys[0]["scopes"] == ["read", "ask"] and secret not in listed.stdout
    assert secret.encode() not in (tmp_path / "store.db").read_bytes()
    assert cli("create", "bad", "--scope", "read").returncode == 2  # names no collection
    assert cli("revoke", "ci").returncode == 0 and cli("revoke", "ci").returncode == 1
