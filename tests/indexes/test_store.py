"""The store: one transaction per document, generations, FTS5 kept beside the chunks."""

import numpy as np
import pytest
from sqlalchemy import text

from indexes.lexical.fts5 import path_terms
from indexes.store import NewChunk, SourceInfo, Store, StoreError


def unit(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def lexical_engine(store: Store):
    """Where the FTS5 tables are: beside the chunks on SQLite, in the replica's copy (synced) on PostgreSQL."""
    if store.lexical_copy is not None:
        store.lexical_copy.sync()
    return store.lexical.engine


def fts_rows(store: Store) -> int:
    with lexical_engine(store).connect() as conn:
        return conn.execute(text("SELECT count(*) FROM chunk_fts")).scalar_one()


def test_collection_names_are_validated(store):
    with pytest.raises(StoreError, match="invalid collection name"):
        store.ensure_collection("../etc", "m", 8)
    with pytest.raises(StoreError, match="invalid collection name"):
        store.ensure_collection("", "m", 8)
    assert store.ensure_collection("team-wiki_2", "m", 8).name == "team-wiki_2"


def test_embedder_dimension_cannot_change(store):
    store.ensure_collection("docs", "m", 8)
    with pytest.raises(StoreError, match="8-d"):
        store.ensure_collection("docs", "other", 16)


def test_write_replaces_old_chunks_and_bumps_generation(store):
    coll = store.ensure_collection("docs", "m", 8)
    src = SourceInfo(path="a.md", title="A", sha256="1")
    store.write_document(coll, src, [NewChunk(text="alpha one"), NewChunk(text="alpha two")], unit(2))
    assert store.counts(coll) == (2, 2)
    assert store.get_collection("docs").generation == 1

    store.write_document(coll, src, [NewChunk(text="beta")], unit(1, seed=1))
    assert store.counts(coll) == (1, 1)
    assert fts_rows(store) == 1
    assert store.get_collection("docs").generation == 2
    assert store.lexical.search([coll.id], ["alpha"], 10).top == []
    assert len(store.lexical.search([coll.id], ["beta"], 10).top) == 1


def test_failed_document_keeps_its_reason_and_no_chunks(store):
    coll = store.ensure_collection("docs", "m", 8)
    store.write_document(coll, SourceInfo(path="x.pdf"), [], np.zeros((0, 8), np.float32), status="failed", error="encrypted")
    doc = store.get_document(coll, "x.pdf")
    assert (doc.status, doc.error, doc.n_chunks) == ("failed", "encrypted", 0)
    assert store.counts(coll) == (0, 0)


def test_mismatched_vectors_are_refused_before_anything_is_written(store):
    coll = store.ensure_collection("docs", "m", 8)
    with pytest.raises(ValueError):
        store.write_document(coll, SourceInfo(path="a.md"), [NewChunk(text="x")], unit(2))
    assert store.get_document(coll, "a.md") is None


def test_a_failed_transaction_leaves_the_previous_version(store, monkeypatch):
    coll = store.ensure_collection("docs", "m", 8)
    store.write_document(coll, SourceInfo(path="a.md", sha256="1"), [NewChunk(text="kept text")], unit(1))

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Store, "_bump", staticmethod(boom))
    with pytest.raises(RuntimeError):
        store.write_document(coll, SourceInfo(path="a.md", sha256="2"), [NewChunk(text="new text")], unit(1))
    monkeypatch.undo()
    doc = store.get_document(coll, "a.md")
    assert doc.sha256 == "1"
    assert store.counts(coll) == (1, 1)
    assert len(store.lexical.search([coll.id], ["kept"], 10).top) == 1


def test_delete_document_and_collection(store):
    coll = store.ensure_collection("docs", "m", 8)
    doc = store.write_document(coll, SourceInfo(path="a.md"), [NewChunk(text="one")], unit(1))
    store.write_document(coll, SourceInfo(path="b.md"), [NewChunk(text="two")], unit(1, seed=2))
    assert store.delete_document(coll, doc.id)
    assert not store.delete_document(coll, doc.id)
    assert store.counts(coll) == (1, 1)
    assert len(store.vector_index(store.get_collection("docs"))) == 1
    store.delete_collection("docs")
    assert store.get_collection("docs") is None
    assert fts_rows(store) == 0


def test_list_collections_counts(store):
    coll = store.ensure_collection("docs", "m", 8)
    store.write_document(coll, SourceInfo(path="a.md"), [NewChunk(text="one"), NewChunk(text="two")], unit(2))
    store.write_document(coll, SourceInfo(path="b.pdf"), [], np.zeros((0, 8), np.float32), status="failed", error="x")
    (info,) = store.list_collections()
    assert (info["name"], info["documents"], info["chunks"], info["failed"]) == ("docs", 2, 2, 1)


def test_path_terms():
    assert path_terms("src/flask/app.py") == "src flask app py"


def test_opening_an_up_to_date_store_writes_nothing(tmp_path):
    """A store that needs no migration opens without a write, so the server still starts (and answers)
    on a full disk: its write-ahead log stays empty while it is open."""
    Store(tmp_path).close()
    again = Store(tmp_path)
    try:
        wal = tmp_path / "store.db-wal"
        assert not wal.exists() or wal.stat().st_size == 0
        with again.engine.connect() as conn:
            assert conn.execute(text("SELECT v FROM chunk_fts_config WHERE k = 'rank'")).scalar() == "bm25(3.0, 1.5, 1.0, 1.0)"
    finally:
        again.close()
