"""Ingestion jobs as the worker records them: progress (files, chunks, rate, ETA, errors) and cancel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from anyio import to_thread
from litestar import Controller, delete, get, post
from litestar.exceptions import ClientException, NotFoundException, PermissionDeniedException
from litestar.params import Parameter

from indexes.jobs import Jobs
from indexes.models import IngestJob
from indexes.reasons import with_code

from assistant.security.access import Identity, authorize, scoped
from assistant.security.redaction import client_path, strip_server_paths
from assistant.routes.deps import RowId
from assistant.routes.errors import coded
from assistant.routes.ingestion import allowed_path, enqueue, uploads_dir
from assistant.services import Services

JobStatusName = Literal["pending", "running", "done", "failed", "cancelled"]
FileStateName = Literal["pending", "parsing", "ocr", "embedding", "done", "failed", "skipped", "removed"]


def jobs_of(services: Services) -> Jobs:
    return Jobs(services.store.engine)


def require_own_job(services: Services, identity: Identity, job_id: int) -> IngestJob:
    """404 for no such job, 403 for a job another key queued."""
    job = jobs_of(services).get(job_id)
    if job is None:
        raise NotFoundException(f"no job {job_id}")
    if not identity.owns(job.owner_key):
        raise PermissionDeniedException("this job was queued by another key")
    authorize(identity, "ingest", [job.collection])
    return job


def shown_to_client(services: Services, info: dict) -> dict:
    """A job's progress without absolute server paths: its sources named relative to their folder."""
    settings = services.settings
    params = dict(info.get("params") or {})
    if isinstance(params.get("paths"), list):
        params["paths"] = [client_path(str(p), settings) for p in params["paths"]]
    out = {**info, "params": params}
    if out.get("error"):
        out["error"] = strip_server_paths(out["error"], settings)
    out["errors"] = [{**e, "reason": strip_server_paths(e["reason"] or "", settings)} for e in info.get("errors", [])]
    return out


def job_progress(services: Services, identity: Identity, job_id: int) -> dict:
    require_own_job(services, identity, job_id)
    info = jobs_of(services).progress(job_id)
    if info is None:
        raise NotFoundException(f"no job {job_id}")
    return shown_to_client(services, info)


RETRYABLE_KINDS = ("sync", "upload")


def retry_sources(sources: list[str], failed: set[str], root: str | None = None) -> list[str]:
    """The sources of a job that hold its failed files: a single file when it is one of them (a file source's
    relative path is its name, or its path inside `root`, the upload folder), a folder when one of them still
    lies in it (the folder's unchanged files are then skipped by their hash, its failed ones read again)."""
    out = []
    for raw in sources:
        path = Path(raw)
        if path.is_dir() and any((path / rel).is_file() for rel in failed):
            out.append(raw)
        elif path.is_file() and (path.name in failed or (root is not None and path.resolve().is_relative_to(root)
                                                         and path.resolve().relative_to(root).as_posix() in failed)):
            out.append(raw)
    return out


def retry_failed(services: Services, identity: Identity, job_id: int) -> dict:
    """A new job of the same kind over the sources of a job's failed files (uploads: the files the server
    kept), checked again against the allowed folders; 409 when no failed file is left to read again."""
    job = require_own_job(services, identity, job_id)
    if job.kind not in RETRYABLE_KINDS:
        raise coded(ClientException(f"a {job.kind} job has no files to retry", status_code=409), "nothing_to_retry")
    failed = {f.path for f in jobs_of(services).files(job_id, state="failed", limit=100_000)}
    params = json.loads(job.params or "{}")
    sources = [str(p) for p in params.get("paths") or []]
    uploads = uploads_dir(services, job.collection).resolve()
    root = str(uploads) if job.kind == "upload" and params.get("root") else None
    paths = retry_sources(sources, failed, root)
    for raw in paths:  # the rules of a new job's sources hold for a retry too
        if job.kind == "upload":
            if not Path(raw).resolve().is_relative_to(uploads):
                raise PermissionDeniedException("an uploaded file lies outside the collection's uploads")
        else:
            allowed_path(services, raw)
    if not paths:
        raise coded(ClientException("no failed file of this job is left to read again", status_code=409), "nothing_to_retry")
    return {**enqueue(services, job.collection, paths, job.kind, identity.key_id, root), "retried": len(failed)}


class JobController(Controller):
    path = "/api/jobs"
    tags = ["ingestion"]
    opt = scoped("ingest")

    @get("/")
    async def list_jobs(
        self, services: Services, identity: Identity,
        collection: Annotated[str | None, Parameter(max_length=64)] = None,
        status: Annotated[JobStatusName | None, Parameter()] = None,
        limit: Annotated[int, Parameter(ge=1, le=500)] = 50,
    ) -> list[dict]:
        """This key's jobs (every job for an admin), newest first."""
        if collection is not None:
            identity.check_collection(collection)

        def run() -> list[dict]:
            jobs = jobs_of(services)
            owner = False if identity.is_admin else identity.key_id
            listed = jobs.list(collection=collection, status=status, limit=limit, owner_key=owner)
            return [shown_to_client(services, jobs.progress(j.id, errors=5)) for j in listed]

        return await to_thread.run_sync(run)

    @get("/{job_id:int}")
    async def get_job(self, services: Services, identity: Identity, job_id: RowId) -> dict:
        """Files done of total, chunks written, rate, ETA, the files being worked on, and failures."""
        return await to_thread.run_sync(job_progress, services, identity, job_id)

    @get("/{job_id:int}/files")
    async def job_files(
        self, services: Services, identity: Identity, job_id: RowId,
        file_state: Annotated[FileStateName | None, Parameter(query="state")] = None,
        offset: Annotated[int, Parameter(ge=0, le=2**31)] = 0, limit: Annotated[int, Parameter(ge=1, le=10000)] = 1000,
    ) -> dict:
        jobs = jobs_of(services)
        await to_thread.run_sync(require_own_job, services, identity, job_id)
        rows = await to_thread.run_sync(lambda: jobs.files(job_id, state=file_state, offset=offset, limit=limit))
        return {"job": job_id, "files": [with_code(
            {"path": f.path, "state": f.state, "reason": strip_server_paths(f.reason or "", services.settings) or None,
             "chunks": f.chunks, "size": f.size, "updated_at": f.updated_at.isoformat()}, f.reason) for f in rows
        ]}

    @post("/{job_id:int}/retry", status_code=202)
    async def retry_job(self, services: Services, identity: Identity, job_id: RowId) -> dict:
        """Queue a new job that reads a finished job's failed files again."""
        return await to_thread.run_sync(retry_failed, services, identity, job_id)

    @delete("/{job_id:int}", status_code=200)
    async def cancel_job(self, services: Services, identity: Identity, job_id: RowId) -> dict:
        """Cancel a job that has not finished (its worker stops at its next heartbeat)."""
        jobs = jobs_of(services)
        await to_thread.run_sync(require_own_job, services, identity, job_id)
        cancelled = jobs.cancel(job_id)
        return {"job": job_id, "cancelled": cancelled, "status": jobs.get(job_id).status}
