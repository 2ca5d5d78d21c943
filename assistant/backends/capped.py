"""Caps on work at once: answers generated (for every backend, not only the in-process one) and searches run.

Beyond a cap a request is refused with BackendBusy, which every door already answers as 429 +
Retry-After (or its own busy) before anything is streamed.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, AsyncIterator, Iterator

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


class _GatedStream:
    """A backend's token stream that gives its place in the gate back once finished, failed or closed.

    A reader's `async for` takes the pieces from one generator (`__aiter__`), resumed at each piece rather
    than called for each: the answer's loop passes here once, not once a token."""

    def __init__(self, inner: Any, gate: Gate) -> None:
        self._inner = inner
        self._gate: Gate | None = gate
        self._reader: Any = None

    def _release(self) -> None:
        gate, self._gate = self._gate, None
        if gate is not None:
            gate.leave()

    def __aiter__(self) -> AsyncIterator[Any]:
        if self._reader is None:
            self._reader = self._pieces()
        return self._reader

    async def _pieces(self) -> AsyncIterator[Any]:
        while True:
            try:
                piece = await self._inner.__anext__()
            except StopAsyncIteration:
                self._release()
                return
            except BaseException:
                self._release()
                raise
            yield piece

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


class CappedBackend:
    """Any backend, with at most `gate.limit` answers streaming at once (429 + Retry-After beyond)."""

    def __init__(self, backend: Any, gate: Gate) -> None:
        self._backend = backend
        self.answer_gate = gate

    def stream(self, messages: Any, params: Any) -> AsyncIterator[str]:
        self.answer_gate.enter()
        try:
            inner = self._backend.stream(messages, params)
        except BaseException:
            self.answer_gate.leave()
            raise
        return _GatedStream(inner, self.answer_gate)  # type: ignore[return-value]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)


def capped(backend: Any, limit: int) -> Any:
    return None if backend is None else CappedBackend(backend, Gate(limit, "answers"))
