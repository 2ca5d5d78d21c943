"""What an OpenAI-compatible engine says about itself while `bench serve` measures it.

Read from the engine's own endpoints where it has them: Prometheus `/metrics` (llama.cpp's
`llama-server --metrics`, vLLM) for counters (prompt tokens evaluated, prefix-cache queries and hits)
and for the requests it is running; llama-server's `/slots` for the running requests when `/metrics`
is off. An engine with neither (llama-cpp-python's server) gives None everywhere, and the bench says so.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import httpx

from assistant.backends.llama_server import slot_counts

# Counters whose change over a phase tells whether both sides found the engine in the same state.
COUNTERS = {
    "llamacpp:prompt_tokens_total": "prompt_tokens_evaluated",  # llama-server: tokens prefilled (cache hits excluded)
    "vllm:prompt_tokens_total": "prompt_tokens",
    "vllm:prefix_cache_queries_total": "prefix_cache_queries",
    "vllm:prefix_cache_hits_total": "prefix_cache_hits",
}
RUNNING = ("llamacpp:requests_processing", "vllm:num_requests_running")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([0-9.eE+-]+|NaN)")


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text -> {name: value}, the samples of one name (its label sets) summed."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m and m.group(3) != "NaN":
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
    return out


class EngineWatch:
    """The engine behind a /v1 URL: its counters, its running requests, and waiting for it to be idle."""

    def __init__(self, url: str | None) -> None:
        self.root = url.rstrip("/").removesuffix("/v1") if url else None
        self.has_metrics: bool | None = None if url else False
        self.has_slots: bool | None = None if url else False

    async def _get(self, client: httpx.AsyncClient, path: str) -> httpx.Response | None:
        try:
            r = await client.get(f"{self.root}{path}", timeout=5)
        except httpx.HTTPError:
            return None
        return r if r.status_code == 200 else None

    async def metrics(self, client: httpx.AsyncClient) -> dict[str, float] | None:
        if self.has_metrics is False:
            return None
        r = await self._get(client, "/metrics")
        values = parse_metrics(r.text) if r is not None else {}
        if self.has_metrics is None:
            self.has_metrics = any(k.startswith(("llamacpp:", "vllm:")) for k in values)
        return values if self.has_metrics else None

    async def counters(self, client: httpx.AsyncClient) -> dict[str, float] | None:
        values = await self.metrics(client)
        if values is None:
            return None
        return {label: values[name] for name, label in COUNTERS.items() if name in values}

    async def running(self, client: httpx.AsyncClient) -> int | None:
        """Requests the engine is working on now (None when it does not say)."""
        values = await self.metrics(client)
        if values is not None:
            for name in RUNNING:
                if name in values:
                    return int(values[name])
        if self.has_slots is False:
            return None
        r = await self._get(client, "/slots")
        try:
            slots = r.json() if r is not None else None
        except ValueError:
            slots = None
        counts = slot_counts(slots)
        self.has_slots = counts is not None
        return counts["busy"] if counts else None

    async def wait_idle(self, timeout_s: float = 60.0) -> bool | None:
        """Until the engine runs nothing (True), the timeout passes (False), or it cannot tell (None)."""
        deadline = time.monotonic() + timeout_s
        async with httpx.AsyncClient() as client:
            while True:
                n = await self.running(client)
                if n is None:
                    return None
                if n == 0:
                    return True
                if time.monotonic() > deadline:
                    return False
                await asyncio.sleep(0.05)

    async def peak_running(self, stop: asyncio.Event, every_s: float = 0.1) -> int | None:
        """The most requests seen running at once until `stop` is set (None when the engine does not say)."""
        peak: int | None = None
        async with httpx.AsyncClient() as client:
            while not stop.is_set():
                n = await self.running(client)
                if n is None:
                    return None
                peak = max(peak or 0, n)
                try:
                    await asyncio.wait_for(stop.wait(), every_s)
                except asyncio.TimeoutError:
                    pass
        return peak


def counter_deltas(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, Any] | None:
    if before is None or after is None:
        return None
    return {k: round(after[k] - before.get(k, 0.0)) for k in after}
