"""`assistant db copy --to URL`: a data dir with the handbook and Flask collections copied into
PostgreSQL, verified by equal row counts and the same top 5 for 20 sampled questions. (15 handbook
pages and Flask's `json/` and `sansio/` packages keep the embedding part of the test short.)"""

from __future__ import annotations

import json
import shutil

import pytest

from assistant.cli import main
from indexes.store_copy import table_counts
from indexes.store import Store
from ingest.pipeline import ingest_paths
from tests.conftest import shared_path


@pytest.fixture(scope="module")
def handbook_pages(tmp_path_factory):
    src = shared_path("corpora", "wiki-18f-handbook")
    root = tmp_path_factory.mktemp("handbook")
    for page in sorted((src / "pages" / "travel-and-leave").rglob("*.md"))[:15]:
        dest = root / page.relative_to(src)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(page, dest)
    return root


@pytest.mark.slow
def test_copy_into_postgres_keeps_counts_and_top_5(tmp_path, embedder, handbook_pages, flask_src, pg_url,
                                                     monkeypatch, capsys):
    data = tmp_path / "data"
    store = Store(data)
    assert ingest_paths(store, embedder, [handbook_pages], "handbook").files_failed == 0
    flask = [flask_src / "src" / "flask" / "json", flask_src / "src" / "flask" / "sansio"]
    assert ingest_paths(store, embedder, flask, "flask").files_failed == 0
    store.close()

    assert main(["db", "copy", "--to", pg_url, "--data-dir", str(data), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts_equal"] and report["copied"]["chunk"] > 60
    assert (report["searches"], report["searches_equal"]) == (20, 20)

    copied = Store(tmp_path / "replica", database_url=pg_url)
    assert {c["name"]: c["chunks"] for c in copied.list_collections()} == {
        c["name"]: c["chunks"] for c in Store(data).list_collections()}
    assert table_counts(copied.engine)["ingestjob"] == table_counts(Store(data).engine)["ingestjob"]
    copied.close()

    # a second copy into the same database is refused: it is no longer empty
    assert main(["db", "copy", "--to", pg_url, "--data-dir", str(data)]) == 2
    assert "not empty" in capsys.readouterr().err
