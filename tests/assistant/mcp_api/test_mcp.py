"""The MCP tools through the real `mcp` client (2.x): over stdio against `assistant mcp` (a subprocess, also
with the rights of a key or of some collections) and over streamable HTTP against /mcp of the real server
(also with a key); then `search` over Flask's source tree."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator, Iterator

import httpx
import pytest
from litestar.testing import AsyncTestClient
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from assistant.app import create_app
from assistant.backends.factory import create_backend
from assistant.services import Services
from evals.local_server import serve_in_thread
from indexes.location import Location
from indexes.store import NewChunk, SourceInfo, Store
from tests.conftest import REPO

pytestmark = pytest.mark.slow  # the real MiniLM embedder, in this process and in the stdio server

TOOLS = {"list_collections", "search", "ask", "read_source"}
# One place per chunk: the tools' shapes are checked against known chunks here (merging adjacent chunks
# into one place is retrieval's, tested in tests/indexes/test_diversity.py).
CHUNK_PLACES = {"merge_adjacent": False}
CHUNK_PLACES_ENV = {"ASSISTANT_RETRIEVAL_MERGE_ADJACENT": "false"}

GUIDE = [  # (heading, text, first line, last line) of docs/deploy.md: three chunks in reading order
    ("Deploying", "Deploy the service with the release script; it builds the image first.", 1, 8),
    ("Deploying › Rollback", "To roll back a bad release, redeploy the previous image tag.", 9, 17),
    ("Deploying › Secrets", "Secrets come from the vault at start; never commit them.", 18, 25),
]
CODE = [  # (symbol, text, first line, last line) of src/shop/cart.py
    ("Cart.total", "def total(self):\n    return sum(item.price * item.quantity for item in self.items)", 10, 11),
    ("Cart.add", "def add(self, item):\n    self.items.append(item)", 13, 14),
]

MANUAL = [(1, "The operator manual covers daily checks."), (2, "Restart the pump after a power cut.")]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, embedder) -> Path:
    """A store with one collection: a guide of three chunks and a code file of two, with line ranges,
    and a PDF of two pages."""
    root = tmp_path_factory.mktemp("project")
    data = tmp_path_factory.mktemp("mcp-data")
    store = Store(data)
    coll = store.ensure_collection("project", embedder.name, embedder.dim)
    guide = [NewChunk(text=t, location=Location(heading_path=h, line_start=a, line_end=b)) for h, t, a, b in GUIDE]
    store.write_document(
        coll, SourceInfo(path="docs/deploy.md", root=str(root), title="Deploying", kind="md"), guide,
        embedder.embed([c.text for c in guide]),
    )
    code = [NewChunk(text=t, location=Location(symbol=s, line_start=a, line_end=b, anchor=f"L{a}-L{b}"))
            for s, t, a, b in CODE]
    store.write_document(
        coll, SourceInfo(path="src/shop/cart.py", root=str(root), title="cart.py", kind="py"), code,
        embedder.embed([c.text for c in code]),
    )
    manual = [NewChunk(text=t, location=Location(page=n)) for n, t in MANUAL]
    store.write_document(
        coll, SourceInfo(path="manual.pdf", root=str(root), title="Operator manual", kind="pdf"), manual,
        embedder.embed([c.text for c in manual]),
    )
    store.close()
    return data


def payload(result) -> dict:
    """A successful tool result's structured content (also sent as JSON text, for older clients)."""
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def error_text(result) -> str:
    assert result.is_error, result.structured_content
    return result.content[0].text


