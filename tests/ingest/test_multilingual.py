"""Multilingual text: CJK sentences and words found by the trigram table; code names by their words."""

from __future__ import annotations

import pytest

from indexes.lexical.fts5 import query_terms
from indexes.maintenance import check_store
from indexes.lexical.fts5 import identifier_words, path_terms
from ingest.pipeline import ingest_paths

pytestmark = pytest.mark.slow


def test_identifier_and_path_words():
    assert identifier_words("Flask.make_response") == "flask make response"
    assert identifier_words("HTTPErrorHandler") == "http error handler"
    assert path_terms("src/JsonProvider.py") == "src JsonProvider py json provider"


def test_cjk_words_inside_sentences_are_found(tmp_path, store, embedder):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "meeting.md").write_text("# 会議\n\n定例会議は毎週月曜日の午前十時に本社の三階で始まります。\n")
    (root / "lunch.md").write_text("# 昼食\n\n社員食堂は正午から午後二時まで営業しています。\n")
    (root / "korean.md").write_text("# 회의\n\n주간 회의는 매주 월요일 오전에 열립니다.\n")
    (root / "english.md").write_text("# Parking\n\nThe parking garage opens at six in the morning.\n")
    ingest_paths(store, embedder, [root], "ml")
    coll = store.require_collection("ml")

    def found(query: str) -> list[str]:
        hits = store.lexical.search([coll.id], query_terms(query), 5).top
        records = store.chunk_records([cid for cid, _ in hits])
        return [records[cid].path for cid, _ in hits]

    assert found("月曜日") == ["meeting.md"]  # a word inside a sentence: unicode61 alone cannot see it
    assert found("社員食堂の営業") [0] == "lunch.md"
    assert found("会議") == ["meeting.md"]  # two characters: shorter than a trigram
    assert found("월요일")[0] == "korean.md"
    assert found("parking garage") == ["english.md"]
    assert check_store(store) == []  # the trigram table is in step with the chunks

    doc = store.get_document(coll, "meeting.md")
    store.delete_document(coll, doc.id)
    assert found("月曜日") == []
