"""Streaming load generation and its statistics, for `bench serve`.

Two kinds of target see the same load: the server's `/api/ask` (SSE `token` events) and the backend
itself, given the final prompts the server would build (an OpenAI-compatible `/completions` or
`/chat/completions` stream, or the backend object's own `stream()` for in-process engines). Times are
taken where the client sees each piece: time to first token, the gaps between pieces, and the level's
wall time, from which the aggregate tokens per second follow.

HTTP load runs in a child process (`python -m evals.loadgen`, a JSON job on stdin, the results on
stdout), as real clients would: the server under test then has its process to itself.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Awaitable, Callable

import httpx
import numpy as np

from assistant.backends.base import Backend, GenParams, Message, completion_text
from assistant.backends.http_clients import pool_limits


@dataclass
class Result:
    """One streamed request as the client saw it."""

    ok: bool = False
    error: str = ""
    ttft_s: float | None = None
    gaps_s: list[float] = field(default_factory=list)
    text: str = ""
    tokens: int = 0  # filled in after the level, counted the same way for every target
    engine_tokens: int | None = None  # the engine's own count of the tokens it generated, where it says
    prompt_tokens: int | None = None  # the prompt's tokens as the server counted them (`done`), for /api/ask only
    retrieve_ms: float | None = None  # the server's own account (`done` timings), for /api/ask only
    prompt_ms: float | None = None
    early_count_ms: float | None = None  # a prompt sent before it was counted: its count, beside the engine
    check_ms: float | None = None  # the answer's check, after its last token and before `done`
    server_first_token_ms: float | None = None
    backend_first_token_ms: float | None = None  # the engine's part of the TTFT, as the server saw it


class Stopwatch:
    """Records a request's pieces as they arrive."""

    def __init__(self) -> None:
        self.result = Result()
        self.t0 = time.perf_counter()
        self.last: float | None = None
        self.parts: list[str] = []

    def piece(self, text: str) -> None:
        if not text:
            return
        now = time.perf_counter()
        if self.last is None:
            self.result.ttft_s = now - self.t0
        else:
            self.result.gaps_s.append(now - self.last)
        self.last = now
        self.parts.append(text)

    def finish(self, error: str = "") -> Result:
        self.result.text = "".join(self.parts)
        self.result.error = error
        self.result.ok = not error  # an empty answer (the model stopped at once) is an answer too
        return self.result


