"""Hybrid retrieval with the real embedder: dense + BM25 fused, hits carry where they came from."""

import pytest

from indexes.retrieve import Retriever, fts_query, rrf, snippet_of
from indexes.store import NewChunk, SourceInfo, StoreError

DOCS = {
    "travel/booking.md": ("Booking travel", ["Book flights through the travel desk at least 14 days ahead.", "Hotels must be approved by your manager."]),
    "leave/vacation.md": ("Vacation", ["Annual leave accrues at 4 hours per pay period.", "Carry over up to 240 hours into the next year."]),
    "code/app.py": ("app.py", ["def make_response(rv):\n    return Response(rv)"]),
}


@pytest.fixture
def retriever(store, embedder):
    coll = store.ensure_collection("docs", embedder.name, embedder.dim)
    for path, (title, texts) in DOCS.items():
        chunks = [NewChunk(text=t, heading_path=title, line_start=1 if path.endswith(".py") else None, line_end=2 if path.endswith(".py") else None) for t in texts]
        store.write_document(coll, SourceInfo(path=path, title=title, kind=path.rsplit(".", 1)[1]), chunks, embedder.embed(texts))
    return Retriever(store, embedder)


def test_relevant_document_ranks_first(retriever):
    hits = retriever.search("how far in advance should I book a flight?", "docs", k=3)
    assert hits[0].path == "travel/booking.md"
    assert hits[0].title == "Booking travel" and hits[0].heading_path == "Booking travel"
    assert hits[0].snippet and hits[0].score > 0
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_code_hits_carry_line_ranges(retriever):
    (hit,) = retriever.search("make_response", "docs", k=1)
    assert (hit.path, hit.line_start, hit.line_end) == ("code/app.py", 1, 2)
    assert hit.lexical_rank == 1


def test_unknown_collection_is_an_error(retriever):
    with pytest.raises(StoreError, match="unknown collection"):
        retriever.search("x", "nope")


def test_empty_query_returns_nothing(retriever):
    assert retriever.search("   ", "docs") == []


def test_fts_query_quotes_words_and_ors_them():
    assert fts_query('What is "NEAR" AND the (policy)?') == '"what" OR "is" OR "near" OR "and" OR "the" OR "policy"'
    assert fts_query("***") == ""


def test_rrf_rewards_agreement():
    scores = rrf([[1, 2, 3], [3, 1]], k=60)
    assert max(scores, key=scores.get) == 1
    assert scores[3] > scores[2]


def test_snippet_centres_on_the_query():
    text = "lorem " * 100 + "the travel desk books flights " + "ipsum " * 100
    s = snippet_of(text, "travel desk", width=80)
    assert "travel desk" in s and s.startswith("…") and s.endswith("…")