@asynccontextmanager
async def http_session(url: str, key: str | None = None) -> AsyncIterator[ClientSession]:
    """The `mcp` client over streamable HTTP, sending `key` as the Bearer token."""
    headers = {"Authorization": f"Bearer {key}"} if key else None
    async with create_mcp_http_client(headers=headers) as http, \
            streamable_http_client(url, http_client=http) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def exercise_every_tool(session: ClientSession) -> None:
    """List the four tools and call each, good calls and bad ones, as an editor's agent would."""
    listed = await session.list_tools()
    assert {t.name for t in listed.tools} == TOOLS
    search_schema = next(t for t in listed.tools if t.name == "search").input_schema
    assert {"query", "collection", "k", "paths", "kinds"} <= set(search_schema["properties"])

    colls = payload(await session.call_tool("list_collections", {}))["collections"]
    assert colls == [{"name": "project", "title": "project", "documents": 3, "chunks": 7, "failed": 0, "embedder": colls[0]["embedder"]}]

    found = payload(await session.call_tool("search", {"query": "how do I roll back a release?", "k": 3}))
    top = found["hits"][0]
    assert found["collection"] == "project"  # the only collection, used when none is named
    assert (top["path"], top["line_start"], top["line_end"]) == ("docs/deploy.md", 9, 17)
    assert top["location"] == "docs/deploy.md:L9-L17" and top["file"].endswith("/docs/deploy.md")
    assert Path(top["file"]).parent.parent.name.startswith("project")

    code = payload(await session.call_tool(
        "search", {"query": "sum of the prices", "collection": "project", "kinds": ["py"], "paths": ["src/*"]}
    ))
    assert {h["path"] for h in code["hits"]} == {"src/shop/cart.py"}
    assert code["hits"][0]["symbol"] == "Cart.total" and code["hits"][0]["location"] == "src/shop/cart.py:L10-L11"

    answered = payload(await session.call_tool("ask", {"question": "How do I roll back a release?"}))
    assert answered["answer"] == "Echo: How do I roll back a release? [1]"
    assert answered["model"] == "echo"
    first = answered["sources"][0]
    assert first["cited"] and first["n"] == 1 and first["location"] == "docs/deploy.md:L9-L17"

    by_id = payload(await session.call_tool("read_source", {"chunk_id": top["chunk_id"], "neighbours": 1}))
    assert [c["text"] for c in by_id["chunks"]] == [t for _, t, _, _ in GUIDE]
    assert [c["target"] for c in by_id["chunks"]] == [False, True, False]
    assert (by_id["path"], by_id["line_start"], by_id["line_end"], by_id["document_chunks"]) == ("docs/deploy.md", 1, 25, 3)
    assert by_id["chunks"][0]["heading_path"] == "Deploying"

    by_lines = payload(await session.call_tool(
        "read_source", {"path": "src/shop/cart.py", "start_line": 13, "end_line": 13, "neighbours": 0}
    ))
    assert [c["symbol"] for c in by_lines["chunks"]] == ["Cart.add"]
    assert by_lines["location"] == "src/shop/cart.py:L13-L14"

    by_page = payload(await session.call_tool("read_source", {"path": "manual.pdf", "page": 2, "neighbours": 0}))
    assert [c["text"] for c in by_page["chunks"]] == [MANUAL[1][1]]
    assert (by_page["location"], by_page["pages"], by_page["line_start"]) == ("manual.pdf#page=2", [2], None)

    # Bad calls are tool errors that say what is wrong; the session goes on.
    assert "unknown collection 'nope' (known: project)" in error_text(
        await session.call_tool("search", {"query": "release", "collection": "nope"})
    )
    assert "the query is empty" in error_text(await session.call_tool("search", {"query": "   "}))
    assert "k" in error_text(await session.call_tool("search", {"query": "release", "k": 500}))
    assert "no chunk 999999" in error_text(await session.call_tool("read_source", {"chunk_id": 999999}))
    assert "no document 'missing.md'" in error_text(await session.call_tool("read_source", {"path": "missing.md"}))
    assert "has no chunk at lines 400-410" in error_text(
        await session.call_tool("read_source", {"path": "docs/deploy.md", "start_line": 400, "end_line": 410})
    )
    assert "give chunk_id, or path" in error_text(await session.call_tool("read_source", {}))
    assert "the question is empty" in error_text(await session.call_tool("ask", {"question": ""}))
    assert payload(await session.call_tool("list_collections", {}))["collections"][0]["name"] == "project"


