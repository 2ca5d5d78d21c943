"""The chunk rows of a write: ids allocated, each chunk inserted with its embedding and its full-text row
(FTS5 rows beside it in SQLite, the search columns in the same statement in PostgreSQL), and deleted again.

Inserted with `executemany` inside the store's transaction (indexes/store.py), never one ORM object at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sqlalchemy import delete
from sqlmodel import Session

from indexes.lexical import fts5 as lexical
from indexes.lexical import postgres as pg_lexical
from indexes.lexical.fts5 import ChunkText
from indexes.location import columns
from indexes.models import Chunk, Collection, Document
from indexes.pg import PgDriver, allocate_ids, is_postgres
from indexes.records import NewChunk, SourceInfo


@dataclass
class DocumentWrite:
    """One document of a bulk write: the source, its chunks, their vectors, and how it went."""

    source: SourceInfo
    chunks: list[NewChunk]
    vectors: np.ndarray
    status: str = "ok"
    error: str | None = None


def checked_vectors(item: DocumentWrite) -> np.ndarray:
    """The item's vectors as float32 [chunks, dim]; one vector per chunk or a ValueError."""
    if len(item.chunks) != len(item.vectors):
        raise ValueError(f"{item.source.path}: {len(item.chunks)} chunks but {len(item.vectors)} vectors")
    if not item.chunks:
        return item.vectors
    return np.ascontiguousarray(item.vectors, dtype=np.float32).reshape(len(item.chunks), -1)


def stacked(added: list[tuple[np.ndarray, np.ndarray]], dim: int) -> tuple[np.ndarray, np.ndarray]:
    if not added:
        return np.zeros(0, np.int64), np.zeros((0, dim), np.float32)
    return np.concatenate([ids for ids, _ in added]), np.concatenate([vecs for _, vecs in added])


def insert_chunks(raw, collection: Collection, items: list[DocumentWrite], docs: list[Document],
                   vectors: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Chunk rows with their embeddings and full-text rows; (ids, vectors) of each document's chunks."""
    postgres = isinstance(raw, PgDriver)
    if postgres:  # concurrent writers: ids from the sequence (each replica's FTS5 copy indexes them)
        pool = iter(allocate_ids(raw, "chunk", sum(len(item.chunks) for item in items)))
    else:
        next_id = int(raw.execute("SELECT coalesce(max(id), 0) FROM chunk").fetchone()[0]) + 1
    chunk_rows: list[tuple] = []
    texts: list[ChunkText] = []
    added: list[tuple[np.ndarray, np.ndarray]] = []
    for item, doc, vecs in zip(items, docs, vectors):
        if not item.chunks:
            continue
        if postgres:
            ids = np.fromiter((next(pool) for _ in item.chunks), dtype=np.int64, count=len(item.chunks))
        else:
            ids = np.arange(next_id, next_id + len(item.chunks), dtype=np.int64)
            next_id += len(item.chunks)
        for i, (cid, c) in enumerate(zip(ids.tolist(), item.chunks)):
            chunk_rows.append((cid, doc.id, collection.id, i, c.text, *c.location.row(), c.n_tokens,
                               vecs[i].tobytes()))
            texts.append(ChunkText(cid, collection.id, item.source.title, c.heading_path, c.symbol, c.text,
                                   item.source.path))
        added.append((ids, vecs))
    if chunk_rows and postgres:  # the search columns in the same statement (indexes/lexical/postgres.py)
        path_words: dict[str, str] = {}
        raw.executemany(
            f"INSERT INTO chunk (id, document_id, collection_id, ordinal, text, {columns()}, n_tokens, "
            "embedding, lexical_vector, lexical_cjk) "
            f"VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,{pg_lexical.VALUES_SQL})",
            [(*row, *pg_lexical.column_values(t, path_words.setdefault(t.path, lexical.path_terms(t.path))))
             for row, t in zip(chunk_rows, texts)],
        )
    elif chunk_rows:
        raw.executemany(
            f"INSERT INTO chunk (id, document_id, collection_id, ordinal, text, {columns()}, n_tokens, "
            "embedding) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            chunk_rows,
        )
        if not postgres:
            lexical.add_rows(raw, texts)
    return added


def delete_chunks(s: Session, ids: list[int]) -> None:
    if not is_postgres(s.connection()):
        lexical.remove_rows(s.connection().connection.driver_connection, ids)
    for start in range(0, len(ids), 500):
        s.exec(delete(Chunk).where(Chunk.id.in_(ids[start : start + 500])))
