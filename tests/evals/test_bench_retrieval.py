"""`assistant bench retrieval` at a tiny size: the report's shape, an IVF index past the threshold,
recall measured against exact search, and a cold start that loads instead of rebuilding."""

import json

import pytest

from assistant.cli import build_parser, main


def test_bench_has_pluggable_subcommands():
    parser = build_parser()
    args = parser.parse_args(["bench", "retrieval", "--chunks", "1000", "--json"])
    assert args.bench_command == "retrieval" and args.chunks == "1000"


def test_bench_rejects_tiny_sizes(capsys):
    assert main(["bench", "retrieval", "--chunks", "10"]) == 2
    assert "at least 1000" in capsys.readouterr().err
    assert main(["bench", "retrieval", "--chunks", "1000", "--bursts", "0"]) == 2
    assert "--bursts takes numbers of searches from 1 to 256" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_retrieval_small(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ASSISTANT_RETRIEVAL_ANN_THRESHOLD", "1000")
    keep = tmp_path / "bench"
    code = main(["bench", "retrieval", "--chunks", "2000", "--queries", "20", "--nprobe", "4,64", "--bursts", "1,4", "--json",
                 "--keep", str(keep), "--data-dir", str(tmp_path / "data")])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    (size,) = out["sizes"]
    assert size["chunks"] == 2000 and size["search"]["queries"] == 20
    assert size["search"]["p99_ms"] >= size["search"]["p50_ms"] > 0
    ann = size["ann"]
    assert ann["index"] == "ivf" and ann["vectors"] == 2000
    assert 0 < ann["by_nprobe"]["4"]["recall@10"] <= ann["by_nprobe"]["64"]["recall@10"] <= 1.0
    assert [(b["searches"], b["rounds"]) for b in size["bursts"]] == [(1, 3), (4, 3)]
    assert all(b["max_ms"] >= b["p50_ms"] > 0 for b in size["bursts"]) and out["settings"]["searches_at_once"] == 2
    cold = size["cold_start"]
    assert cold["rebuilds"] == 0 and cold["mapped"] and cold["index"] == "ivf"
    assert [b["by_processes"] for b in size["bursts"]] == [0, 0]
    # A second run with the same --keep reuses the collection instead of building it again; with a search
    # process, the searches of a burst that find no turn here go to it.
    monkeypatch.setenv("ASSISTANT_RETRIEVAL_SEARCH_PROCESSES", "1")
    monkeypatch.setenv("ASSISTANT_RETRIEVAL_SEARCHES_AT_ONCE", "1")
    assert main(["bench", "retrieval", "--chunks", "2000", "--queries", "20", "--bursts", "8", "--json", "--keep", str(keep),
                 "--data-dir", str(tmp_path / "data")]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["sizes"][0]["build"] == "reused" and again["settings"]["search_processes"] == 1
    (burst,) = again["sizes"][0]["bursts"]
    assert 0 < burst["by_processes"] < 24 and burst["p50_ms"] > 0


@pytest.mark.slow
def test_bench_retrieval_reports_postgres_beside_sqlite(tmp_path, monkeypatch, capsys, pg_url):
    monkeypatch.setenv("ASSISTANT_DATABASE_URL", pg_url)
    code = main(["bench", "retrieval", "--chunks", "1000", "--queries", "20", "--nprobe", "8", "--json",
                 "--data-dir", str(tmp_path / "data")])
    assert code == 0
    (size,) = json.loads(capsys.readouterr().out)["sizes"]
    sqlite, pg = size["search"], size["postgres"]["search"]
    assert sqlite["queries"] == pg["queries"] == 20
    assert pg["p99_ms"] >= pg["p50_ms"] > 0
