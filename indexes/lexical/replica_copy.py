"""The full-text index of a store on PostgreSQL: a per-replica FTS5 copy kept in step with the rows.

PostgreSQL holds the truth (chunks, documents, collections); each replica keeps `<data_dir>/lexical.db`,
a SQLite file with the FTS5 tables of `indexes/lexical/fts5.py` and the few columns its queries and the
search filters read (chunk -> document -> collection, path, kind, mtime). So there is one lexical code
path (BM25, the CJK trigram table, the bounded candidate set) whichever database holds the rows.

Keeping in step uses the collections' generation counter, which every change to a collection's chunks
bumps in the same transaction: before each search the copy compares the store's generations with its
own (one small query), and for a collection that moved it reads the store's chunk ids in one
consistent snapshot, removes the rows it holds that are gone and indexes the ones it lacks. Chunk ids
are never reused (a changed document gets new chunks), so the difference of the two id sets is exactly
what changed. A new replica, or one whose file was lost, fills its copy the same way from nothing.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Engine

from indexes.lexical import fts5 as lexical
from indexes.lexical.cjk import CJK_DDL
from indexes.db import FTS_DDL, SET_FTS_RANK, driver, sqlite_engine
from indexes.lexical.fts5 import CHUNK_TEXT_SQL, ChunkText, Lexical

COPY_DDL = (
    "CREATE TABLE IF NOT EXISTS collection (id INTEGER PRIMARY KEY, generation INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS document (id INTEGER PRIMARY KEY, collection_id INTEGER NOT NULL, path TEXT NOT NULL, "
    "title TEXT NOT NULL DEFAULT '', kind TEXT NOT NULL DEFAULT '', mtime REAL NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS ix_document_collection_id ON document (collection_id)",
    "CREATE TABLE IF NOT EXISTS chunk (id INTEGER PRIMARY KEY, document_id INTEGER NOT NULL, collection_id INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ix_chunk_collection_id ON chunk (collection_id)",
    "CREATE INDEX IF NOT EXISTS ix_chunk_document_id ON chunk (document_id)",
    FTS_DDL,
    CJK_DDL,
    SET_FTS_RANK,
)
BATCH = 2000


def _marks(ids: list[int]) -> str:
    return ",".join(str(int(i)) for i in ids)


class LexicalCopy:
    """A replica's FTS5 copy of the store's chunks, brought up to the store's generations by `sync`."""

    def __init__(self, store_engine: Engine, path: Path) -> None:
        self.store_engine = store_engine
        self.engine = sqlite_engine(path)
        with self.engine.begin() as conn:
            for ddl in COPY_DDL:
                conn.execute(text(ddl))
        self._lock = threading.Lock()
        self.synced_chunks = 0  # chunk rows indexed or removed by syncs (observable in tests)

    def sync(self) -> bool:
        """Bring every collection to the store's generation; True when anything changed."""
        with self._lock:
            with self.store_engine.connect() as probe:
                store_gens = dict(driver(probe).execute("SELECT id, generation FROM collection").fetchall())
            have = dict(read_all(self.engine, "SELECT id, generation FROM collection"))
            if store_gens == have:
                return False
            # One snapshot of the store for the whole sync, so ids, texts and generations agree.
            with self.store_engine.connect().execution_options(isolation_level="REPEATABLE READ") as src, \
                    self.engine.begin() as dst:
                s, d = driver(src), dst.connection.driver_connection
                store_gens = dict(s.execute("SELECT id, generation FROM collection").fetchall())
                for cid in have.keys() - store_gens.keys():
                    self._drop_collection(d, cid)
                for cid, gen in store_gens.items():
                    if have.get(cid) != gen:
                        self._sync_collection(s, d, int(cid))
                        d.execute("INSERT INTO collection (id, generation) VALUES (?, ?) "
                                  "ON CONFLICT(id) DO UPDATE SET generation = excluded.generation", (cid, gen))
            return True

    def _drop_collection(self, d, cid: int) -> None:
        lexical.remove_collection_rows(d, cid)
        d.execute("DELETE FROM chunk WHERE collection_id = ?", (cid,))
        d.execute("DELETE FROM document WHERE collection_id = ?", (cid,))
        d.execute("DELETE FROM collection WHERE id = ?", (cid,))

    def _sync_collection(self, s, d, cid: int) -> None:
        """Make the copy's rows of one collection those of the store snapshot `s`."""
        in_store = dict(s.execute("SELECT id, document_id FROM chunk WHERE collection_id = ?", (cid,)).fetchall())
        held = {int(r[0]) for r in d.execute("SELECT id FROM chunk WHERE collection_id = ?", (cid,)).fetchall()}
        removed = sorted(held - in_store.keys())
        added = sorted(in_store.keys() - held)
        lexical.remove_rows(d, removed)
        for start in range(0, len(removed), BATCH):
            d.execute(f"DELETE FROM chunk WHERE id IN ({_marks(removed[start:start + BATCH])})")
        # Documents are few next to chunks, and their metadata (title, mtime) can change in place.
        d.execute("DELETE FROM document WHERE collection_id = ?", (cid,))
        d.executemany("INSERT INTO document (id, collection_id, path, title, kind, mtime) VALUES (?,?,?,?,?,?)",
                      s.execute("SELECT id, collection_id, path, title, kind, mtime FROM document "
                                "WHERE collection_id = ?", (cid,)).fetchall())
        for start in range(0, len(added), BATCH):
            part = added[start:start + BATCH]
            d.executemany("INSERT INTO chunk (id, document_id, collection_id) VALUES (?,?,?)",
                          [(i, in_store[i], cid) for i in part])
            texts = [ChunkText(*row) for row in s.execute(f"{CHUNK_TEXT_SQL} WHERE c.id IN ({_marks(part)})").fetchall()]
            lexical.add_rows(d, texts)
        self.synced_chunks += len(added) + len(removed)

    def close(self) -> None:
        self.engine.dispose()


def read_all(engine: Engine, sql: str) -> list[tuple]:
    with engine.connect() as conn:
        return conn.connection.driver_connection.execute(sql).fetchall()


def _after_sync(read: Callable) -> Callable:
    """The index's read, made once the copy has caught up with the store."""
    @functools.wraps(read)
    def synced(self: "CopiedLexical", *args, **kwargs):
        self.copy.sync()
        return read(self, *args, **kwargs)
    return synced


class CopiedLexical(Lexical):
    """BM25 over a replica's FTS5 copy, synced with the store before each read."""

    def __init__(self, copy: LexicalCopy, **kwargs) -> None:
        super().__init__(copy.engine, **kwargs)
        self.copy = copy

    def sync(self) -> bool:
        return self.copy.sync()

    search = _after_sync(Lexical.search)
    scores = _after_sync(Lexical.scores)
    rows_matching = _after_sync(Lexical.rows_matching)
    heading_matches = _after_sync(Lexical.heading_matches)
