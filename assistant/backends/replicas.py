"""Several replicas of one OpenAI-compatible server: least-in-flight routing, failed ones set aside.

A replica that cannot be reached is skipped for `retry_after_s`, then tried again (by the next request
or health check); a replica seen healthy is back in the rotation at once. When every replica is set
aside, they are still tried, the one set aside first leading, so that a recovered server is found
without waiting for the timer.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass
from typing import Any

from assistant.backends.upstream_auth import upstream_auth
from assistant.security.redaction import redact_url


@dataclass
class Replica:
    base_url: str  # the server's /v1 URL, without credentials (upstream_auth.py)
    authorization: str = "Bearer none"  # the Authorization header it is sent
    client: Any = None  # its openai.AsyncOpenAI client
    in_flight: int = 0
    served: int = 0  # requests sent to it so far
    down_until: float = 0.0
    last_error: str = ""
    order: int = 0  # tie-breaker: least recently picked first

    @property
    def root(self) -> str:
        """The server's root URL, where vLLM's /tokenize and llama.cpp's /extras live."""
        return self.base_url.removesuffix("/v1")

    @property
    def shown_url(self) -> str:
        """The base URL as messages, logs and /api/status may show it: no password, no query values."""
        return redact_url(self.base_url)

    @property
    def up(self) -> bool:
        return self.down_until <= time.monotonic()

    def status(self) -> dict[str, Any]:
        return {"url": self.shown_url, "up": self.up, "in_flight": self.in_flight, "served": self.served,
                "last_error": self.last_error}  # fmt: skip


class Replicas:
    def __init__(self, urls: list[str], retry_after_s: float, api_key: str = "none") -> None:
        if not urls:
            raise ValueError("at least one base URL is needed")
        auths = [upstream_auth(u.rstrip("/"), api_key) for u in dict.fromkeys(urls)]
        self.all = [Replica(a.url, a.authorization) for a in auths]
        self.retry_after_s = retry_after_s
        self._ticks = itertools.count(1)
        self._lock = threading.Lock()

    @property
    def shown(self) -> str:
        """The replica(s) as a message may name them (no password, no query values)."""
        urls = [r.shown_url for r in self.all]
        return urls[0] if len(urls) == 1 else "any of " + ", ".join(urls)

    def candidates(self) -> list[Replica]:
        """Replicas in the order to try them: those up by fewest in flight, then those set aside."""
        with self._lock:
            up = sorted((r for r in self.all if r.up), key=lambda r: (r.in_flight, r.order))
            down = sorted((r for r in self.all if not r.up), key=lambda r: r.down_until)
            if up:
                up[0].order = next(self._ticks)  # equal load: rotate
            return up + down

    def acquire(self, replica: Replica) -> None:
        with self._lock:
            replica.in_flight += 1
            replica.served += 1

    def release(self, replica: Replica) -> None:
        with self._lock:
            replica.in_flight -= 1

    def mark_down(self, replica: Replica, reason: str) -> None:
        replica.down_until = time.monotonic() + self.retry_after_s
        replica.last_error = reason

    def mark_up(self, replica: Replica) -> None:
        replica.down_until = 0.0
        replica.last_error = ""
