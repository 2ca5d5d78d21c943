"""Server-Sent Events as a client reads them: one parser for a whole body and for a live stream.

An event is `(name, data)`: the name from its `event:` line ("message" when it has none, as browsers
do) and its `data:` lines joined and read as JSON ({} when it has no data). OpenAI's end-of-stream
marker `[DONE]` is not JSON and stays a string.
"""

from __future__ import annotations

import json
import re
from typing import Any, AsyncIterable, AsyncIterator, Iterable, Iterator

Event = tuple[str, Any]
DONE = "[DONE]"


class _Reader:
    """Fields of the event being read; `line` hands back the event a blank line completes."""

    def __init__(self) -> None:
        self.name: str | None = None
        self.data: list[str] = []

    def line(self, line: str) -> Event | None:
        line = line.rstrip("\r")
        if not line:
            return self.end()
        if line.startswith(":"):  # a comment (keep-alive)
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            self.name = value
        elif field == "data":
            self.data.append(value)
        return None

    def end(self) -> Event | None:
        if self.name is None and not self.data:
            return None
        raw = "\n".join(self.data)
        event = (self.name or "message", raw if raw == DONE else json.loads(raw) if raw else {})
        self.name, self.data = None, []
        return event


def iter_sse(lines: Iterable[str]) -> Iterator[Event]:
    """Events as their lines come (an event left open when the lines end counts too)."""
    reader = _Reader()
    for line in lines:
        if (event := reader.line(line)) is not None:
            yield event
    if (event := reader.end()) is not None:
        yield event


def parse_sse(body: str) -> list[Event]:
    """Every event of a whole response body."""
    return list(iter_sse(re.split(r"\r\n|\r|\n", body)))  # not str.splitlines: U+2028 may be in the data


async def aiter_sse(lines: AsyncIterable[str]) -> AsyncIterator[Event]:
    """Events of a live response (`response.aiter_lines()`), each as soon as its blank line arrives."""
    reader = _Reader()
    async for line in lines:
        if (event := reader.line(line)) is not None:
            yield event
    if (event := reader.end()) is not None:
        yield event


def openai_chunks(body: str) -> list[dict]:
    """The chunks of an OpenAI-style stream, which must end with `data: [DONE]`."""
    events = parse_sse(body)
    assert events and events[-1] == ("message", DONE), events[-2:]
    return [data for _, data in events[:-1]]
