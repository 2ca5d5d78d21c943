"""Reading and writing the store: collections, documents and their chunks, in single transactions.

Every write of one document (its row, its chunks, their FTS5 entries and the collection's generation)
is one SQLite transaction, so a crash at any point leaves either the old version or the new one. The
FAISS index is brought up to date after the commit, and is rebuilt from the stored embeddings when it
is found stale.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import numpy as np
from sqlalchemy import delete, func, update
from sqlmodel import Session, select

from indexes.chunk_rows import DocumentWrite, checked_vectors, delete_chunks, insert_chunks, stacked
from indexes.db import driver, make_store_engine, read_rows
from indexes.retrieval.filters import SearchFilters
from indexes.lexical import fts5 as lexical
from indexes.lexical import postgres as pg_lexical
from indexes.lexical.fts5 import Lexical
from indexes.lexical.replica_copy import CopiedLexical, LexicalCopy
from indexes.location import Located, Location, columns
from indexes.models import Chunk, Collection, Document, utcnow
from indexes.pg import is_postgres
from indexes.records import NewChunk, SourceInfo
from indexes.vectors import VectorIndex, VectorIndexes, VectorOptions

COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")  # \Z: "abc\n" is not "abc"


class StoreError(ValueError):
    """A request the store cannot honour (bad name, unknown collection); the message says why."""


@dataclass
class ChunkRecord(Located):
    """A chunk joined with its document and collection: everything a search hit shows."""

    chunk_id: int
    document_id: int
    collection: str
    path: str
    root: str
    title: str
    kind: str
    text: str
    location: Location


COLLECTION_COLUMNS = "id, name, created_at, generation, embedder, dim, title"


def collection_from_row(row: tuple) -> Collection:
    """A Collection from a row of COLLECTION_COLUMNS (SQLite keeps the UTC creation time as ISO text)."""
    fields = dict(zip(COLLECTION_COLUMNS.split(", "), row))
    created_at = datetime.fromisoformat(c) if isinstance(c := fields.pop("created_at"), str) else c
    return Collection(**fields, created_at=created_at if created_at.tzinfo else created_at.replace(tzinfo=timezone.utc))


class Store:
    """One data directory: `store.db` (SQLite, the truth) and `vectors/` (FAISS, derived).

    With a database URL the truth is that PostgreSQL database instead, shared by every replica and
    worker; the data directory then holds this replica's derived indexes only: `vectors/` and the
    FTS5 copy `lexical.db` (indexes/lexical/replica_copy.py).
    """

    def __init__(self, data_dir: Path, *, vector_options: VectorOptions | None = None,
                 database_url: str | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.engine = make_store_engine(self.data_dir, database_url)
        self.postgres = is_postgres(self.engine)
        self.vectors = VectorIndexes(self.data_dir / "vectors", self.embeddings, vector_options,
                                     load_ids=self.chunk_ids, load_vectors=self.chunk_vectors)
        self.lexical_copy = LexicalCopy(self.engine, self.data_dir / "lexical.db") if self.postgres else None
        self.lexical = CopiedLexical(self.lexical_copy) if self.lexical_copy else Lexical(self.engine)
        self._index_embedders: dict[int, str] = {}  # collection id -> the embedder its loaded index holds

    def configure_lexical(self, kind: str = "auto", *, rank: str = "bm25", normalisation: int = 0) -> None:
        """Where lexical candidates come from: the store's FTS5 tables on SQLite; on PostgreSQL this
        replica's FTS5 copy (`copy`) or PostgreSQL's own full-text search (`postgres`,
        indexes/lexical/postgres.py); `auto` = the copy, which measured better (docs/deployment.md)."""
        if kind not in ("auto", "copy", "postgres"):
            raise StoreError(f"unknown lexical search {kind!r}: use auto, copy or postgres")
        if kind == "postgres" and not self.postgres:
            raise StoreError("lexical search 'postgres' needs the store on PostgreSQL (database_url = "
                             "postgresql+psycopg://...); a SQLite store searches its own FTS5 tables")
        if kind == "postgres":
            if self.lexical_copy is not None:
                self.lexical_copy.close()
                self.lexical_copy = None
            self.lexical = pg_lexical.PgLexical(self.engine, rank=rank, normalisation=normalisation)
        elif self.postgres and self.lexical_copy is None:
            self.lexical_copy = LexicalCopy(self.engine, self.data_dir / "lexical.db")
            self.lexical = CopiedLexical(self.lexical_copy)

    def configure_vectors(self, options: VectorOptions) -> None:
        """Change how vector indexes are built and searched (ANN threshold, lists, probes, mmap)."""
        self.vectors.options = options

    def close(self) -> None:
        if self.lexical_copy is not None:
            self.lexical_copy.close()
        self.engine.dispose()

    def session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    # --- collections -------------------------------------------------------------------------

    def get_collection(self, name: str) -> Collection | None:
        # Every question looks its collections up: read through the driver (an ORM session costs
        # ~0.7 ms, a third of a search's own CPU). The object is detached, as the ORM's would be.
        row = read_rows(self.engine, f"SELECT {COLLECTION_COLUMNS} FROM collection WHERE name = ?", (name,))
        return collection_from_row(row[0]) if row else None

    def require_collection(self, name: str) -> Collection:
        coll = self.get_collection(name)
        if coll is None:
            raise StoreError(f"unknown collection: {name!r}")
        return coll

    def ensure_collection(self, name: str, embedder: str, dim: int, title: str = "") -> Collection:
        """The collection called name (titled `title`, else its name), made on first use; embedder fixed."""
        if not COLLECTION_NAME.match(name or ""):
            raise StoreError(
                f"invalid collection name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit"
            )
        with self.session() as s:
            coll = s.exec(select(Collection).where(Collection.name == name)).first()
            if coll is None:
                coll = Collection(name=name, title=title or name, embedder=embedder, dim=dim)
                s.add(coll)
                s.commit()
                s.refresh(coll)
            elif coll.dim and coll.dim != dim:
                raise StoreError(
                    f"collection {name!r} was built with {coll.embedder} ({coll.dim}-d); "
                    f"the configured embedder {embedder} is {dim}-d"
                )
            return coll

    def has_chunks(self, collection: Collection) -> bool:
        return bool(read_rows(self.engine, "SELECT 1 FROM chunk WHERE collection_id = ? LIMIT 1", (collection.id,)))

    def settle_embedder(self, collection: Collection, embedder: str, dim: int) -> Collection:
        """Record the embedder of a collection that has no chunks yet (created empty, or emptied), in one
        statement that leaves it alone once chunks exist; the collection as it stands then."""
        empty = ~select(Chunk.id).where(Chunk.collection_id == collection.id).exists()
        with self.session() as s:
            s.exec(update(Collection).where(Collection.id == collection.id, empty)
                   .values(embedder=embedder, dim=dim, generation=Collection.generation + 1))
            s.commit()
        return self.require_collection(collection.name)

    def list_collections(self) -> list[dict]:
        with self.session() as s:
            # a deleted collection is renamed '~deleted-<id>' until its rows are purged: not listed
            colls = s.exec(select(Collection).where(~Collection.name.startswith("~"))
                           .order_by(Collection.title, Collection.name)).all()  # as people read them
            docs = dict(
                s.exec(select(Document.collection_id, func.count()).group_by(Document.collection_id)).all()
            )
            chunks = dict(s.exec(select(Chunk.collection_id, func.count()).group_by(Chunk.collection_id)).all())
            failed = dict(
                s.exec(
                    select(Document.collection_id, func.count())
                    .where(Document.status == "failed")
                    .group_by(Document.collection_id)
                ).all()
            )
        return [
            {
                "name": c.name,
                "title": c.title or c.name,
                "documents": docs.get(c.id, 0),
                "chunks": chunks.get(c.id, 0),
                "failed": failed.get(c.id, 0),
                "embedder": c.embedder,
                "created_at": c.created_at.isoformat(),
            }
            for c in colls
        ]

    def delete_collection(self, name: str) -> None:
        coll = self.require_collection(name)
        with self.session() as s:
            if not self.postgres:  # on PostgreSQL each replica's FTS5 copy follows by itself
                lexical.remove_collection_rows(s.connection().connection.driver_connection, coll.id)
            s.exec(delete(Chunk).where(Chunk.collection_id == coll.id))
            s.exec(delete(Document).where(Document.collection_id == coll.id))
            s.exec(delete(Collection).where(Collection.id == coll.id))
            s.commit()
        self.vectors.drop(coll.id)

    # --- documents ---------------------------------------------------------------------------

    def list_documents(self, collection: Collection, *, offset: int = 0, limit: int | None = None) -> list[Document]:
        with self.session() as s:
            q = select(Document).where(Document.collection_id == collection.id).order_by(Document.path).offset(offset)
            if limit is not None:
                q = q.limit(limit)
            return list(s.exec(q).all())

    def get_document(self, collection: Collection, path: str) -> Document | None:
        with self.session() as s:
            return s.exec(
                select(Document).where(Document.collection_id == collection.id, Document.path == path)
            ).first()

    def write_document(
        self,
        collection: Collection,
        source: SourceInfo,
        chunks: list[NewChunk],
        vectors: np.ndarray,
        *,
        status: str = "ok",
        error: str | None = None,
    ) -> Document:
        """Replace the document at source.path with these chunks, in one transaction."""
        return self.write_documents(collection, [DocumentWrite(source, chunks, vectors, status, error)])[0]

    def write_documents(self, collection: Collection, items: list[DocumentWrite]) -> list[Document]:
        """Replace several documents in one transaction (bulk loads: one commit, one generation bump).

        Chunk ids are allocated in the transaction, so chunks, their embeddings and their full-text rows
        are inserted with `executemany` rather than one ORM object at a time.
        """
        vectors = [checked_vectors(item) for item in items]
        with self.session() as s:
            raw = driver(s.connection())
            docs, removed = self._upsert_documents(s, collection, items)
            added = insert_chunks(raw, collection, items, docs, vectors)
            old_gen, new_gen = self._bump(s, collection.id) if (removed or added) else (None, None)
            s.commit()
            written = self._reload(s, [d.id for d in docs])
        if new_gen is not None:
            ids, vecs = stacked(added, collection.dim)
            self.vectors.apply(collection.id, collection.dim, old_gen, new_gen, removed, ids, vecs)
        return written

    def _upsert_documents(self, s: Session, collection: Collection,
                          items: list[DocumentWrite]) -> tuple[list[Document], list[int]]:
        """The document row of each item, created or updated (its old chunks deleted); the removed chunk ids."""
        docs: list[Document] = []
        removed: list[int] = []
        for item in items:
            src = item.source
            doc = s.exec(select(Document).where(Document.collection_id == collection.id, Document.path == src.path)).first()
            if doc is None:
                doc = Document(collection_id=collection.id, path=src.path)
            else:
                old = list(s.exec(select(Chunk.id).where(Chunk.document_id == doc.id)).all())
                delete_chunks(s, old)
                removed.extend(old)
            doc.root, doc.title, doc.kind = src.root, src.title, src.kind
            doc.sha256, doc.size, doc.mtime = src.sha256, src.size, src.mtime
            doc.meta = json.dumps(src.meta, default=str)
            doc.status, doc.error, doc.n_chunks = item.status, item.error, len(item.chunks)
            doc.ingested_at = utcnow()
            s.add(doc)
            s.flush()  # the first write takes the write lock, so max(id) in _insert_chunks cannot race
            docs.append(doc)
        return docs, removed

    @staticmethod
    def _reload(s: Session, doc_ids: list[int]) -> list[Document]:
        """The written documents as committed, in the order given."""
        docs: dict[int, Document] = {}
        for start in range(0, len(doc_ids), 500):
            part = doc_ids[start : start + 500]
            docs.update((d.id, d) for d in s.exec(select(Document).where(Document.id.in_(part))).all())
        return [docs[i] for i in doc_ids]

    def delete_document(self, collection: Collection, document_id: int) -> bool:
        with self.session() as s:
            doc = s.get(Document, document_id)
            if doc is None or doc.collection_id != collection.id:
                return False
            removed = list(s.exec(select(Chunk.id).where(Chunk.document_id == doc.id)).all())
            delete_chunks(s, removed)
            s.delete(doc)
            old_gen, new_gen = self._bump(s, collection.id)
            s.commit()
        self.vectors.apply(collection.id, collection.dim, old_gen, new_gen, removed, np.zeros(0, np.int64), np.zeros((0, collection.dim), np.float32))
        return True

    @staticmethod
    def _bump(s: Session, collection_id: int) -> tuple[int, int]:
        s.exec(update(Collection).where(Collection.id == collection_id).values(generation=Collection.generation + 1))
        new = s.exec(select(Collection.generation).where(Collection.id == collection_id)).one()
        return new - 1, new

    # --- chunks and indexes -------------------------------------------------------------------

    def embeddings(self, collection_id: int) -> tuple[np.ndarray, np.ndarray]:
        """All (chunk ids, vectors) of a collection: what a FAISS index is rebuilt from.

        Read in id order into preallocated arrays, so a million vectors need their own size in memory
        and not a second copy as Python bytes.
        """
        with self.engine.connect() as conn:
            raw = driver(conn)
            n, dim_bytes = raw.execute(
                "SELECT count(*), max(length(embedding)) FROM chunk WHERE collection_id = ?", (collection_id,)
            ).fetchone()
            if not n:
                return np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
            ids = np.empty(n, dtype=np.int64)
            vecs = np.empty((n, dim_bytes // 4), dtype=np.float32)
            cur = raw.execute("SELECT id, embedding FROM chunk WHERE collection_id = ? ORDER BY id", (collection_id,))
            i = 0
            while rows := cur.fetchmany(8192):
                for cid, blob in rows:
                    if i < n:
                        ids[i] = cid
                        vecs[i] = np.frombuffer(blob, dtype=np.float32)
                    i += 1
        return ids[: min(i, n)], vecs[: min(i, n)]

    def chunk_ids(self, collection_id: int) -> np.ndarray:
        """Every chunk id of a collection: what its FAISS index must hold."""
        rows = read_rows(self.engine, "SELECT id FROM chunk WHERE collection_id = ?", (int(collection_id),))
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def vector_index(self, collection: Collection) -> VectorIndex:
        """The collection's FAISS index at the store's current generation (loaded or rebuilt).

        An index is brought forward by the chunk ids added and removed since its generation, which a
        re-embedding (same ids, new vectors) does not change: when the collection's embedder differs
        from the one its index here was loaded under, the index is rebuilt from the stored vectors."""
        row = read_rows(self.engine, "SELECT generation, embedder FROM collection WHERE id = ?", (collection.id,))
        if not row:
            raise StoreError(f"collection {collection.name!r} no longer exists")
        generation, embedder = row[0]
        if self._index_embedders.setdefault(collection.id, embedder) != embedder:
            self.vectors.drop(collection.id)
            self._index_embedders[collection.id] = embedder
        return self.vectors.get(collection.id, generation, collection.dim)

    def save_vectors(self, collection: Collection) -> None:
        """Make sure the current FAISS index of the collection is on disk under its generation."""
        self.vector_index(collection)
        self.vectors.save(collection.id)

    def allowed_chunk_ids(self, collection_id: int, filters: SearchFilters) -> np.ndarray:
        """Ids of the chunks of one collection whose documents pass the filters (for FAISS selectors)."""
        sql, params = filters.chunk_subquery([collection_id])
        if self.lexical_copy is not None:  # the filters are SQLite's (GLOB): asked of the FTS5 copy
            self.lexical_copy.sync()
            rows = read_rows(self.lexical_copy.engine, sql, params)
        elif self.postgres:
            sql, params = filters.chunk_subquery([collection_id], postgres=True)
            rows = read_rows(self.engine, sql, params)
        else:
            rows = read_rows(self.engine, sql, params)
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def chunk_vectors(self, chunk_ids: list[int]) -> dict[int, np.ndarray]:
        """Stored embeddings of some chunks: exact dense scores for candidates found only by BM25."""
        if not chunk_ids:
            return {}
        marks = ",".join(str(int(i)) for i in chunk_ids)
        rows = read_rows(self.engine, f"SELECT id, embedding FROM chunk WHERE id IN ({marks})")
        return {int(r[0]): np.frombuffer(r[1], dtype=np.float32) for r in rows}

    def chunk_records(self, chunk_ids: list[int]) -> dict[int, ChunkRecord]:
        if not chunk_ids:
            return {}
        marks = ",".join(str(int(i)) for i in chunk_ids)
        rows = read_rows(
            self.engine,
            f"SELECT c.id, c.document_id, k.name, d.path, d.root, d.title, d.kind, c.text, {columns('c')} "
            "FROM chunk c JOIN document d ON d.id = c.document_id JOIN collection k ON k.id = c.collection_id "
            f"WHERE c.id IN ({marks})"
        )
        return {int(r[0]): ChunkRecord(*r[:8], Location(*r[8:])) for r in rows}

    # --- re-embedding ---------------------------------------------------------------------------

    def chunk_texts(self, collection: Collection, *, batch: int = 256) -> Iterator[list[tuple]]:
        """(chunk id, document title, heading path, symbol, text, n_tokens) of every chunk of the
        collection in id order, a batch at a time: what a re-embedding reads instead of the files."""
        last = 0
        while True:
            rows = read_rows(
                self.engine,
                "SELECT c.id, d.title, c.heading_path, c.symbol, c.text, c.n_tokens FROM chunk c "
                "JOIN document d ON d.id = c.document_id WHERE c.collection_id = ? AND c.id > ? ORDER BY c.id LIMIT ?",
                (collection.id, last, batch),
            )
            if not rows:
                return
            yield rows
            last = int(rows[-1][0])

    def replace_embeddings(self, collection: Collection, generation: int, ids: np.ndarray, vectors: np.ndarray,
                           embedder: str) -> Collection:
        """Every chunk's vector, the collection's embedder and dimension, and the embedder its documents'
        ingest parameters name (so the next ingest finds them unchanged), in one transaction: a crash
        leaves the old vectors with the old embedder. Refused when the chunks changed since
        `generation` (read before embedding them). The collection's FAISS files go first: an index is
        then rebuilt from the new rows, never brought forward from the old model's vectors."""
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) != len(vectors):
            raise ValueError(f"{len(ids)} chunk ids but {len(vectors)} vectors")
        dim = int(vectors.shape[1]) if vectors.ndim == 2 and vectors.shape[1] else collection.dim
        self.vectors.drop(collection.id)
        with self.session() as s:
            raw = driver(s.connection())
            old_gen, _ = self._bump(s, collection.id)  # the collection's row is locked from here to the commit
            held = s.exec(select(func.count()).select_from(Chunk).where(Chunk.collection_id == collection.id)).one()
            if old_gen != generation or held != len(ids):
                s.rollback()
                raise StoreError(f"collection {collection.name!r} changed while it was re-embedded (an ingest ran): "
                                 "nothing was replaced; run it again")
            for start in range(0, len(ids), 1024):
                part = range(start, min(start + 1024, len(ids)))
                rows = [(np.ascontiguousarray(vectors[i], dtype=np.float32).tobytes(), int(ids[i]), collection.id)
                        for i in part]
                raw.executemany("UPDATE chunk SET embedding = ? WHERE id = ? AND collection_id = ?", rows)
            s.exec(update(Collection).where(Collection.id == collection.id).values(embedder=embedder, dim=dim))
            for doc in s.exec(select(Document).where(Document.collection_id == collection.id)).all():
                meta = json.loads(doc.meta or "{}")
                if isinstance(meta, dict) and isinstance(meta.get("ingest"), dict):
                    meta["ingest"]["embedder"] = embedder
                    doc.meta = json.dumps(meta, default=str)
                    s.add(doc)
            s.commit()
        self._index_embedders[collection.id] = embedder
        return self.require_collection(collection.name)

    def counts(self, collection: Collection) -> tuple[int, int]:
        """(chunk rows, sum of the documents' n_chunks): equal in a consistent store."""
        with self.session() as s:
            chunks = s.exec(select(func.count()).select_from(Chunk).where(Chunk.collection_id == collection.id)).one()
            declared = s.exec(
                select(func.coalesce(func.sum(Document.n_chunks), 0)).where(Document.collection_id == collection.id)
            ).one()
        return int(chunks), int(declared)
