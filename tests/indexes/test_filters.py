"""Filters and scope: several collections at once; path, kind and modified-time filters applied inside
both retrievers, so a narrow filter still gets its k best hits."""

import pytest

from indexes.retrieval.filters import SearchFilters
from indexes.retrieval.retriever import Retriever
from indexes.store import NewChunk, SourceInfo

TOPICS = ["flights and hotels for travel", "annual leave and vacation days", "python functions and classes"]


@pytest.fixture
def retriever(store, embedder):
    texts, sources = [], []
    for i in range(60):
        kind = "py" if i % 20 == 7 else "md"
        texts.append(f"Note {i} about {TOPICS[2] if kind == 'py' else TOPICS[i % 2]}.")
        sources.append(SourceInfo(path=f"{'team' if i < 30 else 'archive'}/note{i:02d}.{kind}", title=f"Note {i}",
                                  kind=kind, mtime=1_700_000_000 + i * 86400))
    vecs = embedder.embed(texts)
    for name in ("wiki", "code"):
        coll = store.ensure_collection(name, embedder.name, embedder.dim)
        for i, (src, text) in enumerate(zip(sources, texts)):
            if (name == "code") == (src.kind == "py"):
                store.write_document(coll, src, [NewChunk(text=text)], vecs[i : i + 1])
    return Retriever(store, embedder, candidates=5)


def test_filters_from_dicts_and_their_sql():
    flt = SearchFilters.coerce({"paths": "team/*", "kinds": [".MD"], "modified_after": "2023-11-14T22:13:20+00:00"})
    assert flt.paths == ("team/*",) and flt.kinds == ("md",) and flt.modified_after == 1_700_000_000.0
    sql, params = flt.document_condition()
    assert "d.path GLOB :f_path0" in sql and params["f_kind0"] == "md"
    assert SearchFilters.coerce({}) is None and SearchFilters.coerce(None) is None


def test_an_unknown_filter_is_refused_naming_the_known_ones(retriever):
    with pytest.raises(ValueError, match="paths, kinds, modified_after, modified_before") as refused:
        SearchFilters.coerce({"date": "2024-01-01", "paths": ["team/*"]})
    assert "'date'" in str(refused.value)
    with pytest.raises(ValueError, match="unknown filter 'kind'"):  # the singular: a slip that would widen the search
        retriever.search("travel flights", "wiki", k=5, filters={"kind": ["py"]})


def test_several_collections_in_one_query(retriever):
    hits = retriever.search("python functions and classes", ["wiki", "code"], k=5)
    assert [h.collection for h in hits[:3]] == ["code"] * 3  # the python notes live in "code"
    assert {h.collection for h in hits} == {"wiki", "code"}


def test_path_filter_applies_to_both_retrievers(retriever):
    hits = retriever.search("leave and vacation", "wiki", k=10, filters={"paths": ["archive/*"]})
    assert hits and all(h.path.startswith("archive/") for h in hits)
    # candidates=5 per side: without in-retrieval filtering, over-fetching 5 and dropping could not yield 10
    assert len(hits) == 10


def test_kind_and_time_filters(retriever):
    day = 86400
    hits = retriever.search("travel flights", ["wiki", "code"], k=20, filters={"kinds": ["py"]})
    assert hits and {h.kind for h in hits} == {"py"}
    hits = retriever.search("travel flights", "wiki", k=50, filters={
        "modified_after": 1_700_000_000 + 10 * day, "modified_before": 1_700_000_000 + 19 * day})
    assert sorted(int(h.path[-5:-3]) for h in hits) == list(range(10, 20))


def test_a_filter_matching_nothing_returns_nothing(retriever):
    assert retriever.search("travel", "wiki", k=5, filters={"paths": ["nowhere/*"]}) == []
