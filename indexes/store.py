"""Reading and writing the store: collections, documents and their chunks, in single transactions.

Every write of one document (its row, its chunks, their FTS5 entries and the collection's generation)
is one SQLite transaction, so a crash at any point leaves either the old version or the new one. The
FAISS index is brought up to date after the commit, and is rebuilt from the stored embeddings when it
is found stale.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sqlalchemy import delete, func, text, update
from sqlmodel import Session, select

from indexes.db import make_engine
from indexes.models import Chunk, Collection, Document, utcnow
from indexes.vectors import VectorIndex, VectorIndexes

COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class StoreError(ValueError):
    """A request the store cannot honour (bad name, unknown collection); the message says why."""


@dataclass
class NewChunk:
    """A chunk ready to be written: text plus where it came from."""

    text: str
    heading_path: str = ""
    anchor: str = ""
    page: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    symbol: str = ""
    n_tokens: int = 0


@dataclass
class SourceInfo:
    """What the store records about a source file, whatever became of it."""

    path: str
    root: str = ""
    title: str = ""
    kind: str = ""
    sha256: str = ""
    size: int = 0
    mtime: float = 0.0
    meta: dict = field(default_factory=dict)


@dataclass
class ChunkRecord:
    """A chunk joined with its document and collection: everything a search hit shows."""

    chunk_id: int
    document_id: int
    collection: str
    path: str
    root: str
    title: str
    kind: str
    text: str
    heading_path: str
    anchor: str
    page: int | None
    line_start: int | None
    line_end: int | None
    symbol: str


def path_terms(path: str) -> str:
    """A path as words for the lexical index: `src/flask/app.py` -> `src flask app py`."""
    return " ".join(t for t in re.split(r"[^0-9A-Za-z]+", path) if t)


class Store:
    """One data directory: `store.db` (SQLite, the truth) and `vectors/` (FAISS, derived)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.engine = make_engine(self.data_dir / "store.db")
        self.vectors = VectorIndexes(self.data_dir / "vectors", self.embeddings)

    def close(self) -> None:
        self.engine.dispose()

    def session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    # --- collections -------------------------------------------------------------------------

    def get_collection(self, name: str) -> Collection | None:
        with self.session() as s:
            return s.exec(select(Collection).where(Collection.name == name)).first()

    def require_collection(self, name: str) -> Collection:
        coll = self.get_collection(name)
        if coll is None:
            raise StoreError(f"unknown collection: {name!r}")
        return coll

    def ensure_collection(self, name: str, embedder: str, dim: int) -> Collection:
        """The collection called name, created on first use. Its embedder may not change later."""
        if not COLLECTION_NAME.match(name or ""):
            raise StoreError(
                f"invalid collection name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit"
            )
        with self.session() as s:
            coll = s.exec(select(Collection).where(Collection.name == name)).first()
            if coll is None:
                coll = Collection(name=name, embedder=embedder, dim=dim)
                s.add(coll)
                s.commit()
                s.refresh(coll)
            elif coll.dim and coll.dim != dim:
                raise StoreError(
                    f"collection {name!r} was built with {coll.embedder} ({coll.dim}-d); "
                    f"the configured embedder {embedder} is {dim}-d"
                )
            return coll

    def list_collections(self) -> list[dict]:
        with self.session() as s:
            colls = s.exec(select(Collection).order_by(Collection.name)).all()
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
            s.exec(text("DELETE FROM chunk_fts WHERE collection_id = :c").bindparams(c=coll.id))
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
        if len(chunks) != len(vectors):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(chunks), -1) if chunks else vectors
        with self.session() as s:
            doc = s.exec(
                select(Document).where(Document.collection_id == collection.id, Document.path == source.path)
            ).first()
            removed: list[int] = []
            if doc is None:
                doc = Document(collection_id=collection.id, path=source.path)
            else:
                removed = list(s.exec(select(Chunk.id).where(Chunk.document_id == doc.id)).all())
                self._delete_chunks(s, removed)
            doc.root, doc.title, doc.kind = source.root, source.title, source.kind
            doc.sha256, doc.size, doc.mtime = source.sha256, source.size, source.mtime
            doc.meta = json.dumps(source.meta, default=str)
            doc.status, doc.error, doc.n_chunks = status, error, len(chunks)
            doc.ingested_at = utcnow()
            s.add(doc)
            s.flush()
            rows = [
                Chunk(
                    document_id=doc.id,
                    collection_id=collection.id,
                    ordinal=i,
                    text=c.text,
                    heading_path=c.heading_path,
                    anchor=c.anchor,
                    page=c.page,
                    line_start=c.line_start,
                    line_end=c.line_end,
                    symbol=c.symbol,
                    n_tokens=c.n_tokens,
                    embedding=vectors[i].tobytes(),
                )
                for i, c in enumerate(chunks)
            ]
            s.add_all(rows)
            s.flush()
            path_words = path_terms(source.path)
            for row, c in zip(rows, chunks):
                s.exec(
                    text(
                        "INSERT INTO chunk_fts(rowid, title, headings, body, path, collection_id) "
                        "VALUES (:id, :title, :headings, :body, :path, :cid)"
                    ).bindparams(
                        id=row.id,
                        title=source.title,
                        headings=" ".join(filter(None, [c.heading_path, c.symbol])),
                        body=c.text,
                        path=path_words,
                        cid=collection.id,
                    )
                )
            old_gen, new_gen = self._bump(s, collection.id) if (removed or rows) else (None, None)
            s.commit()
            s.refresh(doc)
        if new_gen is not None:
            ids = np.array([r.id for r in rows], dtype=np.int64)
            self.vectors.apply(collection.id, collection.dim, old_gen, new_gen, removed, ids, vectors)
        return doc

    def delete_document(self, collection: Collection, document_id: int) -> bool:
        with self.session() as s:
            doc = s.get(Document, document_id)
            if doc is None or doc.collection_id != collection.id:
                return False
            removed = list(s.exec(select(Chunk.id).where(Chunk.document_id == doc.id)).all())
            self._delete_chunks(s, removed)
            s.delete(doc)
            old_gen, new_gen = self._bump(s, collection.id)
            s.commit()
        self.vectors.apply(collection.id, collection.dim, old_gen, new_gen, removed, np.zeros(0, np.int64), np.zeros((0, collection.dim), np.float32))
        return True

    @staticmethod
    def _delete_chunks(s: Session, ids: list[int]) -> None:
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join(str(int(i)) for i in part)
            s.exec(text(f"DELETE FROM chunk_fts WHERE rowid IN ({marks})"))
            s.exec(delete(Chunk).where(Chunk.id.in_(part)))

    @staticmethod
    def _bump(s: Session, collection_id: int) -> tuple[int, int]:
        s.exec(update(Collection).where(Collection.id == collection_id).values(generation=Collection.generation + 1))
        new = s.exec(select(Collection.generation).where(Collection.id == collection_id)).one()
        return new - 1, new

    # --- chunks and indexes -------------------------------------------------------------------

    def embeddings(self, collection_id: int) -> tuple[np.ndarray, np.ndarray]:
        """All (chunk ids, vectors) of a collection: what a FAISS index is rebuilt from."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                text("SELECT id, embedding FROM chunk WHERE collection_id = :c ORDER BY id"), {"c": collection_id}
            ).all()
        if not rows:
            return np.zeros(0, np.int64), np.zeros((0, 0), np.float32)
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        return ids, vecs

    def vector_index(self, collection: Collection) -> VectorIndex:
        """The collection's FAISS index at the store's current generation (loaded or rebuilt)."""
        with self.session() as s:
            gen = s.exec(select(Collection.generation).where(Collection.id == collection.id)).one()
        return self.vectors.get(collection.id, gen, collection.dim)

    def save_vectors(self, collection: Collection) -> None:
        """Make sure the current FAISS index of the collection is on disk under its generation."""
        self.vector_index(collection)
        self.vectors.save(collection.id)

    def lexical_search(self, collection_ids: list[int], match: str, limit: int) -> list[tuple[int, float]]:
        """BM25 over title, headings, body and path (title weighted); higher score is better."""
        if not match or not collection_ids:
            return []
        marks = ",".join(str(int(c)) for c in collection_ids)
        sql = text(
            "SELECT rowid, -rank FROM chunk_fts "
            f"WHERE chunk_fts MATCH :q AND collection_id IN ({marks}) ORDER BY rank LIMIT :n"
        )
        with self.engine.connect() as conn:
            return [(int(r[0]), float(r[1])) for r in conn.execute(sql, {"q": match, "n": limit}).all()]

    def chunk_records(self, chunk_ids: list[int]) -> dict[int, ChunkRecord]:
        if not chunk_ids:
            return {}
        marks = ",".join(str(int(i)) for i in chunk_ids)
        sql = text(
            "SELECT c.id, c.document_id, k.name, d.path, d.root, d.title, d.kind, c.text, c.heading_path, "
            "c.anchor, c.page, c.line_start, c.line_end, c.symbol "
            "FROM chunk c JOIN document d ON d.id = c.document_id JOIN collection k ON k.id = c.collection_id "
            f"WHERE c.id IN ({marks})"
        )
        with self.engine.connect() as conn:
            return {int(r[0]): ChunkRecord(*r) for r in conn.execute(sql).all()}

    def counts(self, collection: Collection) -> tuple[int, int]:
        """(chunk rows, sum of the documents' n_chunks): equal in a consistent store."""
        with self.session() as s:
            chunks = s.exec(select(func.count()).select_from(Chunk).where(Chunk.collection_id == collection.id)).one()
            declared = s.exec(
                select(func.coalesce(func.sum(Document.n_chunks), 0)).where(Document.collection_id == collection.id)
            ).one()
        return int(chunks), int(declared)
