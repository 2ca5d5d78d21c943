"""Every door × every identity × a collection the key may use and one it may not, generated from the app's
route table and the MCP server's tool list: a door added later without an entry in DOORS fails here.

Collection `zebra-vault` holds a canary; no response to a caller without access to it may carry the canary,
its name or its path. Every refusal is a 401/403 JSON message (or an MCP tool error) that names no
collection the caller may not use. The expected outcome of each request is computed from the scope the door
declares (its `opt`, or the tool's entry in mcp_api/tools.py: TOOL_SCOPES) and the identity's rights, so a door that
lets the wrong key in, or keeps the right key out, fails alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from assistant.security.access import SCOPE
from assistant.mcp_api.tools import TOOL_SCOPES
from indexes.apikeys import create_key, revoke_key
from indexes.conversations import add_turn, create_conversation
from indexes.jobs import Jobs
from indexes.location import Location
from indexes.store import NewChunk, SourceInfo

OURS, THEIRS = "alpha-team", "zebra-vault"
CANARY = "zebracanary"
THEIR_MARKERS = (CANARY, THEIRS, "zebra-plans")
PAGES = {
    OURS: ("handbook/travel.md", "Travel", "Book flights through the travel desk at least 14 days before departure."),
    THEIRS: ("secret/zebra-plans.md", "Zebra plans", f"The {CANARY.upper()} merger closes in May; travel is frozen."),
}
SPARE = ("notes/spare.md", "Spare", "A page the deleting doors may delete.")
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
IDENTITIES = ("none", "wrong", "revoked", "read", "ask", "ingest", "admin")  # the last four: keys for OURS
KEY_SCOPES = {"read": ["read"], "ask": ["ask"], "ingest": ["ingest"], "admin": ["admin"]}


@dataclass
class World:
    """The ids of each collection's document, chunk, job and conversation, and the keys."""

    root: Any
    keys: dict[str, str] = field(default_factory=dict)
    key_ids: dict[str, int] = field(default_factory=dict)
    ids: dict[str, dict[str, int]] = field(default_factory=dict)
    spare_document: dict[str, int] = field(default_factory=dict)  # what the deleting doors delete
    owners: dict[tuple[str, str], int] = field(default_factory=dict)  # (collection, "job"|"conv") -> key id


@pytest.fixture
def services(settings_factory, make_services, embedder, tmp_path):
    root = tmp_path / "roots"

    def fill(store):
        for name, page in PAGES.items():
            coll = store.ensure_collection(name, embedder.name, embedder.dim)
            for path, title, text in (page, SPARE):
                file = root / name / path
                file.parent.mkdir(parents=True, exist_ok=True)
                file.write_text(f"# {title}\n\n{text}\n")
                store.write_document(coll, SourceInfo(path=path, root=str(root / name), title=title, kind="md"),
                                     [NewChunk(text=text, location=Location(line_start=1, line_end=3))],
                                     embedder.embed([text]))

    (root / "docs").mkdir(parents=True)
    return make_services(settings_factory(ingest={"allowed_roots": [str(root)]}), fill)


@pytest.fixture
def world(services, tmp_path) -> World:
    from sqlmodel import select

    from indexes.models import Chunk, Document

    engine = services.store.engine
    w = World(root=tmp_path / "roots")
    for who, scopes in KEY_SCOPES.items():
        row, secret = create_key(engine, who, scopes, [] if who == "admin" else [OURS])
        w.keys[who], w.key_ids[who] = secret, row.id
    row, secret = create_key(engine, "gone", ["admin"], [])
    revoke_key(engine, str(row.id))
    w.keys["revoked"], w.keys["wrong"] = secret, "rag_not-a-key"
    for name in (OURS, THEIRS):
        # OURS's job belongs to the ingest key and its conversation to the ask key, the keys that may have
        # made them; THEIRS's belong to the admin.
        owner = {"job": w.key_ids["ingest"], "conv": w.key_ids["ask"]} if name == OURS else \
            {"job": w.key_ids["admin"], "conv": w.key_ids["admin"]}
        coll = services.store.get_collection(name)
        with services.store.session() as s:
            doc, spare = s.exec(select(Document).where(Document.collection_id == coll.id).order_by(Document.id)).all()
            chunk = s.exec(select(Chunk).where(Chunk.document_id == doc.id)).first()
        job = Jobs(engine).enqueue(coll.id, name, {"paths": [str(w.root / name / PAGES[name][0])]}, owner_key=owner["job"])
        conv = create_conversation(engine, f"{PAGES[name][1]} talk", [name], owner_key=owner["conv"])
        turn = add_turn(engine, conv.id, question="Travel?", query="travel", answer="Ask the desk.", sources=[])
        w.ids[name] = {"document_id": doc.id, "chunk_id": chunk.id, "job_id": job.id, "conversation_id": conv.id,
                       "turn_id": turn.id}
        w.spare_document[name] = spare.id
        w.owners[(name, "job")], w.owners[(name, "conv")] = owner["job"], owner["conv"]
    return w


