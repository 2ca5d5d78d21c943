"""POST /api/documents/{id}/summary: Server-Sent Events `progress`..., then `summary`, then `done` | `error`."""

from __future__ import annotations

from typing import Any, AsyncIterator

from anyio import to_thread
from litestar import post
from litestar.exceptions import NotFoundException, ValidationException
from litestar.response import ServerSentEvent, ServerSentEventMessage
from pydantic import BaseModel, ConfigDict, StrictBool, ValidationError

from indexes.summaries import get_document_info

from assistant.security.access import Identity, scoped
from assistant.routes.sse import EVENT_STREAM, to_message
from assistant.routes.deps import RowId
from assistant.services import Services
from assistant.answers.summarize import summary_events


class SummaryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    refresh: StrictBool = False  # true: summarise again even when a cached summary exists


@post("/api/documents/{document_id:int}/summary", tags=["documents"], status_code=200, opt=scoped("ask"),
      responses=EVENT_STREAM)
async def summarize(
    services: Services, identity: Identity, document_id: RowId, data: dict[str, Any] | None = None
) -> ServerSentEvent:
    # Validated here, strictly: the framework's own conversion would take "yes" for true.
    try:
        request = SummaryRequest.model_validate(data or {})
    except ValidationError as exc:
        raise ValidationException("invalid summary request", extra=exc.errors(include_url=False, include_input=False)) from None
    doc = await to_thread.run_sync(get_document_info, services.store.engine, document_id)
    if doc is None or not identity.can_use(doc.collection):  # deleted, or another's: as good as none
        raise NotFoundException(f"unknown document: {document_id}")
    s = services.settings
    events = summary_events(services.store.engine, doc, services.backend, s.summary, s.generation.margin_tokens,
                            refresh=request.refresh)  # fmt: skip

    async def stream() -> AsyncIterator[ServerSentEventMessage]:
        try:
            async for event in events:
                yield to_message(event)
        finally:
            await events.aclose()  # client gone: the summary's requests are cancelled

    return ServerSentEvent(stream())
