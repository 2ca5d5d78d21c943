"""Jobs in the store: claiming, taking over from a dead worker, heartbeats, cancel, progress."""

from __future__ import annotations

import subprocess
import sys
import threading
from datetime import timedelta

import pytest
from sqlalchemy import update

from indexes.jobs import FileState, Jobs, reason_kind, worker_alive, worker_name
from indexes.models import IngestJob, utcnow


def test_two_workers_racing_for_a_job_get_it_once(store):
    jobs = Jobs(store.engine)
    ids = [jobs.enqueue(0, "c", {"paths": [f"/p{i}"]}).id for i in range(20)]
    claimed: list[tuple[str, int]] = []
    lock = threading.Lock()

    def work(name: str) -> None:
        while (job := jobs.claim(name)) is not None:
            with lock:
                claimed.append((name, job.id))
            jobs.finish(job.id, name, "done")

    threads = [threading.Thread(target=work, args=(f"host:{n}",)) for n in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(j for _, j in claimed) == ids  # every job once, none twice
    assert all(j.status == "done" for j in jobs.list(limit=100))


def test_a_dead_or_silent_worker_loses_its_job(store):
    jobs = Jobs(store.engine, stale_after_s=30)
    job = jobs.enqueue(0, "c", {})
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    dead_name = f"{worker_name().rsplit(':', 1)[0]}:{dead.pid}"
    assert worker_alive(dead_name) is False and worker_alive(worker_name()) is True
    assert jobs.claim(dead_name).id == job.id
    # its process is gone: another worker takes the job at once and it counts a second attempt
    taken = jobs.claim("elsewhere:1")
    assert taken.id == job.id and taken.attempts == 2 and taken.worker == "elsewhere:1"
    assert jobs.heartbeat(job.id, dead_name) == "lost"
    # a worker on another host is trusted until its heartbeat is stale
    assert jobs.claim("third:1") is None
    with store.session() as s:
        s.exec(update(IngestJob).values(heartbeat_at=utcnow() - timedelta(seconds=31)))
        s.commit()
    assert jobs.claim("third:1").attempts == 3


def test_progress_counts_files_rate_and_eta_and_cancel(store):
    jobs = Jobs(store.engine)
    job = jobs.enqueue(7, "docs", {"paths": ["/x"]})
    jobs.add_files(job.id, [FileState(f"f{i}.md", "pending", size=10) for i in range(10)])
    assert jobs.progress(job.id)["files_total"] == 10 and jobs.progress(job.id)["eta_s"] is None
    me = worker_name()
    jobs.claim(me)
    jobs.record(job.id, [FileState("f0.md", "done", None, 3), FileState("f1.md", "failed", "empty file"),
                         FileState("f2.md", "skipped", "unchanged"), FileState("f3.md", "parsing")])
    jobs.add_files(job.id, [FileState("f0.md", "pending")])  # a resumed job keeps finished files as they are
    info = jobs.progress(job.id)
    assert (info["files_done"], info["files_ingested"], info["files_failed"], info["files_skipped"]) == (3, 1, 1, 1)
    assert info["chunks"] == 3 and info["current"] == ["f3.md"] and info["files_pending"] == 7
    assert info["errors"] == [{"path": "f1.md", "reason": "empty file", "kind": "empty", "code": "empty_file",
                               "values": {}}]
    assert info["skipped"] == [] and info["files_unchanged"] == 1  # unchanged is not left out
    assert info["rate_files_per_s"] > 0 and info["eta_s"] == pytest.approx(7 / info["rate_files_per_s"], abs=0.1)
    assert jobs.cancel(job.id) and jobs.heartbeat(job.id, me) == "cancelled"
    assert not jobs.cancel(job.id)
    assert jobs.progress(job.id)["status"] == "cancelled"


BIG = "file too large (9.0 MB; the limit is 8 MB)"  # as ingest/prepare.py words it


def test_left_out_files_are_listed_with_their_kind_bounded_with_their_count(store):
    jobs = Jobs(store.engine)
    job = jobs.enqueue(7, "docs", {"paths": ["/x"]})
    jobs.record(job.id, [FileState(f"img{i}.png", "skipped", "image file: text in images is not read") for i in range(7)]
                + [FileState("same.md", "skipped", "unchanged"), FileState("big.pdf", "failed", BIG)])
    info = jobs.progress(job.id, errors=5)
    assert [s["path"] for s in info["skipped"]] == [f"img{i}.png" for i in range(5)]
    assert {s["kind"] for s in info["skipped"]} == {"image"}
    assert (info["files_skipped"], info["files_unchanged"]) == (8, 1)  # 7 left out, told by the counts
    assert info["errors"] == [{"path": "big.pdf", "reason": BIG, "kind": "too_large", "code": "file_too_large",
                               "values": {"size_mb": "9.0", "limit_mb": "8"}}]  # the code and values the page words


@pytest.mark.parametrize(("reason", "kind"), [
    ("image file: text in images is not read", "image"), ("binary file (unsupported type .bin)", "binary"),
    ("empty file", "empty"), ("file holds only whitespace", "empty"), ("unchanged", "unchanged"),
    ("type png is not in the accepted file types", "unsupported_type"),
    ("unsupported file type: legacy Word .doc (needs LibreOffice; save as .docx)", "unsupported_type"),
    ("file too large (3.0 MB; the limit is 1.0 MB)", "too_large"), ("generated file (marked so in its first lines)", "generated"),
    ("link to a folder (not followed)", "link"), ("not a regular file (fifo)", "not_a_file"),
    ("no text found in the file", "no_text"), ("damaged or invalid PDF", "damaged"), ("something new", "other"), (None, "other"),
    ("OCR is not installed: apt-get install tesseract-ocr tesseract-ocr-eng", "ocr_missing"),
    ("OCR languages jpn are not installed: apt-get install tesseract-ocr-jpn", "ocr_missing"),
    ("image file: damaged or unreadable (cannot identify image file)", "image"),
])
def test_a_reason_names_its_kind(reason, kind):
    assert reason_kind(reason) == kind
