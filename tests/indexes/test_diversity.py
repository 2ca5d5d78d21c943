"""Document-diverse top-k: a cap of places per document, adjacent chunks merged into one place."""

from indexes.retrieval.hits import ChunkMeta, merge_parts, merge_texts
from indexes.retrieval.ranking import diverse_places


def _meta(spec):
    """chunk id -> (document id, ordinal)."""
    return {cid: ChunkMeta(doc, ordinal, f"d{doc}.md", "", False) for cid, (doc, ordinal) in spec.items()}


def test_a_document_takes_at_most_its_cap_of_places():
    meta = _meta({1: (1, 0), 2: (1, 5), 3: (1, 9), 4: (2, 0), 5: (3, 0)})
    places = diverse_places([1, 2, 3, 4, 5], meta, 3, per_document=2, merge_adjacent=False)
    assert [p.best for p in places] == [1, 2, 4]
    assert [p.best for p in diverse_places([1, 2, 3, 4, 5], meta, 3)] == [1, 2, 3]  # no cap


def test_adjacent_chunks_merge_into_the_place_of_the_better_one():
    meta = _meta({1: (1, 4), 2: (2, 0), 3: (1, 5), 4: (1, 3), 5: (3, 0)})
    places = diverse_places([1, 2, 3, 4, 5], meta, 3, per_document=1, merge_adjacent=True)
    assert [p.best for p in places] == [1, 2, 5]
    assert places[0].chunk_ids == [4, 1, 3]  # document order


def test_merging_stops_at_the_size_of_a_place():
    meta = _meta({i: (1, i) for i in range(1, 7)})
    (place,) = diverse_places(list(range(1, 7)), meta, 1, per_document=1, max_merged=3)
    assert place.chunk_ids == [1, 2, 3]


def test_merged_text_writes_the_overlap_once():
    a = "The cache keeps entries for ten minutes. After that the entry is refreshed from the source."
    b = "After that the entry is refreshed from the source. Stale entries are never served."
    assert merge_texts([a, b]) == a + " Stale entries are never served."
    assert merge_texts(["First part.", "Second part."]) == "First part.\nSecond part."


def test_merged_parts_say_where_each_text_lies():
    a = "The cache keeps entries for ten minutes. After that the entry is refreshed from the source."
    b = "After that the entry is refreshed from the source. Stale entries are never served.  "
    c = "\n  Misses go to the origin."
    text, parts = merge_parts([a, b, c])
    assert text == merge_texts([a, b, c])
    assert text.count("After that") == 1
    for own, p in zip([a, b, c], parts):
        assert text[p.start:p.end] == own[p.skip:][: p.end - p.start]
        if p.shared:
            assert text[p.start - p.skip:p.start] == own[: p.skip]
    assert [p.shared for p in parts] == [False, True, False]
    assert text[parts[1].end:parts[2].start] == "\n"  # b's trailing spaces went with the line break


def test_a_workbook_s_sheets_are_never_one_place():
    meta = {1: ChunkMeta(1, 4, "budget.xlsx", "", False, sheet=1), 2: ChunkMeta(1, 5, "budget.xlsx", "", False, sheet=2),
            3: ChunkMeta(1, 3, "budget.xlsx", "", False, sheet=1)}
    places = diverse_places([1, 2, 3], meta, 3)
    assert [p.chunk_ids for p in places] == [[3, 1], [2]]
