"""PostgreSQL's own lexical search (retrieval.lexical = postgres): weighted tsvector ranked by ts_rank_cd,
pg_trgm for CJK text, filters inside the statement, columns in step with the chunk rows."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from indexes.lexical.fts5 import query_terms
from indexes.location import Location
from indexes.store import NewChunk, SourceInfo, Store, StoreError
from tests.indexes.test_store import unit


@pytest.fixture
def pg_store(tmp_path, pg_url):
    store = Store(tmp_path / "data", database_url=pg_url)
    store.configure_lexical("postgres")
    yield store
    store.close()


def write(store: Store, path: str, chunks: list[NewChunk], *, title: str = "", kind: str = "md", mtime: float = 0.0,
          seed: int = 0):
    coll = store.ensure_collection("docs", "m", 8)
    return store.write_document(coll, SourceInfo(path=path, title=title, kind=kind, mtime=mtime), chunks,
                                unit(len(chunks), seed=seed))


def top_paths(store: Store, question: str, k: int = 5, **filters) -> list[str]:
    from indexes.retrieval.filters import SearchFilters

    coll = store.get_collection("docs")
    flt = SearchFilters(**filters) if filters else None
    hits = store.lexical.search([coll.id], query_terms(question), k, budget=2000, filters=flt).top
    records = store.chunk_records([cid for cid, _ in hits])
    return [records[cid].path for cid, _ in hits]


@pytest.mark.parametrize("rank", ["bm25", "idf", "ts_rank_cd"])
def test_an_english_question_finds_its_chunk_and_unmatched_chunks_score_zero(pg_store, rank):
    pg_store.configure_lexical("postgres", rank=rank, normalisation=1)
    write(pg_store, "vacation.md", [NewChunk(text="Employees request vacation days through the HR portal.")], seed=1)
    write(pg_store, "backup.md", [NewChunk(text="Backups of the build servers run every night at two.")], seed=2)
    write(pg_store, "laptop.md", [NewChunk(text="A new laptop is configured by IT on the first day.")], seed=3)
    assert top_paths(pg_store, "How do I request vacation days?")[0] == "vacation.md"
    assert top_paths(pg_store, "When do the nightly backups run?") == ["backup.md"]
    coll = pg_store.get_collection("docs")
    result = pg_store.lexical.search([coll.id], query_terms("requesting vacations"), 5, budget=2000)
    (best, score), = result.top
    assert score > 0 and result.match  # stemmed: requesting -> request, vacations -> vacat
    other = next(iter(set(pg_store.chunk_ids(coll.id).tolist()) - {best}))
    assert pg_store.lexical.scores([best, other], result.match) == {best: pytest.approx(score), other: 0.0}


def test_the_title_and_headings_weigh_more_than_the_body(pg_store):
    write(pg_store, "body.md", [NewChunk(text="Something about kubernetes deployments in passing.")], title="Notes",
          seed=1)
    write(pg_store, "titled.md", [NewChunk(text="Something about deployments in passing.")], title="Kubernetes",
          seed=2)
    write(pg_store, "heading.md",
          [NewChunk(text="Something about deployments in passing.", location=Location(heading_path="Kubernetes"))],
          title="Other", seed=3)
    assert top_paths(pg_store, "kubernetes") == ["titled.md", "heading.md", "body.md"]


def test_identifiers_match_by_their_parts_and_dotted_names_by_their_words(pg_store):
    write(pg_store, "src/flask/app.py",
          [NewChunk(text="def make_response(self, rv):\n    return rv", location=Location(symbol="make_response"))],
          kind="py", seed=1)
    write(pg_store, "src/flask/json/provider.py",
          [NewChunk(text="class DefaultJSONProvider(JSONProvider):\n    pass",
                    location=Location(symbol="DefaultJSONProvider"))],
          kind="py", seed=2)
    write(pg_store, "docs/api.md", [NewChunk(text="See flask.Flask for the application object.")], seed=3)
    assert top_paths(pg_store, "make response")[0] == "src/flask/app.py"
    assert top_paths(pg_store, "make_response")[0] == "src/flask/app.py"
    assert top_paths(pg_store, "default json provider")[0] == "src/flask/json/provider.py"  # CamelCase parts
    assert top_paths(pg_store, "provider") == ["src/flask/json/provider.py"]  # a path word
    assert "docs/api.md" in top_paths(pg_store, "application flask")


def test_a_chinese_question_finds_its_chunk_through_trigrams(pg_store):
    write(pg_store, "onboarding.md", [NewChunk(text="入职第一天拿到电脑以后，要先配置 VPN 才能访问内部的 GitLab。")], seed=1)
    write(pg_store, "leave.md", [NewChunk(text="年假需要提前两周在人事系统里提交申请，由直属经理审批。")], seed=2)
    write(pg_store, "backup.md", [NewChunk(text="数据库每天凌晨两点自动备份，备份保留三十天。")], seed=3)
    assert top_paths(pg_store, "拿到电脑以后要先配置什么？")[0] == "onboarding.md"
    assert top_paths(pg_store, "年假需要提前多久申请？")[0] == "leave.md"
    assert top_paths(pg_store, "备份保留多久")[0] == "backup.md"


def test_filters_apply_inside_the_search(pg_store):
    write(pg_store, "docs/a.md", [NewChunk(text="release checklist for the server")], kind="md", mtime=100, seed=1)
    write(pg_store, "notes/b.txt", [NewChunk(text="release checklist for the client")], kind="txt", mtime=200, seed=2)
    write(pg_store, "docs/c.md", [NewChunk(text="发布前的检查清单")], kind="md", mtime=300, seed=3)
    assert sorted(top_paths(pg_store, "release checklist")) == ["docs/a.md", "notes/b.txt"]
    assert top_paths(pg_store, "release checklist", paths=["docs/*"]) == ["docs/a.md"]
    assert top_paths(pg_store, "release checklist", kinds=["txt"]) == ["notes/b.txt"]
    assert top_paths(pg_store, "release checklist", modified_after=150) == ["notes/b.txt"]
    assert top_paths(pg_store, "检查清单") == ["docs/c.md"]
    assert top_paths(pg_store, "检查清单", paths=["notes/*"]) == []
    coll = pg_store.get_collection("docs")
    from indexes.retrieval.filters import SearchFilters

    allowed = pg_store.allowed_chunk_ids(coll.id, SearchFilters(paths=["docs/?.md"], modified_before=150))
    assert [pg_store.chunk_records([int(c)])[int(c)].path for c in allowed] == ["docs/a.md"]


def test_a_replaced_or_deleted_chunk_is_gone_from_the_results(pg_store):
    write(pg_store, "a.md", [NewChunk(text="the quarterly zebra report")], seed=1)
    write(pg_store, "b.md", [NewChunk(text="the quarterly giraffe report")], seed=2)
    assert top_paths(pg_store, "zebra") == ["a.md"]
    write(pg_store, "a.md", [NewChunk(text="the quarterly okapi report")], seed=3)  # replaced
    assert top_paths(pg_store, "zebra") == [] and top_paths(pg_store, "okapi") == ["a.md"]
    coll = pg_store.get_collection("docs")
    pg_store.delete_document(coll, pg_store.get_document(coll, "b.md").id)
    assert top_paths(pg_store, "giraffe") == [] and top_paths(pg_store, "quarterly report") == ["a.md"]


def test_the_setting_refuses_a_sqlite_store_with_a_clear_message(tmp_path, settings_factory):
    with pytest.raises(ValidationError, match="retrieval.lexical = 'postgres' needs database_url"):
        settings_factory(retrieval={"lexical": "postgres"})
    store = Store(tmp_path / "data")
    try:
        with pytest.raises(StoreError, match="needs the store on PostgreSQL"):
            store.configure_lexical("postgres")
    finally:
        store.close()


def test_a_store_copied_into_postgres_gets_its_search_columns(tmp_path, pg_url):
    from indexes.store_copy import copy_store

    source = Store(tmp_path / "sqlite")
    write(source, "a.md", [NewChunk(text="the copied walrus chapter")], seed=1)
    write(source, "b.md", [NewChunk(text="复制过来的海象章节")], seed=2)
    target = Store(tmp_path / "pg", database_url=pg_url)
    try:
        copy_store(source.engine, target.engine)
        target.configure_lexical("postgres")
        assert top_paths(target, "walrus") == ["a.md"] and top_paths(target, "海象章节") == ["b.md"]
    finally:
        source.close()
        target.close()


def test_the_retriever_takes_its_lexical_candidates_from_postgres(pg_store, embedder, settings_factory, pg_url):
    from indexes.factory import retriever_from
    from indexes.lexical.postgres import PgLexical

    coll = pg_store.ensure_collection("docs", embedder.name, embedder.dim)
    pages = {"travel/booking.md": "Book flights through the travel desk at least 14 days ahead.",
             "leave/vacation.md": "Annual leave accrues at 4 hours per pay period.",
             "code/app.py": "def make_response(rv):\n    return Response(rv)"}
    for path, text in pages.items():
        pg_store.write_document(coll, SourceInfo(path=path, title=path, kind=path.rsplit(".", 1)[1]),
                                [NewChunk(text=text)], embedder.embed([text]))
    settings = settings_factory(database_url=pg_url, retrieval={"lexical": "postgres"})
    retriever = retriever_from(settings.retrieval, pg_store, embedder)
    assert isinstance(pg_store.lexical, PgLexical) and pg_store.lexical_copy is None
    (hit,) = retriever.search("make_response", "docs", k=1)
    assert hit.path == "code/app.py" and hit.lexical_rank == 1
    hits = retriever.search("how many hours of annual leave?", "docs", k=3, filters={"paths": ["leave/*"]})
    assert [h.path for h in hits] == ["leave/vacation.md"] and hits[0].lexical_score > 0


@pytest.mark.parametrize("lexical", ["postgres", "copy"])
def test_rows_matching_a_word_are_counted_in_the_collections_asked(tmp_path, pg_url, lexical):
    """How rare a word is where a question is asked (answers/absent_terms.py), from either lexical index."""
    store = Store(tmp_path / "data", database_url=pg_url)
    store.configure_lexical(lexical)
    try:
        write(store, "a.md", [NewChunk(text="Booking travel early saves money."), NewChunk(text="Bookings close at noon.")])
        other = store.ensure_collection("other", "m", 8)
        store.write_document(other, SourceInfo(path="b.md", title="", kind="md"), [NewChunk(text="Sydney office booking.")],
                             unit(1, seed=3))
        docs = store.get_collection("docs").id
        assert store.lexical.rows_matching([docs], ["booking", "sydney"], 5) == {"booking": 2, "sydney": 0}
        assert store.lexical.rows_matching([docs, other.id], ["booking", "sydney"], 5) == {"booking": 3, "sydney": 1}
        assert store.lexical.rows_matching([docs], ["booking"], 0) == {"booking": 1}, "counted to cap + 1"
    finally:
        store.close()
