"""A managed engine (vLLM, llama-server) under test: started once for a module and checked gone after it,
our server in front of it, its answers read through /api/ask, and a kill in the middle of one."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from contextlib import contextmanager
from typing import Callable, Iterator

import httpx
import pytest

from assistant.app import create_app
from assistant.services import Services
from evals.local_server import serve_in_thread
from tests.support.sse import aiter_sse
from tests.support.wait import async_wait_until

# The small handbook both engines' tests ask about.
HANDBOOK = {
    "travel/booking.md": ("Booking travel", "Book flights through the travel desk at least 14 days before departure. "
                          "Hotels are booked by the traveller and refunded against receipts."),
    "leave/vacation.md": ("Vacation", "Annual leave accrues at four hours per pay period and carries over up to 240 hours."),
    "tools/laptops.md": ("Laptops", "New staff receive a laptop on their first day from the IT help desk."),
    "security/badges.md": ("Badges", "Lost badges are reported to the front desk, which disables them within the hour."),
}  # fmt: skip


def started(process) -> Iterator:
    """For a module fixture: the process started and ready (a failure with its reason otherwise), then
    stopped, with every process of its group gone (SIGTERM, then SIGKILL, reached its workers too)."""
    process.start()
    if not process.wait_ready(process.cfg.start_timeout_s):
        detail = process.detail
        process.stop()
        pytest.fail(f"{process.label} did not start: {detail}")
    yield process
    pid = process.pid
    process.stop()
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


@contextmanager
def serving(settings, store, embedder, backend) -> Iterator[str]:
    """Our server on a free loopback port over `backend` (one sharing the module's engine); its URL."""
    services = Services.assemble(settings, store, embedder, backend)
    with serve_in_thread(create_app(settings, services)) as server:
        yield server.url


async def ask(client: httpx.AsyncClient, url: str, question: str, collection: str = "handbook") -> list[tuple[str, dict]]:
    """The events of one question asked through /api/ask."""
    async with client.stream("POST", f"{url}/api/ask", json={"question": question, "collection": collection}) as r:
        assert r.status_code == 200, await r.aread()
        return [e async for e in aiter_sse(r.aiter_lines())]


SIXTEEN = [f"{q} (variant {i})" for i, q in enumerate(["Who books hotels?", "How does leave accrue?",
                                                        "Where do laptops come from?", "What if I lose my badge?"] * 4)]


async def ask_sixteen_at_once(url: str, in_engine: Callable[[], int], what: str) -> list[list[tuple[str, dict]]]:
    """SIXTEEN asked at once through /api/ask, once `in_engine()` (read in a thread) has seen all sixteen in
    the engine at the same time; each one's events, every answer `done`."""
    async with httpx.AsyncClient(timeout=300, limits=httpx.Limits(max_connections=32)) as client:
        tasks = [asyncio.create_task(ask(client, url, q)) for q in SIXTEEN]
        await async_wait_until(lambda: asyncio.to_thread(in_engine), accept=lambda n: n == 16, timeout=120, what=what)
        results = await asyncio.gather(*tasks)
    assert all(r[-1][0] == "done" for r in results), [r[-1] for r in results if r[-1][0] != "done"]
    return results


async def kill_mid_answer(client: httpx.AsyncClient, url: str, process, question: str, after_tokens: int = 5) -> tuple[float, dict]:
    """Ask, SIGKILL the engine's process after `after_tokens` tokens, and return the seconds from the kill
    to the stream's `error` event, with that event's data."""
    async with client.stream("POST", f"{url}/api/ask", json={"question": question, "collection": "handbook"}) as r:
        tokens, killed_at = 0, None
        async for kind, data in aiter_sse(r.aiter_lines()):
            if kind == "token" and killed_at is None:
                tokens += 1
                if tokens == after_tokens:
                    os.kill(process.pid, signal.SIGKILL)
                    killed_at = time.monotonic()
            elif kind == "error":
                assert killed_at is not None, f"an error before the engine was killed: {data}"
                return time.monotonic() - killed_at, data
    raise AssertionError("the stream ended without an error event")