@asynccontextmanager
async def stdio_session(data_dir: Path, *extra: str) -> AsyncIterator[ClientSession]:
    """`python -m assistant.cli mcp` spawned by the mcp client, importing this checkout's code."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **CHUNK_PLACES_ENV}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "assistant.cli", "mcp", "--data-dir", str(data_dir), *extra], env=env,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def test_stdio_lists_the_four_tools_and_calls_each(data_dir):
    async with stdio_session(data_dir, "--backend", "echo") as session:
        await exercise_every_tool(session)


@pytest.fixture(scope="module")
def http_url(data_dir, embedder):
    """The real server (uvicorn on 127.0.0.1) with the echo backend over the same store."""
    from assistant.settings import Settings

    settings = Settings(data_dir=data_dir, backend="echo", retrieval=CHUNK_PLACES)
    store = Store(data_dir)
    services = Services.assemble(settings, store, embedder, create_backend(settings))
    with serve_in_thread(create_app(settings, services)) as server:
        yield server.url
    store.close()


async def test_streamable_http_at_mcp_lists_the_four_tools_and_calls_each(http_url):
    async with http_session(f"{http_url}/mcp") as session:
        await exercise_every_tool(session)


@pytest.fixture(scope="module")
def two_collections(tmp_path_factory, embedder) -> tuple[Path, dict[str, str]]:
    """A store with `mine` and `theirs` (a canary in it) and keys: (data dir, {who: key})."""
    from indexes.apikeys import create_key
    from tests.support.stores import write_pages

    data = tmp_path_factory.mktemp("mcp-keys")
    store = Store(data)
    write_pages(store, embedder, "mine", {"rota.md": ("Rota", "The on-call rota changes every Monday at nine.")})
    write_pages(store, embedder, "theirs", {"deal.md": ("Deal", "The OSPREYCANARY deal is signed on Friday.")})
    keys = {who: create_key(store.engine, who, scopes, ["mine"])[1]
            for who, scopes in (("reader", ["read"]), ("asker", ["ask"]))}
    store.close()
    return data, keys


async def assert_only_mine(session: ClientSession, *, may_ask: bool) -> None:
    """What a caller limited to `mine` gets from each tool."""
    assert [c["name"] for c in payload(await session.call_tool("list_collections", {}))["collections"]] == ["mine"]
    found = payload(await session.call_tool("search", {"query": "on-call rota"}))  # the only one it may use
    assert found["collection"] == "mine" and "Monday" in found["hits"][0]["snippet"]
    refused = error_text(await session.call_tool("search", {"query": "deal", "collection": "theirs"}))
    assert "may not use this collection" in refused and "theirs" not in refused.split(":")[-1]
    other = payload(await session.call_tool("search", {"query": "rota", "collection": "mine"}))["hits"][0]["chunk_id"]
    assert "no chunk" in error_text(await session.call_tool("read_source", {"chunk_id": other + 1}))  # theirs
    asked = await session.call_tool("ask", {"question": "When does the rota change?", "collection": "mine"})
    if may_ask:
        assert "rota change" in payload(asked)["answer"]
    else:
        assert "lacks the 'ask' scope" in error_text(asked)
    refused = error_text(await session.call_tool("ask", {"question": "deal?", "collection": "theirs"}))
    assert ("may not use" if may_ask else "lacks the 'ask' scope") in refused


async def test_stdio_acts_with_the_rights_the_operator_gives_it(two_collections):
    from indexes.apikeys import create_key, revoke_key

    data, keys = two_collections
    async with stdio_session(data, "--backend", "echo", "--key", keys["reader"]) as session:
        await assert_only_mine(session, may_ask=False)
    store = Store(data)
    row, temporary = create_key(store.engine, "temporary", ["read"], ["mine"])
    async with stdio_session(data, "--backend", "echo", "--key", temporary) as session:
        assert payload(await session.call_tool("search", {"query": "rota"}))["hits"]
        revoke_key(store.engine, str(row.id))  # stops working at once, in a server already running
        assert "unknown or revoked API key" in error_text(await session.call_tool("search", {"query": "rota"}))
    store.close()
    async with stdio_session(data, "--backend", "echo", "--collection", "mine") as session:
        await assert_only_mine(session, may_ask=True)
    run = subprocess.run(
        [sys.executable, "-m", "assistant.cli", "mcp", "--data-dir", str(data), "--key", "rag_not-a-key"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)}, stdin=subprocess.DEVNULL,
    )
    assert run.returncode != 0 and "unknown or revoked API key" in run.stderr


async def test_streamable_http_obeys_the_key_sent(two_collections, embedder):
    from assistant.settings import Settings

    data, keys = two_collections
    settings = Settings(data_dir=data, backend="echo")
    store = Store(data)
    services = Services.assemble(settings, store, embedder, create_backend(settings))
    try:
        with serve_in_thread(create_app(settings, services)) as server:
            async with http_session(f"{server.url}/mcp", keys["asker"]) as session:
                await assert_only_mine(session, may_ask=True)
            async with http_session(f"{server.url}/mcp", keys["reader"]) as session:
                await assert_only_mine(session, may_ask=False)
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            refused = httpx.post(f"{server.url}/mcp", json=body, headers={"Accept": "application/json, text/event-stream"})
            assert refused.status_code == 401 and "Bearer" in refused.json()["detail"]
    finally:
        store.close()


async def test_ask_over_http_answers_with_the_real_llamacpp_model(data_dir, embedder, llama):
    """The one `ask` through the real model (in-process llama.cpp): an answer, and sources with lines."""
    from assistant.answers.citations import cited_numbers
    from assistant.settings import Settings

    settings = Settings(data_dir=data_dir, backend="llamacpp", generation={"max_tokens": 32, "temperature": 0})
    store = Store(data_dir)
    services = Services.assemble(settings, store, embedder, llama)
    try:
        with serve_in_thread(create_app(settings, services)) as server:
            async with http_session(f"{server.url}/mcp") as session:
                answered = payload(await session.call_tool(
                    "ask", {"question": "How do I roll back a bad release?", "collection": "project", "k": 3}
                ))
    finally:
        store.close()
    print("answer:", answered["answer"])
    assert answered["answer"].strip() and answered["model"] == llama.model
    numbers = {s["n"] for s in answered["sources"]}
    assert 1 <= len(numbers) <= 3 and set(cited_numbers(answered["answer"])) <= numbers
    assert all(s["location"] in (f"{s['path']}:L{s['line_start']}-L{s['line_end']}", f"{s['path']}#page={s['page']}")
               for s in answered["sources"])
    # the rollback passage (lines 9-17) is among the sources, alone or merged with its neighbours
    assert any(s["path"] == "docs/deploy.md" and s["line_start"] <= 9 and s["line_end"] >= 17 for s in answered["sources"])


def test_a_foreign_host_header_is_refused_on_loopback(http_url):
    """DNS-rebinding protection: a page on another site cannot reach the tools through the browser."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Host": "attacker.example", "Accept": "application/json, text/event-stream"}
    assert httpx.post(f"{http_url}/mcp", json=body, headers=headers).status_code == 421


