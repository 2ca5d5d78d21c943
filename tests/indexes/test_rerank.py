"""The cross-encoder stage re-orders the best fused candidates by its own scores.

No cross-encoder checkpoint ships with the project, so this loads the packaged MiniLM encoder through
sentence-transformers' CrossEncoder (its classification head starts untrained): the scores carry no
meaning, but the stage's mechanics - pairs in, scores out, candidates re-ordered - are the real ones.
"""

import pytest

from indexes.embedding.embedder import default_model_path
from indexes.retrieval.rerank import CrossEncoderReranker
from indexes.retrieval.retriever import Retriever
from indexes.store import NewChunk, SourceInfo

TEXTS = ["Magma erupts from volcanoes as lava.", "Violins are carved from spruce and maple.",
         "Tax returns are due in April.", "Bees store honey in wax combs.", "Tides follow the moon."]


@pytest.mark.slow
def test_reranker_orders_the_head_by_its_scores(store, embedder):
    coll = store.ensure_collection("docs", embedder.name, embedder.dim)
    for i, text in enumerate(TEXTS):
        store.write_document(coll, SourceInfo(path=f"d{i}.md", title=f"Doc {i}"), [NewChunk(text=text)], embedder.embed([text]))
    reranker = CrossEncoderReranker(default_model_path())
    retriever = Retriever(store, embedder, reranker=reranker, rerank_candidates=5)
    hits = retriever.search("volcano lava", "docs", k=5)
    assert len(hits) == 5
    expected = reranker.scores("volcano lava", [f"{h.title}\n{h.text}" for h in hits])
    assert [h.score for h in hits] == pytest.approx(sorted(expected, reverse=True), abs=1e-5)


def test_missing_model_directory_is_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="reranker model"):
        CrossEncoderReranker(tmp_path / "nope")
