"""A collection created with a display name in any language: the API makes its name, returns and lists
both, refuses a bad or taken title with its code, and uploads reach it by its name."""

from __future__ import annotations

import pytest

from indexes.collection_titles import title_hash


@pytest.fixture
def services(settings_factory, make_services):
    return make_services(settings_factory())


async def test_a_chinese_title_gets_a_name_and_both_are_listed(client, services):
    made = await client.post("/api/collections", json={"title": "员工手册"})
    assert made.status_code == 201
    assert made.json()["name"] == title_hash("员工手册") and made.json()["title"] == "员工手册"
    listed = (await client.get("/api/collections")).json()
    assert [(c["name"], c["title"]) for c in listed] == [(title_hash("员工手册"), "员工手册")]
    upload = await client.post(f"/api/collections/{made.json()['name']}/documents",
                               files={"files": ("规定.md", "# 年假\n\n每年十天。".encode(), "text/markdown")},
                               headers={"X-Requested-By": "test"})
    assert upload.status_code == 202


async def test_a_name_alone_is_its_own_title_and_both_may_be_given(client, services):
    assert (await client.post("/api/collections", json={"name": "notes"})).json()["title"] == "notes"
    both = (await client.post("/api/collections", json={"name": "hr", "title": "Human resources"})).json()
    assert (both["name"], both["title"]) == ("hr", "Human resources")


async def test_a_latin_title_whose_name_is_taken_gets_the_next_one(client, services):
    await client.post("/api/collections", json={"name": "team-notes"})
    made = (await client.post("/api/collections", json={"title": "Team notes"})).json()
    assert (made["name"], made["title"]) == ("team-notes-2", "Team notes")


async def test_a_taken_title_is_a_409_that_names_it(client, services):
    await client.post("/api/collections", json={"title": "员工手册"})
    again = await client.post("/api/collections", json={"title": " 员工手册 "})
    assert again.status_code == 409
    assert again.json()["code"] == "collection_exists" and again.json()["extra"] == {"name": "员工手册"}


@pytest.mark.parametrize("body, code", [
    ({"title": ""}, "invalid_collection_title"),
    ({"title": "x" * 65}, "invalid_collection_title"),
    ({"title": "a\u0000b"}, "invalid_collection_title"),
    ({}, "invalid_collection_name"),
    ({"name": "员工手册"}, "invalid_collection_name"),
])
async def test_bad_names_and_titles_are_400_with_their_code(client, services, body, code):
    bad = await client.post("/api/collections", json=body)
    assert bad.status_code == 400 and bad.json()["code"] == code
    if code == "invalid_collection_title":
        assert bad.json()["extra"] == {"limit": 64}


async def test_a_deleted_collections_title_is_free_again_while_its_rows_wait_for_the_purge(client, services):
    first = (await client.post("/api/collections", json={"title": "员工手册"})).json()["name"]
    assert (await client.delete(f"/api/collections/{first}")).status_code == 202  # renamed '~deleted-<id>', kept
    again = await client.post("/api/collections", json={"title": "员工手册"})
    assert again.status_code == 201 and again.json()["title"] == "员工手册"
    assert [c["title"] for c in (await client.get("/api/collections")).json()] == ["员工手册"]


async def test_a_title_is_compared_without_case_against_every_collections_title(client, services):
    await client.post("/api/collections", json={"name": "notes"})  # its own title
    taken = await client.post("/api/collections", json={"title": "NOTES"})
    assert taken.status_code == 409 and taken.json()["code"] == "collection_exists"