def test_get_and_delete_on_the_stateless_mcp_door_are_405(http_url):
    """The MCP spec for a server that offers no stream of its own and keeps no session: 405, at once (the
    package's own GET answer is an event stream that never ends)."""
    for method in ("GET", "DELETE"):
        r = httpx.request(method, f"{http_url}/mcp", headers={"Accept": "text/event-stream"}, timeout=10)
        assert r.status_code == 405 and r.headers["allow"] == "POST", (method, r.text)
        assert r.json()["code"] == "method_not_allowed"


async def test_mcp_off_leaves_no_mount(settings_factory, embedder):
    settings = settings_factory(server={"mcp": False})
    store = Store(settings.data_dir)
    services = Services.assemble(settings, store, embedder, create_backend(settings))
    try:
        async with AsyncTestClient(app=create_app(settings, services)) as client:
            response = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert response.status_code == 404
            assert (await client.get("/health")).status_code == 200
    finally:
        store.close()


# --- Flask's source tree ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def flask_url(tmp_path_factory, embedder, flask_src) -> Iterator[tuple[str, Path]]:
    """Flask 3.1.3's source tree (src/ of the sdist: a small corpus) ingested once through the ingest
    package, served by the real server: (base URL, tree)."""
    from assistant.settings import Settings
    from ingest.pipeline import ingest_paths

    tree = flask_src
    settings = Settings(data_dir=tmp_path_factory.mktemp("flask-data"), backend="echo")
    store = Store(settings.data_dir)
    report = ingest_paths(store, embedder, [tree], "flask")
    assert report.files_failed == 0, report.failures
    print(f"flask: {report.files_ingested} files, {report.chunks_written} chunks")
    services = Services.assemble(settings, store, embedder, create_backend(settings))
    with serve_in_thread(create_app(settings, services)) as server:
        yield server.url, tree
    store.close()


async def test_search_over_flask_finds_make_response_in_app_py_with_its_lines(flask_url):
    url, tree = flask_url
    source = (tree / "src" / "flask" / "app.py").read_text()
    method = next(n for c in ast.parse(source).body if isinstance(c, ast.ClassDef) and c.name == "Flask"
                  for n in c.body if isinstance(n, ast.FunctionDef) and n.name == "make_response")
    async with http_session(f"{url}/mcp") as session:
        found = payload(await session.call_tool(
            "search", {"query": "Where is make_response implemented?", "collection": "flask", "k": 10}
        ))
        print("hits:", [(h["location"], h["symbol"]) for h in found["hits"]])
        # The chunk that holds the method's `def` line; the method's later chunks and the module-level
        # helper `flask.make_response` (helpers.py) may rank above it.
        ranks = [i for i, h in enumerate(found["hits"], 1) if h["path"] == "src/flask/app.py"
                 and h["line_start"] <= method.lineno <= h["line_end"]]
        assert ranks and ranks[0] <= 5, [h["location"] for h in found["hits"]]
        hit = found["hits"][ranks[0] - 1]
        assert hit["symbol"] == "Flask.make_response"
        assert hit["location"] == f"src/flask/app.py:L{hit['line_start']}-L{hit['line_end']}"
        assert hit["file"] == str(tree / "src" / "flask" / "app.py")
        lines = source.splitlines()[hit["line_start"] - 1 : hit["line_end"]]
        assert any(line.lstrip().startswith("def make_response(") for line in lines)

        # The passage around it, by path and lines, as an agent would open it next.
        read = payload(await session.call_tool("read_source", {
            "collection": "flask", "path": "src/flask/app.py", "start_line": method.lineno,
            "end_line": method.lineno, "neighbours": 1,
        }))
        target = [c for c in read["chunks"] if c["target"]]
        assert len(target) == 1 and "def make_response(" in target[0]["text"]
        assert len(read["chunks"]) == 3 and read["line_start"] < method.lineno < read["line_end"]
