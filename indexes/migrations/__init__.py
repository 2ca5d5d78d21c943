"""Schema migrations of the store (Alembic), for SQLite and PostgreSQL alike.

`upgrade` brings a store to the newest revision; it runs when a store is opened (so at server and
worker start) and as `assistant db upgrade`. A store made before migrations existed was kept in step
with the models by adding missing columns; once that has run it matches the newest revision, which
is then recorded without running anything. `differences` lists what the models have that the
migrations do not make (a test fails on any): a table or column added to `indexes/models.py` needs a
revision here (`assistant db revision -m "what changed"` writes one from the difference).
"""

from __future__ import annotations

import functools
from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

HERE = Path(__file__).resolve().parent
# Tables that are not SQLModel tables: SQLite's FTS5 tables (and their shadow tables) live beside the
# rows on SQLite and in each replica's own copy on PostgreSQL; migrations leave them alone.
DERIVED_PREFIXES = ("chunk_fts", "chunk_cjk")
# The chunk's search columns on PostgreSQL (indexes/lexical/postgres.py) and their indexes: made by a
# revision, written by the store, unknown to the models (SQLite has no such types).
DERIVED_NAMES = ("lexical_vector", "lexical_cjk", "ix_chunk_lexical_vector", "ix_chunk_lexical_cjk")
LOCK_KEY = 7_204_319_451  # the advisory lock replicas starting together take around an upgrade


def include_object(obj, name, type_, reflected, compare_to) -> bool:
    if type_ in ("column", "index") and name in DERIVED_NAMES:
        return False
    return not (type_ == "table" and name and name.startswith(DERIVED_PREFIXES))


def config(conn: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    cfg.attributes["connection"] = conn
    return cfg


@functools.cache
def head() -> str:
    return ScriptDirectory.from_config(config()).get_current_head()


def current(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


def upgrade(conn: Connection) -> str | None:
    """Bring the store behind this connection (inside its transaction) to the newest revision; returns
    the revision it was at before (None for a new or unversioned store)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": LOCK_KEY})
    before = current(conn)
    if before == head():
        return before
    tables = set(inspect(conn).get_table_names())
    model_tables = set(SQLModel.metadata.tables)
    if before is None and tables & model_tables:
        command.stamp(config(conn), "head")  # made before migrations and brought to the models already
    else:
        command.upgrade(config(conn), "head")
    return before


def differences(conn: Connection) -> list:
    """What the models define that the store's schema lacks or has otherwise (empty when in step)."""
    ctx = MigrationContext.configure(conn, opts={"include_object": include_object, "compare_type": True})
    return compare_metadata(ctx, SQLModel.metadata)


def revision(conn: Connection, message: str) -> str:
    """Write a new revision file from the difference between the models and this (upgraded) store."""
    script = command.revision(config(conn), message=message, autogenerate=True)
    return script.path if script is not None else ""
