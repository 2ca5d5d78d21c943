"""Every error response carries a stable machine `code` beside Litestar's status_code, detail and extra,
so that a client can say the error in its own words (the page does, in its language)."""

from __future__ import annotations

import pytest


@pytest.fixture
def allowed(tmp_path):
    root = tmp_path / "shared"
    root.mkdir()
    return root


@pytest.fixture
def services(settings_factory, make_services, allowed):
    return make_services(settings_factory(ingest={"allowed_roots": [str(allowed)]}, server={"max_question_chars": 50}))


async def test_collection_errors_name_their_code(client, services):
    assert (await client.post("/api/collections", json={"name": "notes"})).status_code == 201
    again = await client.post("/api/collections", json={"name": "notes"})
    assert again.status_code == 409
    assert again.json() == {"status_code": 409, "detail": "collection 'notes' already exists", "code": "collection_exists",
                            "extra": {"name": "notes"}}

    bad = await client.post("/api/collections", json={"name": "笔记"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_collection_name"
    assert "invalid collection name" in bad.json()["detail"]

    missing = await client.get("/api/collections/nowhere/documents")
    assert missing.status_code == 404 and missing.json()["code"] == "collection_not_found"


async def test_question_errors_name_their_code_and_the_limit(client, services):
    await client.post("/api/collections", json={"name": "notes"})
    empty = await client.post("/api/ask", json={"question": "  ", "collection": "notes"})
    assert empty.status_code == 400 and empty.json()["code"] == "question_empty"
    long = await client.post("/api/ask", json={"question": "why " * 20, "collection": "notes"})
    assert long.status_code == 400
    assert long.json()["code"] == "question_too_long"
    assert long.json()["extra"] == {"length": 79, "limit": 50}  # the numbers a client's own sentence needs
    assert "too long" in long.json()["detail"]


async def test_server_folder_errors_name_their_code(client, services, allowed, tmp_path):
    async def code_of(path: str) -> tuple[int, str]:
        r = await client.post("/api/collections/notes/sources", json={"path": path})
        return r.status_code, r.json()["code"]

    assert await code_of("relative/folder") == (400, "path_not_absolute")
    assert await code_of(str(tmp_path)) == (403, "path_outside_allowed")
    assert await code_of(str(allowed / "nothing-here")) == (404, "path_not_found")


async def test_other_errors_get_the_code_of_their_status(client, services):
    """Litestar's validation (its field list kept in `extra`), unknown routes, and the browser defences'
    refusals, which answer before any route."""
    invalid = await client.post("/api/collections", json={"name": ["x"]})
    assert invalid.status_code == 400 and invalid.json()["code"] == "invalid_request"
    assert isinstance(invalid.json()["extra"], list) and invalid.json()["extra"]
    nowhere = await client.get("/api/nowhere")
    assert nowhere.status_code == 404 and nowhere.json()["code"] == "not_found"
    wrong_type = await client.post("/api/collections", content=b"name=x", headers={"Content-Type": "text/plain"})
    assert wrong_type.status_code == 415 and wrong_type.json()["code"] == "unsupported_media_type"
