"""The SQLite engine: WAL, foreign keys, the schema and the FTS5 table kept beside the chunks."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel, create_engine

from indexes import models  # noqa: F401  (registers the tables)
from indexes.cjk import CJK_DDL

SCHEMA_VERSION = 1

# One FTS5 table for every collection; rowid = chunk.id. Porter stemming measured best on SciFact
# (recipes/retrieval-calibration.md). It lives in the same database file, so a chunk and its lexical
# entry are written in one transaction.
FTS_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunk_fts USING fts5("
    "title, headings, body, path, collection_id UNINDEXED, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)


def _on_connect(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def add_missing_columns(conn) -> None:
    """Additive migration: columns added to a table since the file was created get added to it.

    `create_all` creates missing tables but never alters existing ones; every column added later has a
    default (or is nullable), so `ALTER TABLE ... ADD COLUMN` with that default is all it takes.
    """
    for table in SQLModel.metadata.sorted_tables:
        have = {row[1] for row in conn.execute(text(f'PRAGMA table_info("{table.name}")'))}
        for column in table.columns:
            if column.name in have:
                continue
            ddl = column.type.compile(dialect=conn.dialect)
            default = getattr(column.default, "arg", None)
            if isinstance(default, bool):
                ddl += f" DEFAULT {int(default)}"
            elif isinstance(default, (int, float)):
                ddl += f" DEFAULT {default}"
            elif isinstance(default, str):
                ddl += " DEFAULT '" + default.replace("'", "''") + "'"
            conn.execute(text(f'ALTER TABLE "{table.name}" ADD COLUMN "{column.name}" {ddl}'))


def read_rows(engine: Engine, sql: str, params: tuple | dict = ()) -> list[tuple]:
    """All rows of one read, through the sqlite3 connection itself: the question path's lookups skip
    SQLAlchemy's statement and result layers, which cost more than the lookups (sqlite3 takes `?` and
    `:named` parameters as they are)."""
    with engine.connect() as conn:
        return conn.connection.driver_connection.execute(sql, params).fetchall()


def make_engine(db_path: Path) -> Engine:
    """Open (and create or migrate) the store at db_path."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        f"sqlite:///{db_path}",
        connect_args={"check_same_thread": False, "timeout": 30},
    )
    event.listen(engine, "connect", _on_connect)
    SQLModel.metadata.create_all(engine)
    with engine.begin() as conn:
        add_missing_columns(conn)
        conn.execute(text(FTS_DDL))
        conn.execute(text(CJK_DDL))  # CJK text, by trigrams (indexes/cjk.py)
        # rank = BM25 with the title weighted 3x and headings 1.5x (title, headings, body, path).
        conn.execute(text("INSERT INTO chunk_fts(chunk_fts, rank) VALUES('rank', 'bm25(3.0, 1.5, 1.0, 1.0)')"))
        version = conn.execute(text("PRAGMA user_version")).scalar_one()
        if version < SCHEMA_VERSION:
            conn.execute(text(f"PRAGMA user_version={SCHEMA_VERSION}"))
    return engine
