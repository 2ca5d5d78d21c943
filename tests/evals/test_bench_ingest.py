"""`assistant bench ingest`: its figures come from a real run, a raw encode of the same texts, a re-run."""

from __future__ import annotations

import pytest

from assistant.cli import build_parser
from evals import bench_ingest
from evals.bench_ingest import run_bench
from ingest.prepare import IngestOptions

pytestmark = pytest.mark.slow


def test_bench_reports_end_to_end_raw_ratio_and_rerun(tmp_path, embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(12):
        (docs / f"page-{i}.md").write_text(f"# Page {i}\n\n" + f"Paragraph {i} explains the rota for team {i}. " * 30)
    (docs / "tool.py").write_text("def tool(x):\n    \"\"\"Double it.\"\"\"\n    return 2 * x\n")
    result = run_bench([str(docs)], embedder, IngestOptions(), tmp_path / "store")
    assert (result["files"], result["files_ingested"], result["files_failed"]) == (13, 13, 0)
    assert result["chunks"] >= 13 and result["chunks_embedded"] <= result["chunks"]
    assert result["chunks_per_s"] == pytest.approx(result["chunks"] / result["seconds"], rel=0.01)
    assert result["raw_encode_chunks_per_s"] > 0
    assert result["ratio"] == pytest.approx(result["chunks_per_s"] / result["raw_encode_chunks_per_s"], rel=0.01)
    assert result["rerun_files_skipped"] == 13 and result["rerun_chunks_embedded"] == 0
    assert result["rerun_speedup"] == pytest.approx(result["seconds"] / result["rerun_seconds"], rel=0.05)
    assert result["rerun_speedup"] > 1


def test_bench_ingest_is_a_bench_subcommand():
    args = build_parser().parse_args(["bench", "ingest", "/some/folder", "--json"])
    assert args.paths == ["/some/folder"] and args.json and args.func is bench_ingest.run
