"""Ingesting real folders into a real store with the real embedder."""

from __future__ import annotations

import shutil
from pathlib import Path

import faiss
import numpy as np
import pytest

from indexes.store import SourceInfo
from ingest.pipeline import ProgressEvent, ingest_paths
from tests.conftest import shared_path

pytestmark = pytest.mark.slow


def copy_handbook(dest: Path, n: int = 30) -> list[Path]:
    pages = shared_path("corpora", "wiki-18f-handbook", "pages")
    chosen = sorted(pages.rglob("*.md"))[:n]
    for src in chosen:
        target = dest / src.relative_to(pages)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    return [dest / p.relative_to(pages) for p in chosen]


def assert_consistent(store, name: str) -> int:
    """Chunk rows == sum of n_chunks == vectors in the FAISS file on disk; returns the chunk count."""
    coll = store.require_collection(name)
    rows, declared = store.counts(coll)
    assert rows == declared
    assert len(store.vector_index(coll)) == rows
    [faiss_file] = (store.data_dir / "vectors").glob(f"{coll.id}.g*.faiss")
    assert faiss_file.name == f"{coll.id}.g{coll.generation}.faiss"
    assert faiss.read_index(str(faiss_file)).ntotal == rows
    return rows


def test_handbook_ingest_rerun_change_delete(tmp_path, store, embedder):
    root = tmp_path / "handbook"
    files = copy_handbook(root)
    events: list[ProgressEvent] = []

    first = ingest_paths(store, embedder, [root], "handbook", progress=events.append)
    assert (first.files_seen, first.files_ingested, first.files_failed) == (30, 30, 0), first.failures
    assert first.chunks_written == first.chunks_embedded > 30
    assert assert_consistent(store, "handbook") == first.chunks_written
    assert events[0].stage == "start" and events[0].total == 30
    stages = [e.stage for e in events]
    assert stages.count("begin") == stages.count("file") == 30 and stages[-1] == "done"
    assert {e.status for e in events if e.stage == "file"} == {"ingested"}
    assert [e.completed for e in events if e.stage == "file"] == list(range(1, 31))

    coll = store.require_collection("handbook")
    docs = {d.path: d for d in store.list_documents(coll)}
    assert set(docs) == {str(f.relative_to(root)) for f in files}
    assert all(d.status == "ok" and d.title and d.root == str(root.resolve()) for d in docs.values())

    again = ingest_paths(store, embedder, [root], "handbook")
    assert (again.files_skipped, again.files_ingested, again.chunks_embedded, again.chunks_written) == (30, 0, 0, 0)

    # change one file: only it is redone, and only its new chunk needs embedding
    target = max(files, key=lambda f: docs[str(f.relative_to(root))].n_chunks)
    rel = str(target.relative_to(root))
    before = docs[rel].n_chunks
    with open(target, "a") as fh:
        fh.write("\n\n## Zebra crossings\n\nStaff who walk to the office use the zebra crossing on F Street.\n")
    changed = ingest_paths(store, embedder, [root], "handbook")
    assert (changed.files_ingested, changed.files_skipped) == (1, 29)
    doc = store.get_document(coll, rel)
    assert doc.n_chunks == changed.chunks_written >= before
    assert 1 <= changed.chunks_embedded < changed.chunks_written
    assert assert_consistent(store, "handbook") == first.chunks_written - before + doc.n_chunks
    hits = store.lexical.search([coll.id], ["zebra"], 5).top
    assert hits and "zebra crossing" in store.chunk_records([hits[0][0]])[hits[0][0]].text

    # delete one file: its document goes
    gone = files[0]
    gone.unlink()
    removed = ingest_paths(store, embedder, [root], "handbook")
    assert (removed.files_removed, removed.files_seen, removed.files_skipped) == (1, 29, 29)
    assert store.get_document(coll, str(gone.relative_to(root))) is None
    assert_consistent(store, "handbook")


def test_other_chunk_settings_redo_unchanged_files(tmp_path, store, embedder):
    root = tmp_path / "docs"
    root.mkdir()
    sentence = "The library lends laptops to staff who travel for more than three days. "
    for name in ("a.md", "b.md"):
        (root / name).write_text(f"# {name}\n\n" + sentence * 12)
    first = ingest_paths(store, embedder, [root], "c", chunk_tokens=200, overlap_tokens=32)
    resplit = ingest_paths(store, embedder, [root], "c", chunk_tokens=64, overlap_tokens=8)
    assert (resplit.files_ingested, resplit.files_skipped) == (2, 0)
    assert resplit.chunks_written > first.chunks_written
    coll = store.require_collection("c")
    assert max(c.n_tokens for c in _chunks(store, coll)) <= 64
    assert assert_consistent(store, "c") == resplit.chunks_written


