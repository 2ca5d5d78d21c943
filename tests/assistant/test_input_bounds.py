"""Hostile input gets a 400 that says what is wrong (never a 500 or an `internal_error` event), names are
matched whole, and error messages carry no exception text."""

from __future__ import annotations

import logging
from urllib.parse import quote

import pytest

from assistant.rag import error_event
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
