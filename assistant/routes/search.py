"""Retrieval without generation: the sources a question would get."""

from __future__ import annotations

import functools
from typing import Annotated, Literal

from anyio import to_thread
from litestar import get
from litestar.exceptions import ValidationException
from litestar.params import Parameter

from indexes.filters import SearchFilters

from assistant.routes.deps import require_collection
from assistant.services import Services
from assistant.sources import hit_to_source


@get("/api/search", tags=["search"])
async def search(
    services: Services,
    q: Annotated[str, Parameter(min_length=1, max_length=4000)],
    collection: Annotated[list[str], Parameter(description="collection; repeat for several")],
    k: Annotated[int, Parameter(ge=1, le=100)] = 10,
    path: Annotated[list[str] | None, Parameter(description="path glob; repeat for several")] = None,
    kind: Annotated[list[str] | None, Parameter(description="file type (md, py, pdf...); repeat")] = None,
    modified_after: Annotated[str | None, Parameter(description="epoch seconds or ISO-8601")] = None,
    modified_before: Annotated[str | None, Parameter(description="epoch seconds or ISO-8601")] = None,
    group: Annotated[
        Literal["chunks", "files"], Parameter(description="files: one hit per file, files ranked by their best chunk")
    ] = "chunks",
) -> dict:
    if not q.strip():
        raise ValidationException("the query is empty")
    for name in collection:
        require_collection(services, name)
    try:
        filters = SearchFilters.coerce(
            {"paths": path or [], "kinds": kind or [], "modified_after": as_time(modified_after),
             "modified_before": as_time(modified_before)}
        )
    except ValueError as exc:
        raise ValidationException(f"bad filter: {exc}") from None
    per_document = 1 if group == "files" else None
    search = functools.partial(services.retriever.search, q, collection, k, filters=filters, per_document=per_document)
    hits = await to_thread.run_sync(search)
    return {"query": q, "collections": collection, "group": group, "hits": [hit_to_source(h) for h in hits]}


def as_time(value: str | None) -> float | str | None:
    """Epoch seconds stay numbers; anything else is read as ISO-8601 by the filter."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return value