# --- what each door is sent, aimed at one collection ------------------------------------------------
# Path parameters are filled from the collection's ids by name; these give the query and body. A door of
# the route table or a tool of the MCP server without an entry here fails the test.

Example = Callable[[World, str], dict]


def question(w: World, c: str) -> dict:
    return {"json": {"question": "When does the merger close?", "collection": c}}


DOORS: dict[tuple[str, str], Example] = {
    ("GET", "/api/collections"): lambda w, c: {},
    ("POST", "/api/collections"): lambda w, c: {"json": {"name": c}},
    ("GET", "/api/collections/{name:str}/documents"): lambda w, c: {},
    ("POST", "/api/collections/{name:str}/documents"): lambda w, c: {
        "files": {"f": ("note.md", b"# hi\n")}, "headers": {"X-Requested-By": "test"}},
    ("POST", "/api/collections/{name:str}/sources"): lambda w, c: {"json": {"path": str(w.root / "docs")}},
    ("DELETE", "/api/collections/{name:str}/documents/{document_id:int}"): lambda w, c: {},
    ("DELETE", "/api/collections/{name:str}"): lambda w, c: {},
    ("GET", "/api/chunks/{chunk_id:int}"): lambda w, c: {},
    ("GET", "/api/chunks/{chunk_id:int}/context"): lambda w, c: {},
    ("GET", "/api/documents/{document_id:int}/file"): lambda w, c: {},
    ("POST", "/api/documents/{document_id:int}/summary"): lambda w, c: {"json": {}},
    ("GET", "/api/search"): lambda w, c: {"params": {"q": "merger travel", "collection": c}},
    ("POST", "/api/ask"): question,
    ("GET", "/api/status"): lambda w, c: {},
    ("GET", "/api/jobs"): lambda w, c: {"params": {"collection": c}},
    ("GET", "/api/jobs/{job_id:int}"): lambda w, c: {},
    ("GET", "/api/jobs/{job_id:int}/files"): lambda w, c: {},
    ("POST", "/api/jobs/{job_id:int}/retry"): lambda w, c: {},
    ("DELETE", "/api/jobs/{job_id:int}"): lambda w, c: {},
    ("GET", "/api/conversations"): lambda w, c: {},
    ("POST", "/api/conversations"): lambda w, c: {"json": {"title": "t", "collections": [c]}},
    ("GET", "/api/conversations/{conversation_id:int}"): lambda w, c: {},
    ("PATCH", "/api/conversations/{conversation_id:int}"): lambda w, c: {"json": {"title": "renamed"}},
    ("DELETE", "/api/conversations/{conversation_id:int}"): lambda w, c: {},
    ("PUT", "/api/conversations/{conversation_id:int}/turns/{turn_id:int}/feedback"): lambda w, c: {
        "json": {"rating": -1, "comment": "It names the wrong desk."}},
    ("DELETE", "/api/conversations/{conversation_id:int}/turns/{turn_id:int}/feedback"): lambda w, c: {},
    ("GET", "/api/feedback"): lambda w, c: {"params": {"rating": -1}},
    ("GET", "/v1/models"): lambda w, c: {},
    ("POST", "/v1/chat/completions"): lambda w, c: {"json": {
        "model": f"rag:{c}", "messages": [{"role": "user", "content": "When does the merger close?"}]}},
    ("POST", "/v1/embeddings"): lambda w, c: {"json": {"model": f"rag:{c}", "input": "hello"}},
    ("GET", "/metrics"): lambda w, c: {},
}
TOOLS: dict[str, Example] = {
    "list_collections": lambda w, c: {},
    "search": lambda w, c: {"query": "merger travel", "collection": c},
    "ask": lambda w, c: {"question": "When does the merger close?", "collection": c},
    "read_source": lambda w, c: {"chunk_id": w.ids[c]["chunk_id"]},
}
# Doors that answer about everything the caller may see rather than one collection: for a key of OURS,
# aimed at THEIRS they answer (filtered), they do not refuse.
LISTINGS = {("GET", "/api/collections"), ("GET", "/api/status"), ("GET", "/v1/models"), ("GET", "/api/conversations"),
            ("GET", "/metrics"), ("MCP", "list_collections")}


