"""FAISS files are derived: stamped with the store generation, rebuilt from SQLite when stale or gone."""

import numpy as np

from indexes.store import NewChunk, SourceInfo, Store
from tests.indexes.test_store import unit


def fill(store: Store, n_docs: int = 5):
    coll = store.ensure_collection("docs", "m", 8)
    for i in range(n_docs):
        store.write_document(coll, SourceInfo(path=f"d{i}.md"), [NewChunk(text=f"doc {i} part {j}") for j in range(3)], unit(3, seed=i))
    return store.get_collection("docs")


def test_index_follows_writes_and_matches_brute_force(store):
    coll = fill(store)
    index = store.vector_index(coll)
    ids, vecs = store.embeddings(coll.id)
    assert len(index) == len(ids) == 15
    q = unit(1, seed=99)[0]
    expected = ids[np.argsort(-(vecs @ q))[:5]].tolist()
    assert [cid for cid, _ in index.search(q, 5)] == expected


def test_saved_file_is_loaded_without_rebuild(tmp_path):
    store = Store(tmp_path / "d")
    coll = fill(store)
    store.save_vectors(coll)
    files = list((tmp_path / "d" / "vectors").glob("*.faiss"))
    assert [f.name for f in files] == [f"{coll.id}.g{coll.generation}.faiss"]
    store.close()

    again = Store(tmp_path / "d")
    index = again.vector_index(again.get_collection("docs"))
    assert len(index) == 15 and again.vectors.rebuilds == 0


def test_missing_or_stale_file_is_rebuilt_with_the_same_results(tmp_path):
    store = Store(tmp_path / "d")
    coll = fill(store)
    store.save_vectors(coll)
    q = unit(1, seed=7)[0]
    before = store.vector_index(coll).search(q, 10)
    store.close()

    for f in (tmp_path / "d" / "vectors").glob("*.faiss"):
        f.unlink()
    again = Store(tmp_path / "d")
    assert again.vector_index(again.get_collection("docs")).search(q, 10) == before
    assert again.vectors.rebuilds == 1

    # A write by another process makes the cached index stale: it is noticed and rebuilt.
    other = Store(tmp_path / "d")
    other.write_document(other.get_collection("docs"), SourceInfo(path="new.md"), [NewChunk(text="new")], unit(1, seed=42))
    assert len(again.vector_index(again.get_collection("docs"))) == 16


def test_save_removes_files_of_older_generations(tmp_path):
    store = Store(tmp_path / "d")
    coll = fill(store, 2)
    store.save_vectors(coll)
    store.write_document(coll, SourceInfo(path="d9.md"), [NewChunk(text="x")], unit(1, seed=9))
    store.save_vectors(store.get_collection("docs"))
    names = [f.name for f in (tmp_path / "d" / "vectors").glob("*.faiss")]
    assert names == [f"{coll.id}.g{store.get_collection('docs').generation}.faiss"]
