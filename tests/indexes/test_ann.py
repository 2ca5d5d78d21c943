"""Above the ANN threshold a collection gets an IVF index: built on save, memory-mapped on load, kept
in step with writes, close to exact search on clustered vectors, and filterable with ID selectors."""

import faiss
import numpy as np
import pytest

from indexes.store import DocumentWrite, NewChunk, SourceInfo, Store
from indexes.vectors import VectorIndex, VectorOptions, auto_nlist

DIM = 32
OPTIONS = VectorOptions(ann_threshold=1000, nprobe=8)


def clustered(n: int, seed: int = 0, clusters: int = 40) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, DIM))
    x = centres[rng.integers(0, clusters, n)] + 0.5 * rng.normal(size=(n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def fill(store: Store, n: int = 2000) -> np.ndarray:
    coll = store.ensure_collection("big", "m", DIM)
    vecs = clustered(n)
    items = [
        DocumentWrite(SourceInfo(path=f"dir{i % 4}/doc{i}.{'py' if i % 10 == 0 else 'md'}", kind="py" if i % 10 == 0 else "md",
                                 mtime=float(i)), [NewChunk(text=f"chunk {i}")], vecs[i : i + 1])
        for i in range(n)
    ]
    store.write_documents(coll, items)
    return vecs


def test_auto_nlist_grows_with_the_square_root():
    assert auto_nlist(10_000) == 256 and auto_nlist(1_000_000) == 2048 and auto_nlist(10) == 16


def test_flat_below_threshold_ivf_above(tmp_path):
    ids = np.arange(1, 501)
    assert VectorIndex.build(ids, clustered(500), OPTIONS).kind == "flat"
    ids = np.arange(1, 2001)
    index = VectorIndex.build(ids, clustered(2000), OPTIONS)
    assert index.kind == "ivf" and index.ivf.nlist == auto_nlist(2000) and len(index) == 2000


def test_ivf_recall_against_exact(tmp_path):
    vecs = clustered(5000, seed=3)
    ids = np.arange(1, 5001)
    index = VectorIndex.build(ids, vecs, VectorOptions(ann_threshold=1000, nprobe=16))
    queries = clustered(50, seed=4)
    exact = np.argsort(-(queries @ vecs.T), axis=1)[:, :10] + 1
    recall = np.mean([len({i for i, _ in index.search(q, 10)} & set(e.tolist())) / 10 for q, e in zip(queries, exact)])
    assert recall >= 0.9


def test_saved_ivf_is_mapped_on_load_and_copied_before_a_write(tmp_path):
    store = Store(tmp_path / "d", vector_options=OPTIONS)
    vecs = fill(store)
    coll = store.require_collection("big")
    store.save_vectors(coll)  # past the threshold: the flat index becomes IVF here
    assert store.vector_index(coll).kind == "ivf"
    q = vecs[7]
    before = store.vector_index(coll).search(q, 5)
    store.close()

    again = Store(tmp_path / "d", vector_options=OPTIONS)
    coll = again.require_collection("big")
    index = again.vector_index(coll)
    assert again.vectors.rebuilds == 0 and index.mapped
    # no prefetch threads per search (they cost more CPU than the scan)
    assert faiss.downcast_InvertedLists(index.ivf.invlists).prefetch_nthread == 0
    assert index.search(q, 5) == before
    # A write to a mapped index copies it into memory first, then applies the change.
    again.write_document(coll, SourceInfo(path="new.md"), [NewChunk(text="new")], q.reshape(1, -1))
    index = again.vector_index(again.require_collection("big"))
    assert not index.mapped and len(index) == 2001
    assert index.search(q, 1)[0][1] == pytest.approx(1.0, abs=1e-5)
    doc = again.get_document(coll, "dir0/doc0.py")
    again.delete_document(coll, doc.id)
    assert len(again.vector_index(again.require_collection("big"))) == 2000
    again.save_vectors(again.require_collection("big"))
    assert again.vectors.rebuilds == 0


def test_selector_restricts_ivf_search_even_when_narrow(tmp_path):
    store = Store(tmp_path / "d", vector_options=OPTIONS)
    vecs = fill(store)
    coll = store.require_collection("big")
    store.save_vectors(coll)
    index = store.vector_index(coll)
    allowed = np.array([5, 900, 1500], dtype=np.int64)  # three chunks, far apart
    hits = index.search(vecs[0], 10, allowed=allowed)
    assert sorted(i for i, _ in hits) == allowed.tolist()
    assert index.search(vecs[0], 10, allowed=np.zeros(0, np.int64)) == []
