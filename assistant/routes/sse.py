"""Server-Sent Events as the routes stream them: an answer's or a summary's events, one message each."""

from __future__ import annotations

import json

from litestar.openapi import ResponseSpec
from litestar.response import ServerSentEventMessage

from assistant.answers.rag import Event

# The OpenAPI description of a route that answers with an event stream.
EVENT_STREAM = {200: ResponseSpec(data_container=dict, media_type="text/event-stream",
                                  description="Server-Sent Events", generate_examples=False)}


def to_message(event: Event) -> ServerSentEventMessage:
    return ServerSentEventMessage(event=event.type, data=json.dumps(event.data, ensure_ascii=False))