@dataclass(frozen=True)
class Door:
    method: str  # an HTTP method, or "MCP" for a tool of the /mcp mount
    template: str  # the route's path template, or the tool's name
    scopes: tuple[str, ...]  # every scope it needs (the mount's and the tool's for MCP)

    @property
    def key(self) -> tuple[str, str]:
        return (self.method, self.template)

    @property
    def destructive(self) -> bool:
        return self.method == "DELETE"

    @property
    def owned(self) -> str | None:
        """Doors to a job or a conversation: only its owner (or an admin) may pass."""
        return "job" if "{job_id" in self.template else "conv" if "{conversation_id" in self.template else None


def route_doors(app) -> list[Door]:
    """Every guarded route of the app, with the scope it declares."""
    doors = []
    for route in app.routes:
        for handler in getattr(route, "route_handlers", None) or [route.route_handler]:
            scope = handler.opt.get(SCOPE, "admin")
            if scope == "public" or (getattr(handler, "is_mount", False) and route.path == "/mcp"):
                continue  # the /mcp mount's doors are its tools (mcp_doors)
            if getattr(handler, "is_mount", False):  # another mount: its doors must be listed here first
                doors.append(Door("MOUNT", route.path, (scope,)))
                continue
            doors += [Door(m, route.path, (scope,)) for m in sorted(handler.http_methods) if m != "OPTIONS"]
    return doors


def mount_scope(app) -> str:
    return next(h.opt[SCOPE] for r in app.routes for h in [getattr(r, "route_handler", None)]
                if h is not None and getattr(h, "is_mount", False) and r.path == "/mcp")


async def mcp_doors(client, admin_key: str, app) -> list[Door]:
    """Every tool the /mcp door lists, with the mount's scope and the tool's own."""
    r = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                          headers={**MCP_HEADERS, "Authorization": f"Bearer {admin_key}"})
    assert r.status_code == 200, r.text
    names = [t["name"] for t in r.json()["result"]["tools"]]
    assert names, "the MCP door lists its tools"
    mount = mount_scope(app)
    missing = [n for n in names if n not in TOOL_SCOPES]
    assert not missing, f"MCP tools with no scope in mcp_tools.TOOL_SCOPES: {missing}"
    return [Door("MCP", n, (mount, TOOL_SCOPES[n])) for n in names]


def request_of(door: Door, w: World, collection: str) -> tuple[str, str, dict]:
    """(method, url, kwargs) of a door aimed at a collection."""
    if door.method == "MCP":
        args = TOOLS[door.template](w, collection)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": door.template, "arguments": args}}
        return "POST", "/mcp", {"json": body, "headers": dict(MCP_HEADERS)}
    url = door.template
    ids = dict(w.ids[collection], document_id=w.spare_document[collection]) if door.destructive else w.ids[collection]
    for param, value in {"name": collection, **ids}.items():
        url = url.replace("{" + param + ":str}", str(value)).replace("{" + param + ":int}", str(value))
    assert "{" not in url, f"no value for a path parameter of {door.template}"
    return door.method, url, DOORS[door.key](w, collection)


def may_pass(door: Door, who: str, w: World, collection: str) -> bool:
    """Whether this identity may use this door on this collection, from the rules alone."""
    if who in ("none", "wrong", "revoked"):
        return False
    scopes = set(KEY_SCOPES[who])
    if "admin" in scopes:
        return True
    for needed in door.scopes:
        if not (needed in scopes or (needed == "read" and "ask" in scopes)):
            return False
    if door.key in LISTINGS:
        return True
    if door.owned and w.owners[(collection, door.owned)] != w.key_ids[who]:
        return False
    return collection == OURS


