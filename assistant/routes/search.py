"""Retrieval without generation: the sources a question would get."""

from __future__ import annotations

from typing import Annotated

from anyio import to_thread
from litestar import get
from litestar.exceptions import ValidationException
from litestar.params import Parameter

from assistant.routes.deps import require_collection
from assistant.services import Services
from assistant.sources import hit_to_source


@get("/api/search", tags=["search"])
async def search(
    services: Services,
    q: Annotated[str, Parameter(min_length=1, max_length=4000)],
    collection: str,
    k: Annotated[int, Parameter(ge=1, le=100)] = 10,
) -> dict:
    if not q.strip():
        raise ValidationException("the query is empty")
    require_collection(services, collection)
    hits = await to_thread.run_sync(services.retriever.search, q, collection, k)
    return {"query": q, "collection": collection, "hits": [hit_to_source(h) for h in hits]}
