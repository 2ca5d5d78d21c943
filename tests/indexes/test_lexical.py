"""FTS5 candidates: stop words, a bounded candidate set (rarest terms first), weighted columns."""

import numpy as np

from indexes.lexical.fts5 import Weights, query_terms
from indexes.store import NewChunk, SourceInfo
from tests.indexes.test_store import lexical_engine, unit


def test_query_terms_drop_stop_words_unless_nothing_else_is_left():
    assert query_terms("What is the policy on Parental leave?") == ["policy", "parental", "leave"]
    assert query_terms("to be or not to be") == ["to", "be", "or", "not"]
    assert query_terms("What is the policy?", drop_stopwords=False) == ["what", "is", "the", "policy"]
    assert query_terms("Ｆｕｌｌ width") == ["full", "width"]  # NFKC


def fill(store, rows):
    coll = store.ensure_collection("docs", "m", 8)
    for i, (title, body) in enumerate(rows):
        store.write_document(coll, SourceInfo(path=f"d{i}.md", title=title), [NewChunk(text=body)], unit(1, seed=i))
    return store.get_collection("docs")


def test_budget_keeps_the_rarest_terms(store):
    # "common" is in every row, "rare" in two, "mid" in five.
    rows = [("", "common text " + ("mid " if i < 5 else "") + ("rare" if i < 2 else "")) for i in range(20)]
    coll = fill(store, rows)
    lex = store.lexical
    with lexical_engine(store).connect() as conn:
        assert lex.plan(conn, ["common", "mid", "rare"], budget=0) == '"common" OR "mid" OR "rare"'
        assert lex.plan(conn, ["common", "mid", "rare"], budget=10) == '"rare" OR "mid"'
        assert lex.plan(conn, ["common", "mid", "rare"], budget=3) == '"rare"'
        # When even the rarest term is over budget, both rarest terms must match together.
        assert lex.plan(conn, ["common", "mid"], budget=3) == '"mid" AND "common"'
    result = lex.search([coll.id], ["common", "mid", "rare"], 3, budget=10)
    assert [cid for cid, _ in result.top][:2] == sorted(cid for cid, _ in result.top[:2])  # both "rare" rows first
    assert len(result.scores) == 5 and result.complete  # every row matching the plan was read and scored
    assert result.score_of(999) == 0.0


def test_title_weight_moves_title_matches_up(store):
    coll = fill(store, [("Budget", "nothing here but words"), ("Other", "the budget is mentioned in the body once")])
    title_first = store.lexical.search([coll.id], ["budget"], 2, weights=Weights(title=5.0))
    body_first = store.lexical.search([coll.id], ["budget"], 2, weights=Weights(title=0.1))
    docs = {d.id: d.path for d in store.list_documents(coll)}
    recs = store.chunk_records([cid for cid, _ in title_first.top])
    assert recs[title_first.top[0][0]].path == "d0.md"
    recs = store.chunk_records([cid for cid, _ in body_first.top])
    assert recs[body_first.top[0][0]].path == "d1.md"
    assert len(docs) == 2


def test_scores_of_rows_beyond_the_candidates(store):
    coll = fill(store, [("", "apple banana"), ("", "apple"), ("", "cherry")])
    result = store.lexical.search([coll.id], ["apple", "banana"], 1)
    ids = sorted(store.chunk_records(list(range(1, 4))))
    scores = store.lexical.scores(ids, result.match)
    assert scores[ids[0]] > scores[ids[1]] > 0 and scores[ids[2]] == 0.0
    assert np.isclose(scores[ids[0]], result.top[0][1])
