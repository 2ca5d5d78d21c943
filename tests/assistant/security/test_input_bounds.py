"""Hostile input gets a 400 that says what is wrong (never a 500 or an `internal_error` event), names are
matched whole, and error messages carry no exception text."""

from __future__ import annotations

import logging
from urllib.parse import quote

import httpx
import pytest

from assistant.app import create_app
from assistant.security.json_bounds import MAX_JSON_DEPTH
from assistant.answers.rag import error_event
from evals.local_server import serve_in_thread
from indexes.jobs import Jobs
from tests.support.stores import write_pages

ASK = {"question": "How early must flights be booked?", "collection": "handbook"}


@pytest.fixture
def services(settings_factory, make_services, embedder, tmp_path):
    (tmp_path / "root").mkdir()
    return make_services(settings_factory(ingest={"allowed_roots": [str(tmp_path / "root")]}),
                         lambda s: write_pages(s, embedder, "handbook", {"t.md": ("Travel", "Book flights 14 days ahead.")}))


@pytest.mark.parametrize("url", [
    "/api/chunks/99999999999999999999999", "/api/chunks/0", "/api/jobs/99999999999999999999999",
    "/api/conversations/99999999999999999999999", "/api/collections/handbook/documents?offset=99999999999999999999999",
    "/api/search?q=x&collection=handbook&path=" + "a" * 60_000, "/api/search?q=x&collection=handbook&modified_after=not-a-date",
    "/api/search?q=x&collection=handbook&modified_after=" + "9" * 400,
])
async def test_out_of_range_query_values_are_400(client, url, caplog):
    with caplog.at_level(logging.ERROR):
        r = await client.get(url)
    assert r.status_code == 400, (url[:80], r.status_code, r.text[:200])
    assert r.json()["detail"]
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR]


@pytest.mark.parametrize("extra, fragment", [
    ({"filters": {"paths": ["*" * 60_000]}}, "paths"),
    ({"filters": {"modified_after": "last tuesday"}}, "bad filter"),
    ({"filters": {"modified_before": "2024-13-45"}}, "bad filter"),
    ({"conversation_id": 10**30}, "conversation_id"),
    ({"collection": "handbook\n"}, "handbook"),
    ({"collections": ["x" * 10_000]}, "collections"),
])
async def test_bad_ask_filters_and_names_are_4xx_before_any_stream(client, extra, fragment):
    r = await client.post("/api/ask", json=ASK | extra)
    assert r.status_code in (400, 404), r.text[:300]
    assert r.headers["content-type"].startswith("application/json")
    assert fragment in r.text


@pytest.mark.parametrize("name", ["abc\n", "abc\r\n", "../x", "a" * 65, "", "~deleted-1"])
async def test_collection_names_are_matched_whole(client, services, name):
    r = await client.post(f"/api/collections/{quote(name, safe='')}/sources", json={"path": str(services.settings.data_dir)})
    assert r.status_code in (400, 404, 405), (repr(name), r.status_code)
    assert Jobs(services.store.engine).list() == []


def test_an_unexpected_failure_is_reported_without_its_text():
    event = error_event(RuntimeError("cannot open /home/alice/.ssh/id_rsa: token=sk-12345"))
    assert event.data["code"] == "internal_error"
    assert "/home/alice" not in event.data["message"] and "sk-12345" not in event.data["message"]


DEEP = 5000
DEEP_BODIES = {"objects": b'{"a":' * DEEP + b"1" + b"}" * DEEP, "arrays": b"[" * DEEP + b"]" * DEEP,
               "unclosed": b'{"messages": ' + b"[" * DEEP}


@pytest.mark.parametrize("url", ["/api/collections", "/api/ask", "/api/conversations", "/v1/chat/completions", "/mcp"])
@pytest.mark.parametrize("shape", list(DEEP_BODIES))
async def test_deeply_nested_json_is_400_on_every_route(client, url, shape, caplog):
    with caplog.at_level(logging.ERROR):
        r = await client.post(url, content=DEEP_BODIES[shape], headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    assert r.status_code == 400, (url, r.status_code, r.text[:200])
    assert r.json() == {"status_code": 400, "detail": f"the JSON body nests more than {MAX_JSON_DEPTH} arrays or "
                                                      "objects inside one another", "code": "invalid_request"}
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR]


def nested(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = [value]
    return value


async def test_the_bound_counts_brackets_outside_strings_only(client):
    # escaped quotes and backslashes too: the brackets after them are still inside the string
    question = '[{"\\"[[ \\' * 60 + "How early must flights be booked?"
    r = await client.post("/api/ask", json=ASK | {"question": question})
    assert r.status_code == 200 and "event: done" in r.text
    at_bound = await client.post("/api/ask", json=ASK | {"history": nested(MAX_JSON_DEPTH - 1)})  # in the body's object
    assert at_bound.status_code == 400 and "nests" not in at_bound.text  # the schema's refusal, not the bound's
    beyond = await client.post("/api/ask", json=ASK | {"history": nested(MAX_JSON_DEPTH)})
    assert beyond.status_code == 400 and "nests more than" in beyond.json()["detail"]


MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
OVERSIZED = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "pad": "' + b"x" * 10_000_001 + b'"}'


async def test_a_json_body_over_the_limit_is_413_at_the_mcp_mount(client):
    r = await client.post("/mcp", content=OVERSIZED, headers=MCP_HEADERS)
    assert r.status_code == 413, (r.status_code, r.text[:200])
    assert "at most 10000000" in r.json()["detail"]


def test_a_chunked_json_body_is_counted_while_it_streams(services):
    """No Content-Length (the real server, chunked): the bytes are counted as they come."""
    pieces = (OVERSIZED[start:start + (1 << 20)] for start in range(0, len(OVERSIZED), 1 << 20))
    with serve_in_thread(create_app(services.settings, services)) as server:
        r = httpx.post(f"{server.url}/mcp", content=pieces, headers=MCP_HEADERS, timeout=60)
    assert r.status_code == 413, (r.status_code, r.text[:200])
    assert "more than 10000000" in r.json()["detail"]


async def test_an_unknown_filter_is_400_naming_the_known_ones(client):
    r = await client.post("/api/ask", json=ASK | {"filters": {"date": "2024-01-01"}})
    assert r.status_code == 400, r.text[:300]
    assert r.headers["content-type"].startswith("application/json")
    assert "'date'" in r.text and all(name in r.text for name in ("paths", "kinds", "modified_after", "modified_before"))
