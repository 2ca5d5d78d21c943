"""The store's engine: SQLite (WAL, foreign keys, the FTS5 tables beside the chunks) by default, or
PostgreSQL when a database URL is given (indexes/pg.py); the schema comes from the migrations."""

from __future__ import annotations

from pathlib import Path

from filelock import FileLock
from sqlalchemy import event, inspect, text
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel, create_engine

from indexes import migrations
from indexes import models  # noqa: F401  (registers the tables)
from indexes.lexical.cjk import CJK_DDL
from indexes.pg import PgDriver, is_postgres_url, make_pg_engine

SCHEMA_VERSION = 1

# One FTS5 table for every collection; rowid = chunk.id. Porter stemming measured best on SciFact
# (recipes/retrieval-calibration.md). It lives in the same database file, so a chunk and its lexical
# entry are written in one transaction.
FTS_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunk_fts USING fts5("
    "title, headings, body, path, collection_id UNINDEXED, "
    "tokenize='porter unicode61 remove_diacritics 2')"
)
# rank = BM25 with the title weighted 3x and headings 1.5x (title, headings, body, path).
FTS_RANK = "bm25(3.0, 1.5, 1.0, 1.0)"
SET_FTS_RANK = f"INSERT INTO chunk_fts(chunk_fts, rank) VALUES('rank', '{FTS_RANK}')"


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


# The wrapper of each dialect whose DB-API connection is not sqlite3's, by the dialect's name: the lookup
# costs no call on SQLite's path, which every read of a question takes several times.
DRIVER_WRAPPERS = {"postgresql": PgDriver}


def driver(conn):
    """The DB-API connection under a SQLAlchemy connection, with sqlite3's `execute`/`executemany`
    and placeholders (`?`, `:named`) on either engine."""
    raw = conn.connection.driver_connection
    wrapper = DRIVER_WRAPPERS.get(conn.dialect.name)
    return raw if wrapper is None else wrapper(raw)


def read_rows(engine: Engine, sql: str, params: tuple | dict = ()) -> list[tuple]:
    """All rows of one read, through the driver's connection itself: the question path's lookups skip
    SQLAlchemy's statement and result layers, which cost more than the lookups (sqlite3 takes `?` and
    `:named` parameters as they are)."""
    with engine.connect() as conn:
        return driver(conn).execute(sql, params).fetchall()


def make_store_engine(data_dir: Path, database_url: str | None = None) -> Engine:
    """The store's engine: `<data_dir>/store.db`, or the PostgreSQL database at database_url
    (migrated to the newest schema either way)."""
    if not database_url:
        return make_engine(Path(data_dir) / "store.db")
    if not is_postgres_url(database_url):
        raise ValueError("database URL: only postgresql+psycopg://... is supported (SQLite is the data dir's store.db)")
    engine = make_pg_engine(database_url)
    with engine.begin() as conn:
        migrations.upgrade(conn)
    return engine


def sqlite_engine(db_path: Path) -> Engine:
    """An engine on a SQLite file (created when missing): WAL, foreign keys, a 30 s busy timeout."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        f"sqlite:///{db_path}",
        connect_args={"check_same_thread": False, "timeout": 30},
    )
    event.listen(engine, "connect", _on_connect)
    return engine


def make_engine(db_path: Path) -> Engine:
    """Open (and create or migrate) the store at db_path.

    A server and its worker start together on a new store: SQLite runs the migrations' DDL outside any
    transaction, so each would see the other's half-made schema and make a table twice. A lock file beside
    the store lets one migrate while the other waits (PostgreSQL takes an advisory lock instead); once
    made, the lock file is only opened, so an up-to-date store still opens on a full disk."""
    engine = sqlite_engine(db_path)
    with FileLock(f"{db_path}.lock"), engine.begin() as conn:
        if migrations.current(conn) is None and set(inspect(conn).get_table_names()) & set(SQLModel.metadata.tables):
            # made before migrations: the additive path brings it to the models, then the head is stamped
            SQLModel.metadata.create_all(conn)
            add_missing_columns(conn)
        migrations.upgrade(conn)
        conn.execute(text(FTS_DDL))
        conn.execute(text(CJK_DDL))  # CJK text, by trigrams (indexes/lexical/cjk.py)
        # Opening a store that is up to date writes nothing, so it opens on a full disk too.
        if conn.execute(text("SELECT v FROM chunk_fts_config WHERE k = 'rank'")).scalar() != FTS_RANK:
            conn.execute(text(SET_FTS_RANK))
        version = conn.execute(text("PRAGMA user_version")).scalar_one()
        if version < SCHEMA_VERSION:
            conn.execute(text(f"PRAGMA user_version={SCHEMA_VERSION}"))
    return engine
