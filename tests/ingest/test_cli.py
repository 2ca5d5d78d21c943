"""`assistant ingest` as a user runs it: a subprocess with its own data directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from indexes.store import Store


def assistant(*args: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run the installed command from a folder of the user's (not the checkout, whose build leftovers
    could shadow the installed package metadata)."""
    return subprocess.run([sys.executable, "-m", "assistant.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


@pytest.mark.slow
def test_ingest_json_report_and_store(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nThe alpha team ships the release every second Thursday.\n")
    (docs / "b.txt").write_text("Beta notes: the office closes early on Fridays in August.\n")
    (docs / "empty.md").write_bytes(b"")
    data = tmp_path / "data"

    out = assistant("ingest", str(docs), "--collection", "notes", "--data-dir", str(data), "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout)  # one JSON object, nothing else on stdout
    assert report["collection"] == "notes"
    assert (report["files_seen"], report["files_ingested"], report["files_ignored"]) == (3, 2, 1)
    assert report["ignored"] == [{"path": "empty.md", "reason": "empty file"}]
    assert report["chunks_written"] == report["chunks_embedded"] == 2

    store = Store(data)
    try:
        coll = store.require_collection("notes")
        assert store.counts(coll) == (2, 2)
        assert {d.path: d.status for d in store.list_documents(coll)} == {"a.md": "ok", "b.txt": "ok"}
    finally:
        store.close()

    # the human summary on a re-run: everything unchanged, failures listed with their reason
    out = assistant("ingest", str(docs), "-c", "notes", "--data-dir", str(data), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "unchanged (skipped)" in out.stdout and "empty file" in out.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["/no/such/folder", "-c", "x"], "no such file or folder: /no/such/folder"),
        ([".", "-c", "bad name!"], "invalid collection name 'bad name!'"),
    ],
)
def test_bad_input_exits_non_zero_with_a_message(tmp_path, args, message):
    out = assistant("ingest", *args, "--data-dir", str(tmp_path / "data"), cwd=tmp_path)
    assert out.returncode == 2
    assert message in out.stderr
    assert not (tmp_path / "data" / "store.db").exists()


@pytest.mark.slow
def test_enqueue_then_worker_then_jobs(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nThe alpha team ships the release every second Thursday.\n")
    data = tmp_path / "data"
    out = assistant("ingest", str(docs), "-c", "queued", "--enqueue", "--json", "--data-dir", str(data), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    job_id = json.loads(out.stdout)["job"]
    shown = json.loads(assistant("jobs", str(job_id), "--json", "--data-dir", str(data), cwd=tmp_path).stdout)
    assert shown["status"] == "pending" and shown["params"]["paths"] == [str(docs.resolve())]

    out = assistant("worker", "--once", "--data-dir", str(data), cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    shown = json.loads(assistant("jobs", str(job_id), "--json", "--data-dir", str(data), cwd=tmp_path).stdout)
    assert (shown["status"], shown["files_ingested"], shown["chunks"]) == ("done", 1, 1)
    listed = assistant("jobs", "--data-dir", str(data), cwd=tmp_path).stdout
    assert f"{job_id}  done" in listed and "queued" in listed