def _chunks(store, coll):
    from sqlmodel import select

    from indexes.models import Chunk

    with store.session() as s:
        return s.exec(select(Chunk).where(Chunk.collection_id == coll.id)).all()


def test_messy_docs_and_bad_files_never_abort_the_run(tmp_path, store, embedder):
    root = tmp_path / "messy"
    shutil.copytree(shared_path("corpora", "messy-docs"), root)
    for p in root.iterdir():
        p.chmod(0o644)
    (root / "blob.bin").write_bytes(bytes(range(256)) * 16)
    (root / "empty.md").write_bytes(b"")
    (root / "notes.md").write_text("# Notes\n\nThe quarterly report is due on the first Monday of April.\n")

    report = ingest_paths(store, embedder, [root], "messy")
    assert report.files_seen == 23
    assert report.files_ingested + report.files_failed + report.files_ignored == 23
    reasons = {f.path: f.reason for f in report.failures}
    assert reasons["password.pdf"] == "password-protected or encrypted PDF"
    left_out = {f.path: f.reason for f in report.ignored}
    assert left_out["blob.bin"].startswith("binary file")
    assert left_out["empty.md"] == "empty file"
    assert all(r.strip() for r in [*reasons.values(), *left_out.values()])
    assert report.files_ingested >= 18

    coll = store.require_collection("messy")
    docs = {d.path: d for d in store.list_documents(coll)}
    assert len(docs) == 23 - len(left_out)  # files left out on purpose get no document
    for path, reason in reasons.items():
        assert docs[path].status == "failed" and docs[path].error == reason and docs[path].n_chunks == 0
    assert docs["notes.md"].status == "ok" and docs["notes.md"].title == "Notes"
    chunks = assert_consistent(store, "messy")
    assert chunks == report.chunks_written == sum(d.n_chunks for d in docs.values())
    # page numbers of PDFs reach the chunks
    pdf_pages = {c.page for c in _chunks(store, coll) if c.document_id == docs["multi-column-2p.pdf"].id}
    assert pdf_pages == {1, 2}

    # failed files are tried again; unchanged good ones are skipped
    again = ingest_paths(store, embedder, [root], "messy")
    assert again.files_skipped == report.files_ingested
    assert again.files_failed == report.files_failed and again.chunks_embedded == 0


def test_failed_document_replaces_chunks_with_empty_vectors(tmp_path, store, embedder):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nSome words about apples and their orchards in the valley.\n")
    ingest_paths(store, embedder, [root], "c")
    coll = store.require_collection("c")
    assert assert_consistent(store, "c") == 1
    # the same call the pipeline makes for a failing file
    info = SourceInfo(path="a.md", root=str(root.resolve()), title="a.md", kind="md")
    store.write_document(coll, info, [], np.zeros((0, embedder.dim), np.float32), status="failed", error="boom")
    store.save_vectors(store.require_collection("c"))
    assert assert_consistent(store, "c") == 0
    assert store.get_document(coll, "a.md").error == "boom"


def test_oversized_duplicate_and_single_file_inputs(tmp_path, store, embedder):
    one, two = tmp_path / "one", tmp_path / "two"
    for d in (one, two):
        d.mkdir()
        (d / "same.md").write_text(f"# Same\n\nThis page lives under the folder {d.name} of the test.\n")
    (one / "big.txt").write_text("word " * 5000)
    report = ingest_paths(store, embedder, [one, two], "dup", max_file_bytes=10_000)
    reasons = {f.path: f.reason for f in report.failures}
    assert reasons["big.txt"].startswith("file too large")
    assert "same path as a file under" in reasons["same.md"]
    coll = store.require_collection("dup")
    assert store.get_document(coll, "same.md").root == str(one.resolve())  # the first one is kept

    single = ingest_paths(store, embedder, [two / "same.md"], "single")
    assert (single.files_seen, single.files_ingested) == (1, 1)
    with pytest.raises(FileNotFoundError):
        ingest_paths(store, embedder, [tmp_path / "missing"], "single")
