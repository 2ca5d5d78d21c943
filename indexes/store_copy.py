"""Copying a store into another database (a SQLite data dir into PostgreSQL), rows and ids as they are.

Every table of the models is copied, parents before children, in batches; ids are kept, so chunk ids,
the FAISS files keyed by them and jobs' references stay valid. The target must be migrated and empty
(a copy never merges into a live store). PostgreSQL's id sequences are moved past the copied ids.
The derived indexes are not copied: each replica of the target builds its FTS5 copy and FAISS
indexes from the rows.
"""

from __future__ import annotations

from typing import Callable

from sqlalchemy import func, insert, select, text
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from indexes import models  # noqa: F401  (registers the tables)
from indexes.db import driver
from indexes.lexical.postgres import fill_missing

BATCH = 2000


class CopyError(ValueError):
    """The copy cannot start (the target already holds rows); the message says which."""


def table_counts(engine: Engine) -> dict[str, int]:
    """Rows of every table of the models."""
    with engine.connect() as conn:
        return {t.name: int(conn.execute(select(func.count()).select_from(t)).scalar_one())
                for t in SQLModel.metadata.sorted_tables}


def copy_store(source: Engine, target: Engine, *, batch: int = BATCH,
               progress: Callable[[str, int], None] | None = None) -> dict[str, int]:
    """Copy every row of source into the empty target; returns the rows copied per table."""
    busy = {name: n for name, n in table_counts(target).items() if n}
    if busy:
        raise CopyError("the target store is not empty: " + ", ".join(f"{k} has {v} rows" for k, v in busy.items()))
    copied: dict[str, int] = {}
    with source.connect() as src, target.begin() as dst:
        for table in SQLModel.metadata.sorted_tables:
            n = 0
            result = src.execution_options(stream_results=True).execute(select(table).order_by(*table.primary_key))
            for rows in result.mappings().partitions(batch):
                dst.execute(insert(table), [dict(r) for r in rows])
                n += len(rows)
                if progress is not None:
                    progress(table.name, n)
            copied[table.name] = n
        if dst.dialect.name == "postgresql":
            fill_missing(driver(dst))  # the chunks' full-text columns (indexes/lexical/postgres.py)
            for table in SQLModel.metadata.sorted_tables:
                if "id" in table.columns and table.columns["id"].primary_key:
                    dst.execute(text(
                        f"SELECT setval(pg_get_serial_sequence('\"{table.name}\"', 'id'), "
                        f"coalesce((SELECT max(id) FROM \"{table.name}\"), 1), "
                        f"(SELECT max(id) FROM \"{table.name}\") IS NOT NULL)"))
    return copied
