"""Retrieval without generation: the sources a question would get."""

from __future__ import annotations

import functools
from typing import Annotated, Literal

from anyio import to_thread
from litestar import get
from litestar.exceptions import ValidationException
from litestar.params import Parameter

from indexes.retrieval.filters import SearchFilters

from assistant.security.access import Identity, scoped
from assistant.routes.deps import require_collection
from assistant.services import Services
from assistant.answers.source_view import hit_sources


@get("/api/search", tags=["search"], opt=scoped("read"))
async def search(
    services: Services,
    identity: Identity,
    q: Annotated[str, Parameter(min_length=1, max_length=4000)],
    collection: Annotated[list[str], Parameter(description="collection; repeat for several")],
    k: Annotated[int, Parameter(ge=1, le=100)] = 10,
    path: Annotated[list[str] | None, Parameter(description="path glob; repeat for several")] = None,
    kind: Annotated[list[str] | None, Parameter(description="file type (md, py, pdf...); repeat")] = None,
    modified_after: Annotated[str | None, Parameter(description="epoch seconds or ISO-8601", max_length=64)] = None,
    modified_before: Annotated[str | None, Parameter(description="epoch seconds or ISO-8601", max_length=64)] = None,
    group: Annotated[
        Literal["chunks", "files"], Parameter(description="files: one hit per file, files ranked by their best chunk")
    ] = "chunks",
) -> dict:
    if not q.strip():
        raise ValidationException("the query is empty")
    check_lengths(collection, path, kind)
    for name in collection:
        require_collection(services, name, identity)
    try:
        filters = SearchFilters.coerce(
            {"paths": path or [], "kinds": kind or [], "modified_after": as_time(modified_after),
             "modified_before": as_time(modified_before)}
        )
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValidationException(f"bad filter: {exc}") from None
    per_document = 1 if group == "files" else None
    search = functools.partial(services.retriever.search, q, collection, k, filters=filters, per_document=per_document)
    with services.search_gate.hold():  # BackendBusy beyond the cap: 429 + Retry-After
        hits = await to_thread.run_sync(search)
    return {"query": q, "collections": collection, "group": group, "hits": hit_sources(hits)}


MAX_VALUES = 32


def check_lengths(collection: list[str], path: list[str] | None, kind: list[str] | None) -> None:
    """Bounds the query string's repeated values (the framework bounds single values only)."""
    for what, values, longest in (("collection", collection, 64), ("path", path or [], 1024), ("kind", kind or [], 32)):
        if len(values) > MAX_VALUES:
            raise ValidationException(f"at most {MAX_VALUES} values of {what}, not {len(values)}")
        for v in values:
            if len(v) > longest:
                raise ValidationException(f"a {what} of {len(v)} characters: at most {longest}")


def as_time(value: str | None) -> float | str | None:
    """Epoch seconds stay numbers; anything else is read as ISO-8601 by the filter."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return value
