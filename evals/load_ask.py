"""Many clients asking at once for a while: what the server answers under overload (no 5xx; the excess
gets 429 with Retry-After), counted by status.

Each client loops until the duration ends: one question, the whole event stream read, and after a 429 a
pause of min(Retry-After, `max_backoff_s`). It runs in its own process (`python -m evals.load_ask`, a
JSON job on stdin, a JSON summary on stdout), so the server under test keeps its process to itself.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import Counter
from typing import Any

import httpx

from assistant.backends.http_clients import pool_limits


async def client_loop(client: httpx.AsyncClient, url: str, body: dict, deadline: float, max_backoff_s: float,
                      statuses: Counter, missing_retry_after: list[int], errors: Counter, latencies: list[float]) -> None:
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        try:
            async with client.stream("POST", url, json=body) as r:
                async for _ in r.aiter_bytes():
                    pass
        except httpx.HTTPError as exc:
            errors[type(exc).__name__] += 1
            await asyncio.sleep(0.05)
            continue
        statuses[r.status_code] += 1
        if r.status_code == 200:
            latencies.append(time.perf_counter() - started)
        elif r.status_code == 429:
            retry = r.headers.get("retry-after")
            if retry is None or not retry.isdigit():
                missing_retry_after.append(r.status_code)
            await asyncio.sleep(min(float(retry or 1), max_backoff_s))


async def run_load(base_url: str, body: dict, *, clients: int = 200, seconds: float = 60.0,
                   max_backoff_s: float = 0.25, headers: dict | None = None) -> dict[str, Any]:
    statuses: Counter = Counter()
    errors: Counter = Counter()
    missing: list[int] = []
    latencies: list[float] = []
    limits = pool_limits(clients)
    timeout = httpx.Timeout(120.0, connect=30.0)
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=timeout, headers=headers or {}) as client:
        deadline = started + seconds
        await asyncio.gather(*(client_loop(client, "/api/ask", body, deadline, max_backoff_s, statuses, missing, errors,
                                           latencies) for _ in range(clients)))
    wall = time.perf_counter() - started
    latencies.sort()
    return {
        "clients": clients, "seconds": round(wall, 1), "requests": sum(statuses.values()),
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "server_errors": sum(v for k, v in statuses.items() if k >= 500),
        "429_without_retry_after": len(missing), "client_errors": dict(errors),
        "answered_per_s": round(statuses.get(200, 0) / wall, 1),
        "p50_answer_s": round(latencies[len(latencies) // 2], 3) if latencies else None,
        "p99_answer_s": round(latencies[int(len(latencies) * 0.99)], 3) if latencies else None,
    }


def main() -> None:
    job = json.load(sys.stdin)
    result = asyncio.run(run_load(job["url"], job["body"], clients=job.get("clients", 200),
                                  seconds=job.get("seconds", 60.0), max_backoff_s=job.get("max_backoff_s", 0.25),
                                  headers=job.get("headers")))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
