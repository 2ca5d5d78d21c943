"""Replicas of one store: each keeps its own FAISS index and FTS5 copy in step with the rows that
others write, by the difference since its generation rather than by a rebuild."""

from __future__ import annotations

import numpy as np
import pytest

from indexes.store import NewChunk, SourceInfo, Store
from tests.indexes.test_store import unit


@pytest.fixture(params=["sqlite", "postgres"])
def two_replicas(request, tmp_path):
    """Two stores over one database: each its own data dir on PostgreSQL, one data dir on SQLite."""
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url")
        a, b = Store(tmp_path / "a", database_url=url), Store(tmp_path / "b", database_url=url)
    else:
        a, b = Store(tmp_path / "d"), Store(tmp_path / "d")
    yield a, b
    a.close()
    b.close()


def write(store: Store, path: str, texts: list[str], seed: int) -> None:
    coll = store.ensure_collection("docs", "m", 8)
    store.write_document(coll, SourceInfo(path=path, title=path), [NewChunk(text=t) for t in texts],
                         unit(len(texts), seed=seed))


def test_an_index_follows_writes_of_another_replica_by_their_difference(two_replicas):
    a, b = two_replicas
    for i in range(20):
        write(a, f"p{i}.md", [f"page {i} alpha", f"page {i} beta"], seed=i)
    coll = b.get_collection("docs")
    assert len(b.vector_index(coll)) == 40 and b.vectors.rebuilds == 1

    write(a, "p3.md", ["page three rewritten zeta"], seed=99)  # 2 chunks removed, 1 added
    a.delete_document(a.get_collection("docs"), a.get_document(a.get_collection("docs"), "p4.md").id)
    coll = b.get_collection("docs")
    index = b.vector_index(coll)
    assert len(index) == 37 and b.vectors.rebuilds == 1 and b.vectors.catch_ups == 1
    assert set(index.ids().tolist()) == set(b.chunk_ids(coll.id).tolist())
    q = unit(1, seed=99)[0]
    assert index.search(q, 1)[0][1] == pytest.approx(1.0, abs=1e-5)  # the new chunk's own vector
    top = b.lexical.search([coll.id], ["zeta"], 5).top
    assert [b.chunk_records([cid])[cid].path for cid, _ in top] == ["p3.md"]
    assert b.lexical.search([coll.id], ["alpha"], 50).top and len(b.lexical.search([coll.id], ["alpha"], 50).top) == 18


def test_a_restarted_replica_catches_up_from_its_saved_file(two_replicas, tmp_path):
    a, b = two_replicas
    for i in range(10):
        write(a, f"p{i}.md", [f"page {i}"], seed=i)
    b.save_vectors(b.get_collection("docs"))
    data_dir, url = b.data_dir, b.engine.url.render_as_string(hide_password=False) if b.postgres else None
    b.close()
    write(a, "late.md", ["written while the replica was down"], seed=50)

    again = Store(data_dir, database_url=url)
    try:
        coll = again.get_collection("docs")
        index = again.vector_index(coll)
        assert len(index) == 11 and again.vectors.rebuilds == 0 and again.vectors.catch_ups == 1
        assert np.isclose(index.search(unit(1, seed=50)[0], 1)[0][1], 1.0, atol=1e-5)
    finally:
        again.close()
