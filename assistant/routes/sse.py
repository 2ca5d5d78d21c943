"""Server-Sent Events as the routes stream them: an answer's or a summary's events, one message each."""

from __future__ import annotations

import json
from typing import Protocol

from litestar.openapi import ResponseSpec
from litestar.response import ServerSentEventMessage


class WireEvent(Protocol):
    """An answer's event (answers/events.py) or a summary's: its SSE event name and its JSON data."""

    @property
    def type(self) -> str: ...

    @property
    def data(self) -> dict: ...

# The OpenAPI description of a route that answers with an event stream.
EVENT_STREAM = {200: ResponseSpec(data_container=dict, media_type="text/event-stream",
                                  description="Server-Sent Events", generate_examples=False)}


def to_message(event: WireEvent) -> ServerSentEventMessage:
    return ServerSentEventMessage(event=event.type, data=json.dumps(event.data, ensure_ascii=False))
