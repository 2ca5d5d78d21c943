"""Server-side limits: a cap on answers generated at once (for every backend, not only the in-process one),
a cap on searches run at once, and the per-key rate limit (Litestar's RateLimit middleware) whose 429
also says `Retry-After`.

Beyond a cap a request is refused with BackendBusy, which every route already answers as 429 +
Retry-After before anything is streamed.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, AsyncIterator, Iterator

from litestar.middleware.rate_limit import CacheObject, RateLimitConfig, RateLimitMiddleware

from assistant.security.access import bearer_token, is_loopback, rate_limit_identifier
from assistant.backends.base import BackendBusy

# Requests that pass the rate limit uncounted: the page and its files, liveness, the API's schema.
UNLIMITED_PATHS = [r"^/$", r"^/static/", r"^/health$", r"^/api/docs"]


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
    """A backend's token stream that gives its place in the gate back once finished, failed or closed."""

    def __init__(self, inner: Any, gate: Gate) -> None:
        self._inner = inner
        self._gate: Gate | None = gate

    def _release(self) -> None:
        gate, self._gate = self._gate, None
        if gate is not None:
            gate.leave()

    def __aiter__(self) -> "_GatedStream":
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except BaseException:
            self._release()
            raise

    async def aclose(self) -> None:
        try:
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


class RetryAfterRateLimit(RateLimitMiddleware):
    """Litestar's rate limit, whose refusal also carries `Retry-After` (seconds to the window's reset)."""

    def create_response_headers(self, cache_object: CacheObject) -> dict[str, str]:
        headers = super().create_response_headers(cache_object)
        if len(cache_object.history) >= self.max_requests:
            headers["Retry-After"] = str(max(1, int(headers[self.config.rate_limit_reset_header_key])))
        return headers


async def counted(request: Any) -> bool:
    """Requests with a key count against it; keyless ones only from other machines (the one local
    user is not limited)."""
    return bearer_token(request) is not None or not is_loopback(request.client.host if request.client else "")


def rate_limit(per_minute: int) -> RateLimitConfig | None:
    if per_minute <= 0:
        return None
    return RateLimitConfig(
        rate_limit=("minute", per_minute),
        exclude=UNLIMITED_PATHS,
        identifier_for_request=rate_limit_identifier,
        check_throttle_handler=counted,
        middleware_class=RetryAfterRateLimit,
    )
