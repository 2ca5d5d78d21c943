"""Collections (listed, and created empty to upload into), their documents, and single chunks (what a
source card opens)."""

from __future__ import annotations

import json
from typing import Annotated

from anyio import to_thread
from litestar import Controller, get, post
from litestar.exceptions import HTTPException, NotFoundException
from litestar.params import Parameter
from pydantic import BaseModel, Field
from sqlmodel import select

from indexes.models import Chunk, Collection, Document
from indexes.reasons import reason_code

from assistant.security.access import Identity, scoped
from assistant.routes.deps import RowId, new_name_and_title, require_collection
from assistant.routes.errors import coded
from assistant.services import Services


def document_dict(doc: Document) -> dict:
    # the error as a code and its values too, for a client to say in its reader's language (indexes/reasons.py)
    error_code, error_values = reason_code(doc.error) if doc.error else (None, None)
    return {
        "id": doc.id,
        "path": doc.path,
        "title": doc.title,
        "kind": doc.kind,
        "status": doc.status,
        "error": doc.error,
        "chunks": doc.n_chunks,
        "size": doc.size,
        "sha256": doc.sha256,
        "ingested_at": doc.ingested_at.isoformat(),
        "meta": json.loads(doc.meta or "{}"),
        "error_code": error_code,
        "error_values": error_values,
    }


class CollectionController(Controller):
    path = "/api"
    tags = ["collections"]
    opt = scoped("read")

    @get("/collections")
    async def list_collections(self, services: Services, identity: Identity) -> list[dict]:
        return [c for c in services.store.list_collections() if identity.can_use(c["name"])]

    @get("/collections/{name:str}/documents")
    async def list_documents(
        self,
        services: Services,
        identity: Identity,
        name: str,
        offset: Annotated[int, Parameter(ge=0, le=2**31)] = 0,
        limit: Annotated[int, Parameter(ge=1, le=10000)] = 1000,
    ) -> dict:
        coll = require_collection(services, name, identity)
        docs = services.store.list_documents(coll, offset=offset, limit=limit)
        return {"collection": name, "documents": [document_dict(d) for d in docs]}

    @get("/chunks/{chunk_id:int}")
    async def get_chunk(
        self, services: Services, identity: Identity, chunk_id: RowId
    ) -> dict:
        with services.store.session() as s:
            row = s.exec(
                select(Chunk, Document, Collection)
                .join(Document, Document.id == Chunk.document_id)
                .join(Collection, Collection.id == Chunk.collection_id)
                .where(Chunk.id == chunk_id)
            ).first()
        # A deleted collection's chunks (waiting for their purge) and another's are as good as none.
        if row is None or not identity.can_use(row[2].name):
            raise NotFoundException(f"no chunk {chunk_id}")
        chunk, doc, coll = row
        return {
            "chunk_id": chunk.id,
            "document_id": doc.id,
            "collection": coll.name,
            "path": doc.path,
            "title": doc.title,
            "text": chunk.text,
            "heading_path": chunk.heading_path,
            "anchor": chunk.anchor,
            "page": chunk.page,
            "line_start": chunk.line_start,
            "line_end": chunk.line_end,
            "symbol": chunk.symbol,
        }


class NewCollection(BaseModel):
    name: str | None = Field(default=None, max_length=64,
                             description="the API name: 1-64 letters, digits, '.', '_' or '-', starting with a letter or "
                                         "digit; made from `title` when left out")
    title: str | None = Field(default=None, max_length=256,
                              description="the display name, in any language (1-64 characters); the name when left out")


@post("/api/collections", status_code=201, tags=["collections"], opt=scoped("ingest"))
async def create_collection(services: Services, identity: Identity, data: NewCollection) -> dict:
    """Create an empty collection with the configured embedder (409 when its name or title is taken); under
    "auto" its embedder is left open ("") and chosen at its first ingest from the language of its documents."""
    name, title = await to_thread.run_sync(new_name_and_title, services, data.name, data.title)
    identity.check_collection(name)
    if await to_thread.run_sync(services.store.get_collection, name) is not None:
        raise coded(HTTPException(status_code=409, detail=f"collection {name!r} already exists",
                                  extra={"name": name}), "collection_exists")
    embedder, dim = ("", 0) if services.settings.embedder.model == "auto" else (services.embedder.name, services.embedder.dim)
    coll = await to_thread.run_sync(lambda: services.store.ensure_collection(name, embedder, dim, title))
    return {"name": coll.name, "title": coll.title, "documents": 0, "chunks": 0, "failed": 0,
            "embedder": coll.embedder, "created_at": coll.created_at.isoformat()}
