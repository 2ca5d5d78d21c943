"""Hybrid retrieval with the real embedder: dense + BM25 fused, hits carry where they came from."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from indexes.location import Location
from indexes.retrieval.retriever import Retriever, fts_query, rrf, snippet_of
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
        lines = dict(line_start=1, line_end=2) if path.endswith(".py") else {}
        chunks = [NewChunk(text=t, location=Location(heading_path=title, **lines)) for t in texts]
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


def test_one_document_takes_at_most_its_cap_and_adjacent_chunks_merge(store, embedder):
    coll = store.ensure_collection("long", embedder.name, embedder.dim)
    texts = ["Expense reports are filed in the finance tool.", "Expense reports need a receipt for every item.",
             "Meals are not reimbursed.", "Expense reports above 500 need a director's approval."]
    store.write_document(coll, SourceInfo(path="finance.md", title="Finance", kind="md"),
                         [NewChunk(text=t) for t in texts], embedder.embed(texts))
    other = ["The travel desk books flights and hotels."]
    store.write_document(coll, SourceInfo(path="travel.md", title="Travel", kind="md"), [NewChunk(text=t) for t in other],
                         embedder.embed(other))
    plain = Retriever(store, embedder).search("expense reports", "long", k=3)
    assert [h.path for h in plain].count("finance.md") == 3
    diverse = Retriever(store, embedder, per_document=1, merge_adjacent=True).search("expense reports", "long", k=3)
    assert [h.path for h in diverse].count("finance.md") == 1 and "travel.md" in [h.path for h in diverse]
    first = next(h for h in diverse if h.path == "finance.md")
    assert len(first.chunk_ids) >= 2 and all(store.chunk_records([c])[c].text in first.text for c in first.chunk_ids)
    files = Retriever(store, embedder).search("expense reports", "long", k=5, per_document=1)
    assert sorted(h.path for h in files) == ["finance.md", "travel.md"]


def test_neighbouring_chunks_of_two_sheets_stay_two_places(store, embedder):
    coll = store.ensure_collection("sheets", embedder.name, embedder.dim)
    sheets = [("Budget 2025", 1, "| item | cost |\n| travel | 1200 |"),
              ("Budget 2026", 2, "| item | cost |\n| travel | 1500 |")]
    texts = [t for _, _, t in sheets]
    store.write_document(coll, SourceInfo(path="budget.xlsx", title="budget", kind="xlsx"),
                         [NewChunk(text=t, location=Location(heading_path=h, page=p)) for h, p, t in sheets],
                         embedder.embed(texts))
    hits = Retriever(store, embedder, merge_adjacent=True).search("travel cost", "sheets", k=2)
    assert sorted(h.page for h in hits) == [1, 2] and all(len(h.chunk_ids) == 1 for h in hits)

def test_source_prior_puts_the_defining_file_first(store, embedder):
    from indexes.retrieval.ranking import PathPrior

    coll = store.ensure_collection("code", embedder.name, embedder.dim)
    docs = {
        "docs/api.rst": ("API", "make_response converts the return value of a view into a response object; "
                         "use make_response to add headers to a response.", None, ""),
        "tests/test_basic.py": ("test_basic.py", "def test_make_response(app):\n    rv = flask.make_response()\n"
                                "    assert rv.status_code == 200", 1, "test_make_response"),
        "src/app.py": ("app.py", "def make_response(self, rv):\n    \"\"\"Convert the return value of a view.\"\"\"\n"
                       "    return self.response_class(rv)", 10, "Flask.make_response"),
    }
    for path, (title, text, line, symbol) in docs.items():
        where = Location(line_start=line, line_end=line + 3 if line else None, symbol=symbol)
        chunk = NewChunk(text=text, location=where)
        store.write_document(coll, SourceInfo(path=path, title=title, kind=path.rsplit(".", 1)[1]), [chunk],
                             embedder.embed([text]))
    query = "Where is make_response implemented?"
    ranked = Retriever(store, embedder, code_terms=True, prior=PathPrior(source=0.3, symbol=0.1)).search(query, "code", k=3)
    assert ranked[0].path == "src/app.py"


def test_a_snippet_starts_at_what_the_section_says_not_its_headings(store, embedder):
    """A chunk's text starts with its section's headings (a paragraph each): the card shows them apart."""
    coll = store.ensure_collection("guide", embedder.name, embedder.dim)
    texts = ["Tea guide\n\nBrewing\n\nSteep green tea for two minutes at eighty degrees.", "Brewing"]
    place = [Location(heading_path="Tea guide › Brewing"), Location(heading_path="Tea guide › Brewing")]
    store.write_document(coll, SourceInfo(path="tea.md", title="Tea guide", kind="md"),
                         [NewChunk(text=t, location=p) for t, p in zip(texts, place)], embedder.embed(texts))
    hits = {h.text: h for h in Retriever(store, embedder).search("steep green tea brewing", "guide", k=2)}
    assert hits[texts[0]].snippet == "Steep green tea for two minutes at eighty degrees."
    assert hits["Brewing"].snippet == "Brewing"  # a chunk that is only its heading keeps it


def test_searches_beyond_those_allowed_at_once_wait_their_turn(retriever, store, embedder):
    """Never more than `searches_at_once` searches inside at a time, and every caller gets its own results."""
    inside, most, lock = [0], [0], threading.Lock()

    class Counting:  # the question embedder, counting the searches in their dense halves at once
        def __getattr__(self, name):
            return getattr(embedder, name)

        def embed_query(self, query):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            try:
                time.sleep(0.02)  # a slow embedding, so that the searches overlap if allowed to
                return embedder.embed_query(query)
            finally:
                with lock:
                    inside[0] -= 1

    gated = Retriever(store, Counting(), searches_at_once=2)
    questions = ["how far ahead should I book a flight?", "who approves hotels?"] * 6
    with ThreadPoolExecutor(12) as ex:
        found = list(ex.map(lambda q: gated.search(q, "docs", k=1)[0].path, questions))
    assert most[0] == 2, most[0]
    assert found == [retriever.search(q, "docs", k=1)[0].path for q in questions]
    assert gated.dense_pool._max_workers == 2 and Retriever(store, embedder, parallel=False).dense_pool is None
