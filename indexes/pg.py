"""The store on PostgreSQL: the engine, and the few driver-level differences from SQLite.

Everything above the store speaks one SQL: sqlmodel for most of it, and plain statements written for
sqlite3 (`?` and `:name` placeholders) on the hot paths. On PostgreSQL those statements go through
`PgDriver`, which rewrites the placeholders for psycopg and offers sqlite3's `execute`/`executemany`
on a connection, so no caller needs a second code path.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from sqlalchemy import create_engine
from sqlalchemy.engine import Engine

_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and url.split(":", 1)[0].split("+", 1)[0] in ("postgresql", "postgres")


def is_postgres(engine_or_conn: Any) -> bool:
    return engine_or_conn.dialect.name == "postgresql"


def pg_sql(sql: str) -> str:
    """A statement written for sqlite3 (`?` and `:name` placeholders) in psycopg's style."""
    sql = sql.replace("%", "%%").replace("?", "%s")
    return _NAMED.sub(r"%(\1)s", sql)


def redact(url: str) -> str:
    """The URL with its password hidden, for messages and logs."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


class PgDriver:
    """sqlite3's connection methods over a psycopg connection (placeholders rewritten)."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    def execute(self, sql: str, params: tuple | dict | None = ()):
        cur = self.connection.cursor()
        cur.execute(pg_sql(sql), params if params else None)
        return cur

    def executemany(self, sql: str, rows: Iterable[tuple]):
        cur = self.connection.cursor()
        cur.executemany(pg_sql(sql), list(rows))
        return cur


def allocate_ids(raw: PgDriver, table: str, n: int) -> list[int]:
    """n ids from the table's sequence: unique across concurrent writers (never `max(id) + 1`)."""
    if n <= 0:
        return []
    rows = raw.execute(
        f"SELECT nextval(pg_get_serial_sequence('{table}', 'id')) FROM generate_series(1, ?)", (n,)
    ).fetchall()
    return sorted(int(r[0]) for r in rows)


def make_pg_engine(url: str) -> Engine:
    """An engine on a PostgreSQL store: sessions in UTC, connections checked before use (a server
    restarted under a long-running replica is reconnected to, not reported as an error)."""
    return create_engine(
        url,
        pool_pre_ping=True,
        pool_size=8,
        max_overflow=8,
        connect_args={"options": "-c timezone=UTC", "connect_timeout": 10},
    )
