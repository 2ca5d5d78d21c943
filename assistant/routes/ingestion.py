"""Adding and removing documents over HTTP: the server only enqueues; `assistant worker` ingests.

- POST /api/collections/{name}/sources    a folder or file on the server, inside `ingest.allowed_roots`
- POST /api/collections/{name}/documents  multipart upload, saved under `<data_dir>/uploads/<name>/` (a zip is
                                          read by the worker as the folder it holds, ingest/archives.py)
- DELETE /api/collections/{name}/documents/{id}   one document, in one transaction
- DELETE /api/collections/{name}          hidden at once; its rows are purged by the worker in batches
"""

from __future__ import annotations

import shutil
from pathlib import Path

from anyio import to_thread
from litestar import Request, delete, post
from litestar.datastructures import UploadFile
from litestar.exceptions import NotFoundException, PermissionDeniedException, ValidationException
from pydantic import BaseModel, Field
from sqlalchemy.exc import OperationalError

from indexes.jobs import Jobs
from indexes.maintenance import tombstone_collection
from indexes.models import Document
from indexes.no_space import is_no_space

from assistant.security.access import Identity, scoped
from assistant.routes.deps import RowId, check_name, require_collection
from assistant.routes.errors import coded
from assistant.services import Services
from assistant.security.uploads import MB, InsufficientStorage, PayloadTooLarge, bounded_receive, checked_names, save_all


class SourceRequest(BaseModel):
    path: str = Field(max_length=4096, description="absolute path of a folder or file on the server, inside ingest.allowed_roots")


def allowed_path(services: Services, raw: str) -> Path:
    """The real path asked for, when it lies inside one of the allowed roots (links resolved first)."""
    roots = [Path(r).expanduser().resolve() for r in services.settings.ingest.allowed_roots]
    if not roots:
        raise PermissionDeniedException("no server-side folders may be ingested: set ingest.allowed_roots")
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise coded(ValidationException("the path must be absolute"), "path_not_absolute")
    real = path.resolve()
    if not any(real == r or real.is_relative_to(r) for r in roots):
        raise coded(PermissionDeniedException(f"{raw} is not inside an allowed folder ({', '.join(map(str, roots))})"),
                    "path_outside_allowed")
    if not real.exists():
        raise coded(NotFoundException(f"no such file or folder: {raw}"), "path_not_found")
    return real


def uploads_dir(services: Services, collection: str) -> Path:
    return Path(services.settings.data_dir) / "uploads" / collection


def enqueue(services: Services, collection: str, paths: list[str], kind: str, owner_key: int | None,
            root: str | None = None) -> dict:
    """Queue a job over paths; `root`: the upload folder, whose files are named by their path inside it."""
    coll = services.store.get_collection(collection)
    params: dict = {"paths": paths, **({"root": root} if root else {})}
    job = Jobs(services.store.engine).enqueue(coll.id if coll else 0, collection, params, kind=kind, owner_key=owner_key)
    return {"job": job.id, "collection": collection, "status": job.status, "url": f"/api/jobs/{job.id}"}


# Plain handlers rather than a controller: a second controller on a path the collections controller
# also serves (…/documents) makes Litestar register OPTIONS for it twice.
TAGS = ["ingestion"]


@post("/api/collections/{name:str}/sources", status_code=202, tags=TAGS, opt=scoped("ingest"))
async def add_source(services: Services, identity: Identity, name: str, data: SourceRequest) -> dict:
    """Queue the ingestion (or re-sync) of a folder or file on the server."""
    check_name(name)
    identity.check_collection(name)
    path = allowed_path(services, data.path)
    return await to_thread.run_sync(enqueue, services, name, [str(path)], "sync", identity.key_id)


@post("/api/collections/{name:str}/documents", status_code=202, request_max_body_size=None, tags=TAGS,
      opt={**scoped("ingest"), "multipart": True})
async def upload_documents(request: Request, services: Services, identity: Identity, name: str) -> dict:
    """Save uploaded files (multipart, any field name) and queue their ingestion."""
    check_name(name)
    identity.check_collection(name)
    limit = int(services.settings.ingest.max_upload_mb * MB)
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > limit:
        raise coded(PayloadTooLarge(f"upload of {int(length) / MB:.1f} MB; the limit is {limit / MB:.1f} MB",
                                    extra={"limit_mb": round(limit / MB, 1)}), "upload_too_large")
    request.receive = bounded_receive(request.receive, limit)  # chunked bodies too: 413 while streaming
    form = await request.form()
    files = [v for values in form.multi_items() for v in ([values[1]] if not isinstance(values[1], list) else values[1])
             if isinstance(v, UploadFile)]
    try:
        if not files:
            raise coded(ValidationException("no files in the request (send them as multipart/form-data)"), "upload_no_files")
        names = checked_names(files)  # every name, before anything is written
        file_limit = int(services.settings.ingest.max_file_mb * MB)
        saved = await to_thread.run_sync(save_all, files, names, uploads_dir(services, name), limit, file_limit)
    finally:
        for f in files:
            await f.close()
    try:
        result = await to_thread.run_sync(enqueue, services, name, [str(p) for p in saved], "upload", identity.key_id,
                                          str(uploads_dir(services, name).resolve()))
    except OperationalError as exc:
        if not is_no_space(exc):
            raise
        raise InsufficientStorage("the server's disk is full: the files were saved but their ingestion could not be "
                                  "queued; send them again once space is freed") from None
    return {**result, "files": names}


@delete("/api/collections/{name:str}/documents/{document_id:int}", status_code=200, tags=TAGS, opt=scoped("ingest"))
async def delete_document(services: Services, identity: Identity, name: str, document_id: RowId) -> dict:
    """Remove one document and its chunks (and its uploaded file, when it was uploaded)."""
    coll = require_collection(services, name, identity)

    def run() -> dict:
        store = services.store
        with store.session() as s:
            doc = s.get(Document, document_id)
        if doc is None or doc.collection_id != coll.id:
            raise NotFoundException(f"no document {document_id} in {name!r}")
        store.delete_document(coll, document_id)
        upload_root = uploads_dir(services, name).resolve()
        if doc.root and Path(doc.root) == upload_root:
            (upload_root / doc.path).unlink(missing_ok=True)
        return {"deleted": document_id, "path": doc.path, "chunks": doc.n_chunks}

    return await to_thread.run_sync(run)


@delete("/api/collections/{name:str}", status_code=202, tags=TAGS, opt=scoped("admin"))
async def delete_collection(services: Services, identity: Identity, name: str) -> dict:
    """Hide the collection at once (any size); the worker purges its rows in the background (admin only)."""
    coll = require_collection(services, name, identity)

    def run() -> dict:
        job = tombstone_collection(services.store, coll)
        shutil.rmtree(uploads_dir(services, name), ignore_errors=True)
        shutil.rmtree(Path(services.settings.data_dir) / "archives" / name, ignore_errors=True)  # its unpacked zips
        return {"deleted": name, "purge_job": job.id}

    return await to_thread.run_sync(run)
