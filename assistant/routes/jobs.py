"""Ingestion jobs as the worker records them: progress (files, chunks, rate, ETA, errors) and cancel."""

from __future__ import annotations

from typing import Annotated, Literal

from anyio import to_thread
from litestar import Controller, delete, get
from litestar.exceptions import NotFoundException
from litestar.params import Parameter

from indexes.jobs import Jobs

from assistant.services import Services

FileStateName = Literal["pending", "parsing", "embedding", "done", "failed", "skipped", "removed"]


def jobs_of(services: Services) -> Jobs:
    return Jobs(services.store.engine)


def job_progress(services: Services, job_id: int) -> dict:
    info = jobs_of(services).progress(job_id)
    if info is None:
        raise NotFoundException(f"no job {job_id}")
    return info


class JobController(Controller):
    path = "/api/jobs"
    tags = ["ingestion"]

    @get("/")
    async def list_jobs(
        self, services: Services, collection: str | None = None, status: str | None = None,
        limit: Annotated[int, Parameter(ge=1, le=500)] = 50,
    ) -> list[dict]:
        def run() -> list[dict]:
            jobs = jobs_of(services)
            return [jobs.progress(j.id, errors=5) for j in jobs.list(collection=collection, status=status, limit=limit)]

        return await to_thread.run_sync(run)

    @get("/{job_id:int}")
    async def get_job(self, services: Services, job_id: int) -> dict:
        """Files done of total, chunks written, rate, ETA, the files being worked on, and failures."""
        return await to_thread.run_sync(job_progress, services, job_id)

    @get("/{job_id:int}/files")
    async def job_files(
        self, services: Services, job_id: int,
        file_state: Annotated[FileStateName | None, Parameter(query="state")] = None,
        offset: Annotated[int, Parameter(ge=0)] = 0, limit: Annotated[int, Parameter(ge=1, le=10000)] = 1000,
    ) -> dict:
        jobs = jobs_of(services)
        if jobs.get(job_id) is None:
            raise NotFoundException(f"no job {job_id}")
        rows = await to_thread.run_sync(lambda: jobs.files(job_id, state=file_state, offset=offset, limit=limit))
        return {"job": job_id, "files": [
            {"path": f.path, "state": f.state, "reason": f.reason, "chunks": f.chunks, "size": f.size,
             "updated_at": f.updated_at.isoformat()} for f in rows
        ]}

    @delete("/{job_id:int}", status_code=200)
    async def cancel_job(self, services: Services, job_id: int) -> dict:
        """Cancel a job that has not finished (its worker stops at its next heartbeat)."""
        jobs = jobs_of(services)
        if jobs.get(job_id) is None:
            raise NotFoundException(f"no job {job_id}")
        cancelled = jobs.cancel(job_id)
        return {"job": job_id, "cancelled": cancelled, "status": jobs.get(job_id).status}
