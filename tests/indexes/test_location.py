"""One Location for every record that carries a chunk's place: the flat JSON keys, their order and the
SQL column order stay what they were, and a merged hit's anchor follows its lines."""

from __future__ import annotations

import pickle

from indexes.location import FIELDS, Location, columns, flat_dicts
from indexes.reading import PassageChunk
from indexes.records import NewChunk
from indexes.retrieval.retriever import Hit
from indexes.store import ChunkRecord

PLACE = Location(heading_path="Guide › Install", anchor="L3-L9", page=None, line_start=3, line_end=9, symbol="setup")


def test_fields_defaults_and_flat_keys():
    assert FIELDS == ("heading_path", "anchor", "page", "line_start", "line_end", "symbol")
    assert Location() == Location("", "", None, None, None, "")
    assert PLACE.to_dict() == {"heading_path": "Guide › Install", "anchor": "L3-L9", "page": None, "line_start": 3,
                               "line_end": 9, "symbol": "setup"}
    assert tuple(PLACE.to_dict()) == FIELDS and PLACE.row() == ("Guide › Install", "L3-L9", None, 3, 9, "setup")
    assert columns() == "heading_path, anchor, page, line_start, line_end, symbol"
    assert columns("c") == "c.heading_path, c.anchor, c.page, c.line_start, c.line_end, c.symbol"


def test_from_dict_ignores_other_keys_and_defaults_missing_ones():
    assert Location.from_dict({"path": "a.md", "title": "A", **PLACE.to_dict()}) == PLACE
    assert Location.from_dict({"page": 4, "score": 0.5}) == Location(page=4)


def test_with_lines_widens_and_a_line_anchor_follows():
    assert PLACE.with_lines(1, 20) == Location("Guide › Install", "L1-L20", None, 1, 20, "setup")
    heading = Location(heading_path="Install", anchor="install", line_start=5, line_end=6)
    assert heading.with_lines(5, 12).anchor == "install"


def test_records_read_their_location_flat():
    chunk = NewChunk(text="body", location=PLACE)
    record = ChunkRecord(1, 2, "docs", "a.py", "/src", "A", "py", "body", PLACE)
    part = PassageChunk(1, 0, "body", PLACE)
    for x in (chunk, record, part):
        assert (x.heading_path, x.anchor, x.page, x.line_start, x.line_end, x.symbol) == PLACE.row()
    assert NewChunk(text="bare").location == Location()
    assert pickle.loads(pickle.dumps(chunk)) == chunk  # it crosses from the parser process


def test_hit_and_passage_dicts_keep_their_flat_keys_in_order():
    hit = Hit(chunk_id=1, document_id=2, collection="docs", path="a.py", title="A", kind="py", text="body",
              snippet="bo", location=PLACE, score=0.5, chunk_ids=[1])
    out = hit.to_dict()
    assert list(out) == ["chunk_id", "document_id", "collection", "path", "title", "kind", "text", "snippet",
                         *FIELDS, "score", "dense_rank", "lexical_rank", "dense_score", "lexical_score", "chunk_ids"]
    assert out["line_start"] == 3 and out["symbol"] == "setup" and "location" not in out
    assert out["chunk_ids"] == [1] and out["chunk_ids"] is not hit.chunk_ids
    part = PassageChunk(7, 3, "body", PLACE).to_dict()
    assert part == {"chunk_id": 7, "ordinal": 3, "text": "body", **PLACE.to_dict()}
    assert list(part) == ["chunk_id", "ordinal", "text", *FIELDS]


def test_flat_dicts_of_many_records_in_one_pass_leave_a_field_out_and_copy_lists():
    hits = [Hit(chunk_id=n, document_id=2, collection="docs", path="a.py", title="A", kind="py", text=f"body {n}",
                snippet="bo", location=PLACE, score=0.5, chunk_ids=[n, n + 1]) for n in (1, 5)]
    made = flat_dicts(hits, leave_out="text")
    assert [list(d) for d in made] == [[k for k in h.to_dict() if k != "text"] for h in hits], "the same keys, in order"
    assert [d["chunk_ids"] for d in made] == [[1, 2], [5, 6]]
    assert made[0]["chunk_ids"] is not hits[0].chunk_ids, "a list is copied: a source changed later leaves the hit be"
    assert flat_dicts(hits)[1] == hits[1].to_dict() == hits[1].flat_dict()
