"""The per-key rate limit (Litestar's RateLimit middleware), whose 429 also says `Retry-After`. (The caps on
answers and searches at once are backends/capped.py.)"""

from __future__ import annotations

from typing import Any

from litestar.middleware.rate_limit import CacheObject, RateLimitConfig, RateLimitMiddleware

from assistant.security.access import bearer_token, is_loopback, rate_limit_identifier

# Requests that pass the rate limit uncounted: the page and its files, liveness, the API's schema.
UNLIMITED_PATHS = [r"^/$", r"^/static/", r"^/health$", r"^/api/docs"]


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
