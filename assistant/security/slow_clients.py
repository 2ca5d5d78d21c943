"""Connections that hold the server without asking anything: uvicorn closes an idle keep-alive connection
(`timeout_keep_alive`) but waits forever for the headers of a request that arrive a byte at a time.

The server's HTTP protocol here is uvicorn's own (httptools when installed, else h11) with one more
timer: a request's headers must be complete within `header_timeout_s` of the connection opening or of
the previous response; a connection still sending them then is closed. A request being answered is
never cut (an answer may stream for minutes).
"""

from __future__ import annotations

import asyncio
from typing import Any

from assistant.settings import ServerSettings


class HeaderDeadline:
    """A mixin over a uvicorn HTTP protocol class: the header deadline above."""

    header_timeout_s: float = 10.0
    _deadline: asyncio.TimerHandle | None = None
    _awaited: Any = None  # the request cycle in place when the deadline was armed (None on a new connection)

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        if self._deadline is not None and self.cycle is not self._awaited:  # type: ignore[attr-defined]
            self._cancel()  # a request's headers are complete: it is being answered

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing():  # type: ignore[attr-defined]
            self._arm()  # the next request's headers are held to the same deadline

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)  # type: ignore[misc]

    def _arm(self) -> None:
        self._cancel()
        self._awaited = self.cycle  # type: ignore[attr-defined]
        self._deadline = self.loop.call_later(self.header_timeout_s, self._expire)  # type: ignore[attr-defined]

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        cycle = self.cycle  # type: ignore[attr-defined]
        answering = cycle is not None and not cycle.response_complete
        if not answering and not self.transport.is_closing():  # type: ignore[attr-defined]
            self.transport.close()  # type: ignore[attr-defined]


def http_protocol(header_timeout_s: float) -> type:
    """uvicorn's HTTP protocol class (the one `http="auto"` picks) with the header deadline."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol as base
    return type("HeaderDeadlineProtocol", (HeaderDeadline, base), {"header_timeout_s": header_timeout_s})


def uvicorn_options(server: ServerSettings) -> dict[str, Any]:
    """The timeouts `assistant serve` gives uvicorn."""
    return {"http": http_protocol(server.header_timeout_s), "timeout_keep_alive": server.keep_alive_s}