def addressed_by_id(door: Door) -> bool:
    """A door that names a chunk or document by its id alone: an id of a collection the key may not use
    answers as a missing id does (404), so that ids cannot be probed."""
    return door.method != "MCP" and "{name" not in door.template and (
        "{chunk_id" in door.template or "{document_id" in door.template)


def holds_scopes(door: Door, who: str) -> bool:
    scopes = set(KEY_SCOPES.get(who, ()))
    return "admin" in scopes or all(n in scopes or (n == "read" and "ask" in scopes) for n in door.scopes)


def mcp_refusal(r) -> str | None:
    """The message of an MCP tool error, or None for a result."""
    result = r.json().get("result") or {}
    if result.get("isError"):
        return " ".join(c.get("text", "") for c in result.get("content", []))
    return None


def refusal_text(r) -> str | None:
    """The refusal's message: a 401/403 JSON body's, or an MCP tool error's; None when not refused."""
    if r.status_code in (401, 403):
        body = r.json()
        return body.get("detail") or (body.get("error") or {}).get("message")
    return None


def leaks(r) -> list[str]:
    return [m for m in THEIR_MARKERS if m in r.text.lower()]


async def run_matrix(client, app, w: World) -> list[tuple[str, Door, str, Any]]:
    doors = route_doors(app) + await mcp_doors(client, w.keys["admin"], app)
    unknown = [d.key for d in doors if d.method != "MCP" and d.key not in DOORS]
    unknown += [d.template for d in doors if d.method == "MCP" and d.template not in TOOLS]
    assert not unknown, f"doors without an entry in DOORS/TOOLS of this test: {unknown}"
    rows = []
    for who in IDENTITIES:
        auth = {} if who == "none" else {"Authorization": f"Bearer {w.keys[who]}"}
        # Destructive doors last, aimed at THEIRS first, so that each request finds the world in place.
        plan = [(d, c) for d in doors if not d.destructive for c in (OURS, THEIRS)]
        plan += [(d, c) for c in (THEIRS, OURS) for d in doors if d.destructive]
        for door, collection in plan:
            method, url, kwargs = request_of(door, w, collection)
            kwargs = {**kwargs, "headers": {**kwargs.get("headers", {}), **auth}}
            rows.append((who, door, collection, await client.request(method, url, **kwargs)))
    return rows


async def test_every_door_by_every_identity_on_both_collections(client, services, world):
    rows = await run_matrix(client, client.app, world)
    failures = []
    for who, door, collection, r in rows:
        where = f"{who} {door.method} {door.template} -> {collection}: {r.status_code} {r.text[:160]!r}"
        if r.status_code >= 500:
            failures.append(f"server error: {where}")
            continue
        refused = refusal_text(r) if door.method != "MCP" or r.status_code != 200 else mcp_refusal(r)
        if who in ("none", "wrong", "revoked"):
            if r.status_code != 401 or not refused:
                failures.append(f"not a 401 JSON refusal: {where}")
            continue
        if r.status_code in (401, 403) and not refused:
            failures.append(f"a refusal without a message: {where}")
        if addressed_by_id(door) and holds_scopes(door, who) and not may_pass(door, who, world, collection):
            if r.status_code != 404:
                failures.append(f"an id of a collection the key may not use is not a 404: {where}")
            if found := leaks(r):
                failures.append(f"carries {found} of {THEIRS}: {where}")
            continue
        if may_pass(door, who, world, collection):
            if refused is not None and (r.status_code in (401, 403) or door.method == "MCP"):
                failures.append(f"refused though allowed: {where}")
        else:
            if refused is None:
                failures.append(f"not refused: {where}")
        if who != "admin" and (found := leaks(r)):
            failures.append(f"carries {found} of {THEIRS}: {where}")
        if refused and who != "admin" and THEIRS in refused:
            failures.append(f"the refusal names {THEIRS}: {where}")
    routes = {d.key for _, d, _, _ in rows}
    print(f"matrix: {len(routes)} doors ({sum(1 for m, _ in routes if m == 'MCP')} MCP tools) x {len(IDENTITIES)} "
          f"identities x 2 collections = {len(rows)} requests; "
          f"{sum(1 for _, d, _, r in rows if (refusal_text(r) if r.status_code != 200 else mcp_refusal(r) if d.method == 'MCP' else None))} "
          f"refusals; {len(failures)} failures")
    assert not failures, "\n".join(failures[:40])
    # the positive controls: the admin reads THEIRS through REST and through MCP
    admin = {(d.key, c): r for who, d, c, r in rows if who == "admin"}
    assert CANARY in admin[(("GET", "/api/search"), THEIRS)].text.lower()
    assert CANARY in admin[(("MCP", "search"), THEIRS)].text.lower()
    reader = {(d.key, c): r for who, d, c, r in rows if who == "read"}
    assert "travel desk" in reader[(("MCP", "search"), OURS)].text.lower()
    assert "travel desk" in reader[(("GET", "/api/documents/{document_id:int}/file"), OURS)].text.lower()


