"""The SQLite engine: WAL, foreign keys, the schema and the FTS5 table kept beside the chunks."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel, create_engine

from indexes import models  # noqa: F401  (registers the tables)

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
        conn.execute(text(FTS_DDL))
        # rank = BM25 with the title weighted 3x and headings 1.5x (title, headings, body, path).
        conn.execute(text("INSERT INTO chunk_fts(chunk_fts, rank) VALUES('rank', 'bm25(3.0, 1.5, 1.0, 1.0)')"))
        version = conn.execute(text("PRAGMA user_version")).scalar_one()
        if version < SCHEMA_VERSION:
            conn.execute(text(f"PRAGMA user_version={SCHEMA_VERSION}"))
    return engine
