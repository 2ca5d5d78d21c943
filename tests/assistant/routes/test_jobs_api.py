"""The ingestion API: the server enqueues (sources inside allowed roots, uploads), a worker runs the
jobs, GET /api/jobs/{id} reports them; documents and collections are deleted fast."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from indexes.store import Store
from tests.support.wait import wait_until

pytestmark = pytest.mark.slow

UPLOAD = {"X-Requested-By": "test"}  # what a multipart upload must send (assistant/security/browser_defences.py)


@pytest.fixture
def allowed(tmp_path):
    root = tmp_path / "shared-docs"
    (root / "team").mkdir(parents=True)
    (root / "team" / "handover.md").write_text("# Handover\n\nThe night shift hands over to the day shift at seven.\n")
    (root / "team" / "empty.md").write_bytes(b"")
    (root / "team" / "locked.pdf").write_bytes(b"%PDF-1.4\nnot really a pdf\n")
    return root


@pytest.fixture
def services(settings_factory, make_services, allowed):
    return make_services(settings_factory(ingest={"allowed_roots": [str(allowed)], "max_upload_mb": 1}))


def run_worker(services) -> int:
    """What `assistant worker --once` does, in this process with the already-loaded embedder."""
    from ingest.worker import Worker  # tests may import the worker; the server package never does

    worker = Worker(services.settings, services.store, embedder=services.embedder)
    return worker.run(once=True)


async def test_server_side_source_is_queued_run_by_the_worker_and_reported(client, services, allowed, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    r = await client.post("/api/collections/team/sources", json={"path": str(outside)})
    assert r.status_code == 403 and "not inside an allowed folder" in r.json()["detail"]
    r = await client.post("/api/collections/team/sources", json={"path": str(allowed / ".." / "elsewhere")})
    assert r.status_code == 403  # '..' cannot climb out
    assert (await client.post("/api/collections/team/sources", json={"path": "team"})).status_code == 400
    assert (await client.post("/api/collections/team/sources", json={"path": str(allowed / "nope")})).status_code == 404

    r = await client.post("/api/collections/team/sources", json={"path": str(allowed / "team")})
    assert r.status_code == 202
    job_id = r.json()["job"]
    pending = (await client.get(f"/api/jobs/{job_id}")).json()
    assert pending["status"] == "pending" and pending["eta_s"] is None

    assert run_worker(services) == 1
    info = (await client.get(f"/api/jobs/{job_id}")).json()
    assert info["status"] == "done"
    assert (info["files_total"], info["files_done"], info["files_ingested"]) == (3, 3, 1)
    assert (info["files_failed"], info["files_skipped"], info["eta_s"]) == (1, 1, 0.0)
    assert info["chunks"] == 1 and info["rate_files_per_s"] > 0
    # each reason with its code (and values), for a client to say in its reader's language
    assert info["errors"] == [{"path": "locked.pdf", "reason": info["errors"][0]["reason"], "kind": "damaged",
                               "code": "pdf_damaged", "values": {}}]
    assert info["errors"][0]["reason"].startswith("damaged or invalid PDF")
    assert info["skipped"] == [{"path": "empty.md", "reason": "empty file", "kind": "empty", "code": "empty_file",
                                "values": {}}]
    assert info["files_unchanged"] == 0
    files = (await client.get(f"/api/jobs/{job_id}/files", params={"state": "skipped"})).json()["files"]
    assert [(f["path"], f["reason"], f["code"]) for f in files] == [("empty.md", "empty file", "empty_file")]
    docs = (await client.get("/api/collections/team/documents")).json()["documents"]
    assert {(d["path"], d["error_code"]) for d in docs if d["error"]} == {("locked.pdf", "pdf_damaged")}
    assert all(d["error_code"] is None for d in docs if not d["error"])
    listed = (await client.get("/api/jobs/", params={"collection": "team"})).json()
    assert [j["id"] for j in listed] == [job_id]
    hits = (await client.get("/api/search", params={"q": "night shift handover", "collection": "team"})).json()["hits"]
    assert hits[0]["path"] == "handover.md"


async def test_upload_then_delete_document_and_collection(client, services):
    files = [("files", ("rota.md", b"# Rota\n\nThe cleaning rota changes every Monday morning.\n", "text/markdown")),
             ("files", ("escape.txt", b"Parking permits are renewed in January.\n", "text/plain"))]
    r = await client.post("/api/collections/uploads/documents", files=files, headers=UPLOAD)
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["files"] == ["rota.md", "escape.txt"]
    folder = services.settings.data_dir / "uploads" / "uploads"
    assert sorted(p.name for p in folder.iterdir()) == ["escape.txt", "rota.md"]
    assert run_worker(services) == 1
    assert (await client.get(f"/api/jobs/{body['job']}")).json()["files_ingested"] == 2

    docs = (await client.get("/api/collections/uploads/documents")).json()["documents"]
    rota = next(d for d in docs if d["path"] == "rota.md")
    r = await client.delete(f"/api/collections/uploads/documents/{rota['id']}")
    assert r.status_code == 200 and r.json()["path"] == "rota.md"
    assert not (folder / "rota.md").exists()
    assert (await client.delete(f"/api/collections/uploads/documents/{rota['id']}")).status_code == 404
    hits = (await client.get("/api/search", params={"q": "cleaning rota Monday", "collection": "uploads"})).json()["hits"]
    assert all(h["path"] != "rota.md" for h in hits)

    coll_id = services.store.get_collection("uploads").id
    r = await client.delete("/api/collections/uploads")
    assert r.status_code == 202
    assert services.store.get_collection("uploads") is None  # gone at once
    assert (await client.get("/api/search", params={"q": "parking", "collection": "uploads"})).status_code == 404
    assert run_worker(services) == 1  # the purge
    with services.store.engine.connect() as conn:
        left = conn.execute(text("SELECT (SELECT count(*) FROM chunk WHERE collection_id = :c) + "
                                 "(SELECT count(*) FROM document WHERE collection_id = :c) + "
                                 "(SELECT count(*) FROM collection WHERE id = :c)"), {"c": coll_id}).scalar_one()
    assert left == 0
    assert (await client.get(f"/api/jobs/{r.json()['purge_job']}")).json()["status"] == "done"


async def test_upload_limits_and_bad_names(client):
    big = ("files", ("big.txt", b"x" * (1024 * 1024 + 10), "text/plain"))
    assert (await client.post("/api/collections/c1/documents", files=[big], headers=UPLOAD)).status_code == 413
    assert (await client.post("/api/collections/c1/documents", files=[("files", ("..", b"x", "text/plain"))],
                              headers=UPLOAD)).status_code == 400
    assert (await client.post("/api/collections/bad name/documents", files=[("f", ("a.md", b"x", "text/plain"))],
                              headers=UPLOAD)).status_code == 400
    assert (await client.get("/api/jobs/999")).status_code == 404


def test_serve_runs_a_worker_process_that_takes_queued_jobs(settings_factory, tmp_path):
    from assistant.commands.serve_worker import start_worker, stop_worker
    from indexes.jobs import Jobs

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe boiler is serviced every October.\n")
    settings = settings_factory()
    assert start_worker(settings_factory(ingest={"run_worker": False})) is None
    store = Store(settings.data_dir)
    jobs = Jobs(store.engine)
    job = jobs.enqueue(0, "bg", {"paths": [str(docs)]})
    proc = start_worker(settings)

    def job_status() -> str:
        assert proc.poll() is None, f"the worker process exited with {proc.returncode}"
        return jobs.get(job.id).status

    try:
        wait_until(job_status, accept=lambda status: status == "done", timeout=180, interval=0.2,
                   what="the worker process running the queued job")
    finally:
        stop_worker(proc)
        store.close()
    assert proc.returncode == 0  # SIGTERM: a clean stop


async def test_a_job_s_failed_files_are_retried_in_a_new_job_of_their_sources_only(client, services, allowed):
    """A folder job: its folder again (the unchanged file skipped by its hash, the left-out one said so);
    an upload job: only the uploaded files that failed, from the server's copy; nothing failed: 409."""
    job_id = (await client.post("/api/collections/team/sources", json={"path": str(allowed / "team")})).json()["job"]
    run_worker(services)
    r = await client.post(f"/api/jobs/{job_id}/retry")
    assert r.status_code == 202, r.text
    again = r.json()
    assert again["retried"] == 1 and again["job"] != job_id
    run_worker(services)
    info = (await client.get(f"/api/jobs/{again['job']}")).json()
    assert [e["path"] for e in info["errors"]] == ["locked.pdf"]
    assert (info["files_unchanged"], info["files_skipped"], info["files_ingested"]) == (1, 2, 0)
    assert [(s["path"], s["kind"]) for s in info["skipped"]] == [("empty.md", "empty")]

    files = [("files", ("rota.md", b"# Rota\n\nThe rota changes every Monday.\n", "text/markdown")),
             ("files", ("broken.pdf", b"%PDF-1.4\nnot really a pdf\n", "application/pdf")),
             ("files", ("photo.png", b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png"))]
    upload = (await client.post("/api/collections/team/documents", files=files, headers=UPLOAD)).json()["job"]
    run_worker(services)
    done = (await client.get(f"/api/jobs/{upload}")).json()
    assert [(s["path"], s["kind"]) for s in done["skipped"]] == [("photo.png", "image")]
    r = await client.post(f"/api/jobs/{upload}/retry")
    assert r.status_code == 202, r.text
    retried = (await client.get(f"/api/jobs/{r.json()['job']}")).json()
    assert retried["kind"] == "upload" and [Path(p).name for p in retried["params"]["paths"]] == ["broken.pdf"]
    run_worker(services)
    r = await client.post(f"/api/jobs/{r.json()['job']}/retry")  # broken.pdf failed again: retried again
    assert r.status_code == 202
    clean = (await client.post("/api/collections/clean/documents", files=files[:1], headers=UPLOAD)).json()["job"]
    run_worker(services)
    r = await client.post(f"/api/jobs/{clean}/retry")
    assert r.status_code == 409 and r.json()["code"] == "nothing_to_retry"
    assert (await client.post("/api/jobs/99999/retry")).status_code == 404
