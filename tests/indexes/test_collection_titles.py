"""Collections titled in any language: the title checked, the API name made from it (readable ASCII where
there is some, a stable hash where letters were lost, unique), kept by the store on both engines, and
given to collections made before titles existed by their migration."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from alembic import command

from indexes import migrations
from indexes.collection_titles import TitleError, check_title, name_for_title, title_hash, unique_name
from indexes.store import COLLECTION_NAME
from tests.indexes.test_migrations import new_engine


@pytest.mark.parametrize("title, name", [
    ("Team handbook", "team-handbook"),
    ("Café notes 2026", "cafe-notes-2026"),
    ("Q3 report (final).pdf", "q3-report-final-.pdf"),
])
def test_a_latin_title_gives_a_readable_name(title, name):
    assert name_for_title(title) == name
    assert COLLECTION_NAME.match(name)


def test_a_title_with_no_latin_letter_gives_a_stable_hash():
    name = name_for_title("员工手册")
    assert name == title_hash("员工手册") and len(name) == 8 and COLLECTION_NAME.match(name)
    assert name_for_title("员工手册") == name  # stable: the same title, the same name
    assert name_for_title("财务制度") != name


def test_letters_lost_from_a_mixed_title_are_told_apart_by_the_hash():
    first, second = name_for_title("员工手册 2026"), name_for_title("财务制度 2026")
    assert first.startswith("2026-") and second.startswith("2026-") and first != second
    assert all(COLLECTION_NAME.match(n) for n in (first, second))


def test_a_long_title_still_gives_a_valid_name():
    name = name_for_title("Handbook " * 7 + "员工")
    assert COLLECTION_NAME.match(name) and len(name) <= 64


def test_a_taken_name_gets_a_number():
    taken = {"notes", "notes-2"}
    assert unique_name("notes", taken.__contains__) == "notes-3"
    assert unique_name("free", taken.__contains__) == "free"
    assert COLLECTION_NAME.match(unique_name("x" * 64, {"x" * 64}.__contains__))


@pytest.mark.parametrize("title, why", [
    ("", "may not be empty"),
    ("   ", "may not be empty"),
    ("a" * 65, "at most 64 characters (65 given)"),
    ("line\nbreak", "control or invisible"),
    ("zero\u200bwidth", "control or invisible"),
])
def test_unusable_titles_are_refused_with_the_reason(title, why):
    with pytest.raises(TitleError, match=why.replace("(", r"\(").replace(")", r"\)")):
        check_title(title)


def test_a_title_is_kept_trimmed_in_any_language():
    assert check_title("  员工 手册  ") == "员工 手册"
    assert check_title("é" * 64) == "é" * 64


def test_the_store_keeps_the_title_on_both_engines(store):
    store.ensure_collection(name_for_title("员工手册"), "m", 8, "员工手册")
    store.ensure_collection("plain", "m", 8)
    listed = {c["name"]: c["title"] for c in store.list_collections()}
    assert listed == {title_hash("员工手册"): "员工手册", "plain": "plain"}
    assert store.get_collection(title_hash("员工手册")).title == "员工手册"


def test_collections_are_listed_by_title(store):
    store.ensure_collection("b-name", "m", 8, "Alpha")
    store.ensure_collection("a-name", "m", 8, "Beta")
    assert [c["name"] for c in store.list_collections()] == ["b-name", "a-name"]


@pytest.fixture(params=["sqlite", "postgres"])
def engine_at_0006(request, tmp_path):
    engine = new_engine(request, tmp_path, "migrations_titles")
    with engine.begin() as conn:
        command.upgrade(migrations.config(conn), "0006")
        conn.execute(text("INSERT INTO collection (name, created_at, generation, embedder, dim) "
                          "VALUES ('handbook', CURRENT_TIMESTAMP, 0, 'm', 8)"))
    yield engine
    engine.dispose()


def test_collections_made_before_titles_are_titled_by_their_name(engine_at_0006):
    with engine_at_0006.begin() as conn:
        assert migrations.upgrade(conn) == "0006"
    with engine_at_0006.connect() as conn:
        assert conn.execute(text("SELECT title FROM collection WHERE name = 'handbook'")).scalar_one() == "handbook"
        assert migrations.differences(conn) == []
