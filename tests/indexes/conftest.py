"""The store's tests run against both engines: SQLite (the default) and PostgreSQL (a database of the
session's throwaway cluster, emptied before each test), with the same expectations."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def store_database(postgres):
    return postgres.create_database("store_tests")


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    from indexes.store import Store

    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("store_database")
        empty_database(url)
    s = Store(tmp_path / "data", database_url=url)
    yield s
    s.close()


def empty_database(url: str) -> None:
    """Every table of the store emptied and its ids restarted (the schema stays)."""
    from sqlalchemy import create_engine, text
    from sqlmodel import SQLModel

    from indexes import models  # noqa: F401

    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            have = set(conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).scalars())
            tables = ", ".join(f'"{t}"' for t in SQLModel.metadata.tables if t in have)
            if tables:
                conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    finally:
        engine.dispose()
