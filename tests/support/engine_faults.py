"""A managed engine killed in the middle of an answer, as a client of /api/ask sees it."""

from __future__ import annotations

import os
import signal
import time

import httpx

from tests.support.sse import aiter_sse


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
