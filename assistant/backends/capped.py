"""Caps on work at once: answers generated (for every backend, not only the in-process one) and searches run.

Beyond a cap a request is refused with BackendBusy, which every door already answers as 429 +
Retry-After (or its own busy) before anything is streamed.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from functools import partial
from typing import Any, AsyncIterator, Callable, Iterator

from assistant.backends.base import BackendBusy


class Gate:
    """At most `limit` holders at once; one more is refused at once (no queue: the backends queue)."""

    def __init__(self, limit: int, what: str, retry_after: int = 1) -> None:
        self.limit = limit
        self.what = what
        self.retry_after = retry_after
        self.held = 0
        self._lock = threading.Lock()

    def enter(self) -> None:
        with self._lock:
            if self.held >= self.limit:
                raise BackendBusy(f"the server is busy: {self.held} {self.what} at once already", self.retry_after)
            self.held += 1

    def leave(self) -> None:
        with self._lock:
            self.held = max(0, self.held - 1)

    @contextmanager
    def hold(self) -> Iterator[None]:
        self.enter()
        try:
            yield
        finally:
            self.leave()


class Place:
    """A place taken in a gate, given back once whoever gives it back first (the stream or its reader)."""

    def __init__(self, gate: Gate) -> None:
        self.gate: Gate | None = gate

    def give_back(self) -> None:
        gate, self.gate = self.gate, None
        if gate is not None:
            gate.leave()


async def pieces_of(inner: Any, place: Place) -> AsyncIterator[Any]:
    """The backend's pieces, the place given back when they end or fail. It holds the place, not the
    stream: a stream dropped while read is freed at once (no cycle), and `__del__` gives the place back."""
    while True:
        try:
            piece = await inner.__anext__()
        except StopAsyncIteration:
            place.give_back()
            return
        except BaseException:
            place.give_back()
            raise
        yield piece


class _GatedStream:
    """A backend's token stream that gives its place in the gate back once finished, failed or closed.

    A reader's `async for` takes the pieces from one generator (`__aiter__`), resumed at each piece rather
    than called for each: the answer's loop passes here once, not once a token."""

    def __init__(self, inner: Any, gate: Gate) -> None:
        self._inner = inner
        self._place = Place(gate)
        self._reader: Any = None

    def _release(self) -> None:
        self._place.give_back()

    def __aiter__(self) -> AsyncIterator[Any]:
        if self._reader is None:
            self._reader = pieces_of(self._inner, self._place)
        return self._reader

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except BaseException:
            self._release()
            raise

    async def aclose(self) -> None:
        try:
            reader, self._reader = self._reader, None
            if reader is not None and not reader.ag_running:
                await reader.aclose()  # a reader left between pieces closed now, not by the collector
            close = getattr(self._inner, "aclose", None)
            if close is not None:
                await close()
        finally:
            self._release()

    def __getattr__(self, name: str) -> Any:  # completion_tokens and the like
        return getattr(self._inner, name)

    def __del__(self) -> None:  # a stream dropped without being read or closed
        self._release()


def gated_stream(stream: Callable[[Any, Any], Any], gate: Gate, messages: Any, params: Any) -> AsyncIterator[str]:
    """What `stream` opens, with a place in `gate` taken first and given back when the stream ends."""
    gate.enter()
    try:
        inner = stream(messages, params)
    except BaseException:
        gate.leave()
        raise
    return _GatedStream(inner, gate)  # type: ignore[return-value]


def capped(backend: Any, limit: int) -> Any:
    """The backend itself with at most `limit` answers streaming at once (429 + Retry-After beyond): its
    `stream` gated in place, every other attribute (the model, its context window, its counts) read from
    the backend with no wrapper between, on every question's path. Capped again (services assembled anew
    around the same backend), the new gate replaces the old one rather than adding to it."""
    if backend is None:
        return None
    stream = getattr(backend, "ungated_stream", None) or backend.stream
    backend.ungated_stream = stream
    backend.answer_gate = Gate(limit, "answers")
    backend.stream = partial(gated_stream, stream, backend.answer_gate)
    return backend