async def test_the_mcp_door_refuses_another_collection_with_the_rest_api_s_words(client, world):
    """The reproduction: a read key of OURS asks the MCP tools for THEIRS and gets nothing of it."""
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {world.keys['read']}"}

    async def call(tool: str, args: dict) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}
        return await client.post("/mcp", json=body, headers=auth)

    for tool, args in (("search", {"query": "merger", "collection": THEIRS}),
                       ("ask", {"question": "merger?", "collection": THEIRS}),
                       ("read_source", {"chunk_id": world.ids[THEIRS]["chunk_id"]}),
                       ("read_source", {"path": PAGES[THEIRS][0], "collection": THEIRS})):
        r = await call(tool, args)
        assert r.status_code == 200 and mcp_refusal(r), (tool, r.text)
        assert not leaks(r), (tool, r.text)
    assert "lacks the 'ask' scope" in mcp_refusal(await call("ask", {"question": "travel?", "collection": OURS}))
    unknown = mcp_refusal(await call("search", {"query": "x", "collection": "no-such"}))
    assert THEIRS not in unknown and "may not use" in unknown  # unknown and forbidden look the same
    rest = await client.get("/api/search", params={"q": "merger", "collection": THEIRS},
                            headers={"Authorization": f"Bearer {world.keys['read']}"})
    assert rest.status_code == 403 and mcp_refusal(await call(
        "search", {"query": "merger", "collection": THEIRS})).endswith(rest.json()["detail"])  # the same words
    listed = await call("list_collections", {})
    assert [c["name"] for c in json.loads(listed.json()["result"]["content"][0]["text"])["collections"]] == [OURS]


async def test_an_id_of_another_collection_answers_as_a_missing_id(client, world):
    """The id probes: for every door that names a chunk or a document by its id, a key of OURS gets for
    THEIRS's id exactly what it gets for an id that does not exist (status, code, words but the number)."""
    doors = [d for d in route_doors(client.app) if addressed_by_id(d)]
    assert {d.template for d in doors} >= {"/api/chunks/{chunk_id:int}", "/api/chunks/{chunk_id:int}/context",
                                            "/api/documents/{document_id:int}/file",
                                            "/api/documents/{document_id:int}/summary"}
    missing = {"chunk_id": 987654, "document_id": 987654}
    probed = 0
    for who in ("read", "ask", "ingest", "admin"):
        auth = {"Authorization": f"Bearer {world.keys[who]}"}
        for door in doors:
            if not holds_scopes(door, who):
                continue
            method, url, kwargs = request_of(door, world, THEIRS)
            theirs = await client.request(method, url, **{**kwargs, "headers": auth})
            param = "chunk_id" if "{chunk_id" in door.template else "document_id"
            gone = await client.request(method, door.template.replace("{" + param + ":int}", str(missing[param])),
                                        **{**kwargs, "headers": auth})
            assert gone.status_code == 404, (who, door.template, gone.text)
            if who == "admin":
                assert theirs.status_code == 200, (who, door.template, theirs.text)
                continue
            own_id = str(world.ids[THEIRS][param])
            assert theirs.status_code == 404 and not leaks(theirs), (who, door.template, theirs.text)
            assert theirs.json() == json.loads(gone.text.replace(str(missing[param]), own_id)), (who, door.template)
            probed += 1
    assert probed == 7  # read: 3 doors (the summary needs ask), ask: 4
