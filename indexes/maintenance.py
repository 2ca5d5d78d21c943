"""Keeping the derived indexes honest, and deleting large collections without blocking anyone.

`check_store` runs when a worker starts: every FTS5 row must belong to a chunk and every chunk must
have its FTS5 row, every document's chunk count must match its rows, and every collection's FAISS
file must be at the store's generation and hold exactly its chunks; whatever disagrees is repaired
from SQLite (no re-embedding: the vectors are stored with the chunks).

A deleted collection is first renamed to a tombstone (`~deleted-<id>`, a name no one can ask for)
in one short transaction, so it disappears at once; `purge_collection` then removes its rows in small
transactions, never holding the write lock for long.
"""

from __future__ import annotations

import threading

from sqlalchemy import text
from sqlmodel import select

from indexes.lexical.fts5 import CHUNK_TEXT_SQL, ChunkText, add_rows, remove_rows
from indexes.models import Collection, IngestJob
from indexes.store import Store

TOMBSTONE_PREFIX = "~deleted-"
PURGE_BATCH = 2000


def is_tombstone(name: str) -> bool:
    return name.startswith(TOMBSTONE_PREFIX)


def _chunk_texts(raw, where: str = "") -> list[ChunkText]:
    return [ChunkText(*row) for row in raw.execute(f"{CHUNK_TEXT_SQL} {where}").fetchall()]


def check_fts(store: Store) -> list[str]:
    """Make the FTS5 table hold exactly one row per chunk."""
    with store.engine.begin() as conn:
        raw = conn.connection.driver_connection
        missing = [r[0] for r in raw.execute("SELECT id FROM chunk WHERE id NOT IN (SELECT rowid FROM chunk_fts)")]
        orphans = [r[0] for r in raw.execute("SELECT rowid FROM chunk_fts WHERE rowid NOT IN (SELECT id FROM chunk)")]
        remove_rows(raw, orphans, tables=("chunk_fts",))
        for start in range(0, len(missing), 500):
            marks = ",".join(str(int(i)) for i in missing[start : start + 500])
            texts = _chunk_texts(raw, f"WHERE c.id IN ({marks})")
            remove_rows(raw, [t.chunk_id for t in texts], tables=("chunk_cjk",))  # added again with their FTS5 row
            add_rows(raw, texts)
    repairs = []
    if orphans:
        repairs.append(f"removed {len(orphans)} full-text rows without a chunk")
    if missing:
        repairs.append(f"added {len(missing)} missing full-text rows")
    return repairs + check_cjk(store)


def check_cjk(store: Store) -> list[str]:
    """The trigram table: no row without its chunk; filled from the chunks when a store predates it."""
    with store.engine.begin() as conn:
        raw = conn.connection.driver_connection
        orphans = [r[0] for r in raw.execute("SELECT rowid FROM chunk_cjk WHERE rowid NOT IN (SELECT id FROM chunk)")]
        remove_rows(raw, orphans, tables=("chunk_cjk",))
        added = 0
        if raw.execute("SELECT count(*) FROM chunk_cjk").fetchone()[0] == 0:
            added = add_rows(raw, _chunk_texts(raw), fts=False)
    return ([f"removed {len(orphans)} CJK rows without a chunk"] if orphans else []) + (
        [f"indexed {added} chunks with CJK text by trigrams"] if added else [])


def check_counts(store: Store) -> list[str]:
    """A document's n_chunks must be its number of chunk rows."""
    with store.engine.begin() as conn:
        wrong = conn.execute(text(
            "SELECT d.id, d.n_chunks, (SELECT count(*) FROM chunk c WHERE c.document_id = d.id) AS n FROM document d "
            "WHERE d.n_chunks != (SELECT count(*) FROM chunk c WHERE c.document_id = d.id)")).all()
        for doc_id, _, n in wrong:
            conn.execute(text("UPDATE document SET n_chunks = :n WHERE id = :d"), {"n": n, "d": doc_id})
    return [f"corrected the chunk count of {len(wrong)} documents"] if wrong else []


def check_vectors(store: Store) -> list[str]:
    """Each collection's FAISS index at the store's generation, holding exactly its chunks."""
    repairs = []
    with store.session() as s:
        colls = [c for c in s.exec(select(Collection)).all() if c.dim and not is_tombstone(c.name)]
    for coll in colls:
        before = store.vectors.rebuilds
        index = store.vector_index(coll)
        rows, _ = store.counts(coll)
        if len(index) != rows:
            store.vectors.drop(coll.id)
            store.vector_index(coll)
        if store.vectors.rebuilds != before:
            repairs.append(f"rebuilt the vector index of {coll.name!r} from the store")
        store.save_vectors(coll)
    return repairs


def check_store(store: Store) -> list[str]:
    """Run every check; returns a line per repair made (empty when all was consistent).

    On PostgreSQL the full-text and vector indexes belong to each replica, which keeps them in step
    with the rows itself; only the rows are checked here."""
    if store.postgres:
        return check_counts(store)
    return check_fts(store) + check_counts(store) + check_vectors(store)


def tombstone_collection(store: Store, collection: Collection) -> IngestJob:
    """Hide a collection at once, cancel its jobs, and queue the purge of its rows; returns that job."""
    from indexes.jobs import Jobs

    jobs = Jobs(store.engine)
    with store.engine.begin() as conn:
        conn.execute(text("UPDATE collection SET name = :n WHERE id = :i"),
                     {"n": f"{TOMBSTONE_PREFIX}{collection.id}", "i": collection.id})
    jobs.cancel_collection(collection.id)
    store.vectors.drop(collection.id)
    return jobs.enqueue(collection.id, collection.name, {"collection_id": collection.id}, kind="purge")


def purge_collection(store: Store, collection_id: int, *, batch: int = PURGE_BATCH,
                     stop: threading.Event | None = None) -> bool:
    """Delete a tombstoned collection's rows in small transactions; True when it is gone entirely,
    False when stopped first (a later purge goes on from there)."""
    while True:
        if stop is not None and stop.is_set():
            return False
        with store.engine.begin() as conn:
            ids = [r[0] for r in conn.execute(text(
                "SELECT id FROM chunk WHERE collection_id = :c LIMIT :n"), {"c": collection_id, "n": batch}).all()]
            if not ids:
                break
            if not store.postgres:  # each replica's FTS5 copy follows by itself
                remove_rows(conn.connection.driver_connection, ids)
            marks = ",".join(str(int(i)) for i in ids)
            conn.execute(text(f"DELETE FROM chunk WHERE id IN ({marks})"))
    with store.engine.begin() as conn:
        conn.execute(text("DELETE FROM document WHERE collection_id = :c"), {"c": collection_id})
        conn.execute(text("DELETE FROM collection WHERE id = :c"), {"c": collection_id})
    store.vectors.drop(collection_id)
    return True
