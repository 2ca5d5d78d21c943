"""Schema migrations: the revisions make exactly the models' tables on both engines; a store made
before migrations is recorded at the newest revision; `assistant db upgrade` and `status`."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect
from sqlmodel import SQLModel

from assistant.cli import main
from indexes import migrations
from indexes.db import make_store_engine, sqlite_engine


def new_engine(request, tmp_path, name: str):
    """An empty database called name on the engine the fixture's parameter names (sqlite or postgres)."""
    if request.param == "sqlite":
        return sqlite_engine(tmp_path / f"{name}.db")
    return create_engine(request.getfixturevalue("postgres").create_database(name))


@pytest.fixture(params=["sqlite", "postgres"])
def empty_engine(request, tmp_path):
    engine = new_engine(request, tmp_path, "migrations_empty")
    yield engine
    engine.dispose()


def test_the_migrations_make_the_models_schema(empty_engine):
    """Fails when a table or column is added to indexes/models.py without a revision
    (`assistant db revision -m ...` writes it)."""
    with empty_engine.begin() as conn:
        assert migrations.upgrade(conn) is None
    with empty_engine.connect() as conn:
        assert migrations.current(conn) == migrations.head()
        assert migrations.differences(conn) == []
        assert set(SQLModel.metadata.tables) <= set(inspect(conn).get_table_names())


def test_a_store_made_before_migrations_is_stamped_at_the_newest_revision(tmp_path):
    legacy = sqlite_engine(tmp_path / "data" / "store.db")
    SQLModel.metadata.create_all(legacy)  # how stores were made before migrations
    legacy.dispose()
    engine = make_store_engine(tmp_path / "data")
    with engine.connect() as conn:
        assert migrations.current(conn) == migrations.head()
        assert migrations.differences(conn) == []
    engine.dispose()


def test_db_upgrade_and_status_commands(tmp_path, pg_url, monkeypatch, capsys):
    assert main(["db", "upgrade", "--data-dir", str(tmp_path / "d")]) == 0
    assert f"at revision {migrations.head()}" in capsys.readouterr().out
    monkeypatch.setenv("ASSISTANT_DATABASE_URL", pg_url)
    assert main(["db", "upgrade", "--data-dir", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert f"at revision {migrations.head()}" in out and "127.0.0.1" in out
    assert main(["db", "status", "--data-dir", str(tmp_path / "d")]) == 0
    assert "differs" not in capsys.readouterr().out


def test_a_database_url_that_is_not_postgres_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ASSISTANT_DATABASE_URL", "mysql://x@h/db")
    assert main(["db", "upgrade", "--data-dir", str(tmp_path / "d")]) == 2
    assert "postgresql+psycopg" in capsys.readouterr().err


def _open_store(path: str, barrier, results) -> None:
    from indexes.db import make_engine

    barrier.wait()
    try:
        make_engine(Path(path)).dispose()
        results.put("opened")
    except Exception as error:  # what the process met, for the assertion below
        results.put(repr(error))


def test_processes_opening_a_new_store_together_all_open_it(tmp_path):
    """A server and its worker start at once on an empty data folder: each opens the new store, neither
    makes a table the other is making (four processes let go together, as the server and worker are)."""
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    path = str(tmp_path / "store.db")
    processes = [ctx.Process(target=_open_store, args=(path, barrier, results)) for _ in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [results.get(timeout=5) for _ in processes] == ["opened"] * 4
    with sqlite_engine(Path(path)).connect() as conn:
        assert migrations.current(conn) == migrations.head()
        assert migrations.differences(conn) == []
