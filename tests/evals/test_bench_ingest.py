"""`assistant bench ingest`: its figures come from a real run, a raw encode of the same texts, a re-run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assistant.cli import build_parser
from evals import bench_ingest
from evals.bench_ingest import run_bench
from indexes.ocr_tools import find_tools
from ingest.prepare import IngestOptions

pytestmark = pytest.mark.slow
OCR_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ocr"
TOOLS = find_tools()
OCR_READY = TOOLS.tesseract is not None and TOOLS.pdftoppm is not None and {"eng", "chi_sim"} <= set(TOOLS.languages)


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
    assert (result["ocr_pages"], result["ocr_pages_per_min"]) == (0, 0.0)  # nothing here was read through OCR


@pytest.mark.skipif(not OCR_READY, reason="OCR is not installed: apt-get install tesseract-ocr tesseract-ocr-eng "
                    "tesseract-ocr-chi-sim poppler-utils")
def test_bench_counts_the_pages_read_through_ocr(tmp_path, embedder):
    """Run with -s to see the OCR throughput of this machine."""
    scans = tmp_path / "scans"
    shutil.copytree(OCR_FIXTURES, scans, ignore=shutil.ignore_patterns("*.py"))
    result = run_bench([str(scans)], embedder, IngestOptions(), tmp_path / "store")
    assert (result["files_ingested"], result["files_failed"]) == (5, 0), result["failures"]
    assert result["ocr_pages"] == 5  # one page each, and only the scanned page of mixed.pdf
    assert result["ocr_pages_per_min"] == pytest.approx(5 * 60 / result["seconds"], rel=0.01)
    print(f"\nOCR: {result['ocr_pages']} pages in {result['seconds']} s: {result['ocr_pages_per_min']} pages/min")


def test_bench_ingest_is_a_bench_subcommand():
    args = build_parser().parse_args(["bench", "ingest", "/some/folder", "--json"])
    assert args.paths == ["/some/folder"] and args.json and args.func is bench_ingest.run