async def ask_server(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> Result:
    """POST /api/ask and time its `token` events until `done` or `error`."""
    watch = Stopwatch()
    event = ""
    try:
        async with client.stream("POST", f"{url}/api/ask", json=body) as r:
            if r.status_code != 200:
                return watch.finish(f"HTTP {r.status_code}: {(await r.aread())[:200]!r}")
            async for line in r.aiter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data = json.loads(line[5:])
                    if event == "token":
                        watch.piece(data.get("text", ""))
                    elif event == "error":
                        return watch.finish(data.get("message", "error"))
                    elif event == "done":
                        timings = data.get("timings") or {}
                        watch.result.retrieve_ms = timings.get("retrieve_ms")
                        watch.result.prompt_ms = timings.get("prompt_ms")
                        watch.result.early_count_ms = timings.get("early_count_ms")
                        watch.result.check_ms = timings.get("check_ms")
                        watch.result.server_first_token_ms = timings.get("first_token_ms")
                        watch.result.backend_first_token_ms = timings.get("backend_first_token_ms")
                        watch.result.engine_tokens = data.get("completion_tokens")
                        watch.result.prompt_tokens = data.get("prompt_tokens")
                        break
    except httpx.HTTPError as exc:
        return watch.finish(f"{type(exc).__name__}: {exc}")
    return watch.finish()


async def ask_openai(
    client: httpx.AsyncClient, base_url: str, model: str, style: str, messages: list[Message], params: GenParams,
    sampling: dict[str, Any] | None = None,
) -> Result:
    """The same prompt straight to an OpenAI-compatible server, streamed, with the server's sampling settings."""
    body: dict[str, Any] = {**(sampling or {}), "model": model, "max_tokens": params.max_tokens,
                            "temperature": params.temperature, "stream": True,
                            "stream_options": {"include_usage": True}}  # as the server asks  # fmt: skip
    if params.stop:
        body["stop"] = params.stop[:4]
    if style == "chat":
        body["messages"] = messages
        path = "/chat/completions"
    else:
        body["prompt"] = completion_text(messages)
        path = "/completions"
    watch = Stopwatch()
    try:
        async with client.stream("POST", f"{base_url}{path}", json=body) as r:
            if r.status_code != 200:
                return watch.finish(f"HTTP {r.status_code}: {(await r.aread())[:200]!r}")
            async for line in r.aiter_lines():
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                chunk = json.loads(payload)
                usage = chunk.get("usage")
                if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                    watch.result.engine_tokens = usage["completion_tokens"]
                choices = chunk.get("choices") or []
                if choices:
                    c = choices[0]
                    watch.piece((c.get("delta") or {}).get("content") or "" if style == "chat" else c.get("text") or "")
    except httpx.HTTPError as exc:
        return watch.finish(f"{type(exc).__name__}: {exc}")
    return watch.finish()


async def ask_backend(backend: Backend, messages: list[Message], params: GenParams) -> Result:
    """The same prompt to an in-process backend object (no HTTP server in front of it)."""
    watch = Stopwatch()
    stream = backend.stream(messages, params)
    try:
        async for piece in stream:
            watch.piece(piece)
    except Exception as exc:  # noqa: BLE001 - recorded as this request's error
        return watch.finish(f"{type(exc).__name__}: {exc}")
    counted = getattr(stream, "completion_tokens", None)
    watch.result.engine_tokens = counted if isinstance(counted, int) else None
    return watch.finish()


async def run_level(
    make: Callable[[int], Awaitable[Result]], concurrency: int, requests: int
) -> tuple[list[Result], float, float]:
    """`requests` requests, `concurrency` at a time (each worker sends its next as soon as one ends).

    Returns the results, the wall time and the CPU time this process spent meanwhile (all its threads:
    the client and, when in-process, the server)."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(requests):
        queue.put_nowait(i)
    results: list[Result] = []

    async def worker() -> None:
        while True:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            results.append(await make(i))

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return results, time.perf_counter() - started, time.process_time() - cpu


def pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)) * 1000, 2) if values else None


def summarize(results: list[Result], wall_s: float, client_cpu_s: float, server_cpu_s: float | None = None) -> dict[str, Any]:
    """Aggregate tok/s over the level's wall time; TTFT and inter-token latency percentiles in ms; the CPU
    seconds the client and (for /api/ask) the server spent."""
    ok = [r for r in results if r.ok]
    tokens = sum(r.tokens for r in ok)
    ttfts = [r.ttft_s for r in ok if r.ttft_s is not None]
    gaps = [g for r in ok for g in r.gaps_s]
    retrieve = [r.retrieve_ms / 1000 for r in ok if r.retrieve_ms is not None]
    prompt = [r.prompt_ms / 1000 for r in ok if r.prompt_ms is not None]
    early = [r.early_count_ms / 1000 for r in ok if r.early_count_ms is not None]
    check = [r.check_ms / 1000 for r in ok if r.check_ms is not None]
    server_ttft = [r.server_first_token_ms / 1000 for r in ok if r.server_first_token_ms is not None]
    # What the server adds to each request's TTFT, the engine's own wait taken out: retrieval, the prompt,
    # and relaying the first token. Unlike a difference of two p50s, this does not move with the
    # engine's queueing, which varies by tens of milliseconds between rounds at high concurrency.
    overhead = [r.ttft_s - r.backend_first_token_ms / 1000 for r in ok
                if r.ttft_s is not None and r.backend_first_token_ms is not None]
    return {
        "requests": len(results),
        "errors": len(results) - len(ok),
        "first_error": next((r.error for r in results if not r.ok), None),
        "tokens": tokens,
        "wall_s": round(wall_s, 3),
        "client_cpu_s": round(client_cpu_s, 3),
        "server_cpu_s": round(server_cpu_s, 3) if server_cpu_s is not None else None,
        "tok_s": round(tokens / wall_s, 2) if wall_s > 0 else 0.0,
        "ttft_ms_p50": pct(ttfts, 50),
        "ttft_ms_p99": pct(ttfts, 99),
        "itl_ms_p50": pct(gaps, 50),
        "itl_ms_p99": pct(gaps, 99),
        **({"retrieve_ms_p50": pct(retrieve, 50)} if retrieve else {}),
        **({"prompt_ms_p50": pct(prompt, 50)} if prompt else {}),
        **({"early_count_ms_p50": pct(early, 50), "early_sent": len(early)} if early else {}),
        **({"check_ms_p50": pct(check, 50)} if check else {}),
        **({"server_first_token_ms_p50": pct(server_ttft, 50)} if server_ttft else {}),
        **({"server_overhead_ms_p50": pct(overhead, 50), "server_overhead_ms_p99": pct(overhead, 99)} if overhead else {}),
    }


async def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """One level against one HTTP target. job: kind ("ask" | "openai"), url, concurrency, items (one
    per request: an /api/ask body, or {"messages", "max_tokens", "temperature", "stop"}), and for
    "openai" also model, style and sampling (more request-body fields)."""
    items = job["items"]
    limits = pool_limits(job["concurrency"] + 4)
    async with httpx.AsyncClient(timeout=httpx.Timeout(900, connect=10), limits=limits) as client:

        def make(i: int) -> Awaitable[Result]:
            item = items[i]
            if job["kind"] == "ask":
                return ask_server(client, job["url"], item)
            params = GenParams(max_tokens=item["max_tokens"], temperature=item["temperature"], stop=item["stop"])
            return ask_openai(client, job["url"], job["model"], job["style"], item["messages"], params, job.get("sampling"))

        results, wall, cpu = await run_level(make, job["concurrency"], len(items))
    return {"results": [asdict(r) for r in results], "wall_s": wall, "cpu_s": cpu}


async def run_job_in_child(job: dict[str, Any]) -> tuple[list[Result], float, float]:
    """run_job in a fresh `python -m evals.loadgen`: results, wall time, the client's CPU time."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "evals.loadgen", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate(json.dumps(job).encode())
    if proc.returncode != 0:
        raise RuntimeError(f"the load generator failed (exit code {proc.returncode})")
    data = json.loads(out)
    return [Result(**r) for r in data["results"]], data["wall_s"], data["cpu_s"]


def main() -> None:
    job = json.loads(sys.stdin.read())
    print(json.dumps(asyncio.run(run_job(job))))


if __name__ == "__main__":
    main()
