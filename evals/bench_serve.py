"""`assistant bench serve`: does the server pass the engine's speed through to its clients?

A fixed set of questions goes, at each concurrency level, to the server's `/api/ask` (the whole path:
retrieval, prompt, backend, SSE) and, as the very prompts the server builds, straight to the backend.
Both are measured by the same client in one run; the figures per level are aggregate tok/s, TTFT and
inter-token latency p50/p99, the ratio ours/direct and the TTFT the server adds, two ways:
`server_added_ttft_ms_p50` (ours p50 - direct p50, which also carries the engine's queueing noise
between rounds) and `ours.server_overhead_ms_p50` (per request, the client's TTFT minus the engine's
own time to first token as the server saw it: retrieval, prompt and relay alone). The environment
(engine versions, CUDA, driver, NCCL, GPUs, the backend's flags) is recorded with them, and a PNG
plots throughput and TTFT against concurrency.

The server runs in this process on a free loopback port, over the backend the settings select.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from assistant.backends.base import GenParams
from evals.engine_watch import EngineWatch, counter_deltas
from evals.loadgen import Result, ask_backend, run_job_in_child, run_level, summarize
from assistant.settings import Settings

ROUNDS = 2  # per level and side, by default
QUESTIONS = [
    "What is this project about?",
    "How do I install it?",
    "How is it configured?",
    "What are the main components and how do they fit together?",
    "How are errors handled?",
    "How do I run the tests?",
    "Which settings change performance?",
    "What does the command line offer?",
]


def levels_from(text: str) -> list[int]:
    levels = sorted({int(x) for x in text.split(",") if x.strip()})
    if not levels or levels[0] < 1:
        raise SystemExit("bench serve: --concurrency takes positive integers, e.g. 1,4,16")
    return levels


def direct_url(backend: Any) -> str | None:
    """The backend's OpenAI-compatible /v1 URL when it is an HTTP server (vllm, openai), else None."""
    url = getattr(backend, "direct_base_url", None) or getattr(backend, "base_url", None)
    return str(url).rstrip("/") if url else None


def engine_version(url: str | None) -> str | None:
    """vLLM's GET /version (other servers may not have one)."""
    if not url:
        return None
    try:
        r = httpx.get(f"{url.removesuffix('/v1')}/version", timeout=5)
        return r.json().get("version") if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def server_sampling(settings: Settings) -> dict[str, Any]:
    """Extra sampling parameters the server's backend sends; the direct requests send them too."""
    return {"vllm": settings.vllm.sampling, "openai": settings.openai.sampling,
            "llama-server": settings.llama_server.sampling}.get(settings.backend, {})  # fmt: skip


def environment(settings: Settings, backend: Any) -> dict[str, Any]:
    """Versions, GPUs and the backend's own flags, recorded with the figures."""
    from assistant.gpu.probe import collect_facts

    facts = collect_facts()
    torch = facts.torch
    flags: dict[str, Any] = {"prompt_style": backend.prompt_style, "context_window": backend.context_window,
                             "embedder_threads": settings.embedder.threads}  # fmt: skip
    if settings.backend == "vllm":
        flags["command"] = backend.process.command()
        flags["env"] = dict(settings.vllm.env)
        flags["nice"] = settings.vllm.nice  # the engine's CPU priority: not part of its command line
        flags["sampling"] = dict(settings.vllm.sampling)
    elif settings.backend == "llama-server":
        flags["command"] = backend.process.command()
        flags["env"] = dict(settings.llama_server.env)
        flags["nice"] = settings.llama_server.nice
        flags["sampling"] = dict(settings.llama_server.sampling)
        flags["why"] = backend.launch.why
        flags["build"] = backend.launch.build
    elif settings.backend == "llamacpp":
        flags.update(settings.llamacpp.model_dump(mode="json"))
    elif settings.backend == "openai":
        flags.update(settings.openai.model_dump(mode="json", exclude={"api_key"}))
        flags["context_window"] = backend.context_window  # the server's own when it reports one, not the fallback
    url = direct_url(backend)
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "torch": torch.version if torch else None,
        "cuda": torch.cuda if torch else None,
        "nccl": torch.nccl if torch else None,
        "driver": facts.driver_version,
        "driver_cuda": facts.driver_cuda,
        "gpus": [g.name for g in facts.gpus],
        "vllm": engine_version(url) if settings.backend in ("vllm", "openai") else facts.vllm_version,
        "llama_cpp": facts.llama_cpp_version,
        "gpu_env": facts.env,
        "backend": {"name": backend.name, "model": backend.model, "url": url, "flags": flags},
    }


def build_prompts(services: Any, collection: str, questions: list[str]) -> list[Any]:
    """The exact prompts the server builds for these questions (same retriever, same budget)."""
    from assistant.answers.prompts import build_prompt

    gen = services.settings.generation
    out = []
    for q in questions:
        hits = services.retriever.search(q, [collection], services.settings.retrieval.k)
        out.append(build_prompt(q, hits, services.backend, gen.max_tokens, gen.margin_tokens, None))
    return out


def count_answer_tokens(backend: Any, results: list[Result]) -> None:
    """Answer tokens: the engine's own count where it gave one (the same engine serves both targets, so
    both have it or neither), else the text counted with the backend's tokenizer the same way for both.
    The engine's count is what it generated: the server's text can be shorter (a citation it drops)."""
    base = None
    for r in results:
        if not r.ok:
            continue
        if r.engine_tokens is not None:
            r.tokens = r.engine_tokens
            continue
        if base is None:
            base = backend.count_tokens([{"role": "user", "content": ""}])
        r.tokens = max(backend.count_tokens([{"role": "user", "content": r.text}]) - base, 0)


async def measure(services: Any, server: Any, collection: str, questions: list[str], levels: list[int],
                  requests: int | None, emit, rounds: int = ROUNDS) -> list[dict[str, Any]]:  # fmt: skip
    """Per level, rounds of both targets with the same questions/prompts; the figures of each."""
    backend, gen = services.backend, services.settings.generation
    prompts = await asyncio.to_thread(build_prompts, services, collection, questions)
    url = direct_url(backend)
    watch = EngineWatch(url)

    def ask_items(n: int) -> list[dict[str, Any]]:
        return [{"question": questions[i % len(questions)], "collection": collection} for i in range(n)]

    def direct_items(n: int, max_tokens: int | None = None) -> list[dict[str, Any]]:
        return [{"messages": prompts[i % len(prompts)].messages, "max_tokens": max_tokens or gen.max_tokens,
                 "temperature": gen.temperature, "stop": prompts[i % len(prompts)].stop} for i in range(n)]  # fmt: skip

    async def send_direct(items: list[dict[str, Any]], c: int) -> tuple[list[Result], float, float]:
        if url:
            job = {"kind": "openai", "url": url, "model": backend.model, "style": backend.prompt_style,
                   "sampling": server_sampling(services.settings), "concurrency": c, "items": items}  # fmt: skip
            return await run_job_in_child(job)

        def make(i: int):  # an in-process engine: its async objects live on the server's loop
            params = GenParams(max_tokens=items[i]["max_tokens"], temperature=gen.temperature, stop=items[i]["stop"])
            fut = asyncio.run_coroutine_threadsafe(ask_backend(backend, items[i]["messages"], params), server.loop)
            return asyncio.wrap_future(fut)

        return await run_level(make, c, len(items))

    async def phase(side: str, c: int, n: int) -> tuple[list[Result], float, float, float, dict[str, Any]]:
        """Results, wall time, client CPU, server CPU (this process: the server, or the in-process engine)
        and what the engine said about itself.

        Fairness: before timing, the engine evaluates every request of the phase once (one token each,
        untimed, at the phase's concurrency), the same for both sides, and is then left to go idle; so
        neither side finds prompts in the engine's prefix cache that the other side put there, and an
        engine with one cache per slot has each prompt in as many slots as requests will ask for it."""
        await send_direct(direct_items(n, max_tokens=1), c)
        idle = await watch.wait_idle()
        async with httpx.AsyncClient() as probe:
            before = await watch.counters(probe)
            stop = asyncio.Event()
            peak = asyncio.create_task(watch.peak_running(stop))
            cpu = time.process_time()
            if side == "ours":
                job = {"kind": "ask", "url": server.url, "concurrency": c, "items": ask_items(n)}
                results, wall, client_cpu = await run_job_in_child(job)
            else:
                results, wall, client_cpu = await send_direct(direct_items(n), c)
            server_cpu = time.process_time() - cpu
            stop.set()
            after = await watch.counters(probe)
        engine = {"idle_before": idle, "peak_running": await peak, "counters": counter_deltas(before, after)}
        return results, wall, client_cpu, server_cpu, engine

    for side in ("ours", "direct"):  # warm-up: caches, connections, first-call costs
        warm, *_ = await phase(side, min(len(questions), 4), len(questions))
        await asyncio.to_thread(count_answer_tokens, backend, warm)
        check_answers(side, warm, url)
    report = []
    for c in levels:
        # Rounds in A-B-B-A order, so that a drift in the machine's load weighs on both sides alike.
        per_round = max(c, math.ceil((requests or max(2 * c, 8)) / rounds))
        runs: dict[str, list[Any]] = {"ours": [[], 0.0, 0.0, 0.0], "direct": [[], 0.0, 0.0, 0.0]}
        engine: dict[str, list[dict[str, Any]]] = {"ours": [], "direct": []}
        for r in range(rounds):
            for side in ("ours", "direct") if r % 2 == 0 else ("direct", "ours"):
                results, wall, client_cpu, server_cpu, seen = await phase(side, c, per_round)
                engine[side].append(seen)
                await asyncio.to_thread(count_answer_tokens, backend, results)
                acc = runs[side]
                acc[0] += results
                acc[1] += wall
                acc[2] += client_cpu
                acc[3] += server_cpu
        level: dict[str, Any] = {"concurrency": c, "rounds": rounds}
        for side, (results, *_) in runs.items():
            check_answers(side, results, url)
        for side, (results, wall, client_cpu, server_cpu) in runs.items():
            level[side] = summarize(results, wall, client_cpu, server_cpu)
            counted = [r.engine_tokens is not None for r in results if r.ok]
            level[side]["tokens_counted_by"] = "engine" if counted and all(counted) else "tokenizer"
            level[side]["engine"] = engine_summary(engine[side])
        o, d = level["ours"], level["direct"]
        level["ratio"] = round(o["tok_s"] / d["tok_s"], 3) if d["tok_s"] else None
        level["server_added_ttft_ms_p50"] = (
            round(o["ttft_ms_p50"] - d["ttft_ms_p50"], 2) if None not in (o["ttft_ms_p50"], d["ttft_ms_p50"]) else None
        )
        emit(level)
        report.append(level)
    return report


class BenchRefused(Exception):
    """A measurement that would print a level without figures: the reason, for the user."""


def check_answers(side: str, results: list[Result], url: str | None) -> None:
    """Refuse to go on when a side got no answer tokens: its tokens/s and the ratio would mean nothing."""
    tokens = sum(r.tokens for r in results if r.ok)
    if tokens > 0:
        return
    errors = [r.error for r in results if not r.ok and r.error]
    where = url or "the in-process engine"
    why = f"the first error: {errors[0]}" if errors else (
        "every answer ended before its first token (the engine stops at once on these prompts: try other "
        "--questions, a larger --max-tokens, or an instruct model)")  # fmt: skip
    raise BenchRefused(f"{len(results)} requests of the {side} side got no answer tokens from {where}; {why}")


def engine_summary(phases: list[dict[str, Any]]) -> dict[str, Any]:
    """One side's rounds as the engine saw them: the most requests it ran at once, whether it was idle
    before each round, and its counters (prompt tokens evaluated, prefix-cache hits) summed."""
    peaks = [p["peak_running"] for p in phases if p["peak_running"] is not None]
    counters = [p["counters"] for p in phases if p["counters"] is not None]
    total = {k: sum(c.get(k, 0) for c in counters) for k in sorted({k for c in counters for k in c})}
    return {
        "peak_running": max(peaks) if peaks else None,
        "idle_before": [p["idle_before"] for p in phases],
        "counters": total if counters else None,
    }


def plot(levels: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [lv["concurrency"] for lv in levels]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    for who, style, color in (("ours", "o-", "tab:blue"), ("direct", "s--", "tab:orange")):
        a.plot(xs, [lv[who]["tok_s"] for lv in levels], style, color=color, label=who)
        b.plot(xs, [lv[who]["ttft_ms_p50"] or 0 for lv in levels], style, color=color, label=f"{who} p50")
        b.plot(xs, [lv[who]["ttft_ms_p99"] or 0 for lv in levels], style, color=color, alpha=0.35, label=f"{who} p99")
    for ax, label in ((a, "aggregate tokens/s"), (b, "time to first token (ms)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_xlabel("concurrent requests")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def print_table(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"bench serve: {report['environment']['backend']['name']} {report['environment']['backend']['model']}")
    for col in ("conc.", "ours tok/s", "direct tok/s", "ratio", "TTFT p50 ours/direct ms", "added ms", "overhead p50 ms",
                "retrieval / prompt p50 ms", "ITL p50/p99 ours ms", "errors"):
        t.add_column(col, justify="right")
    for lv in report["levels"]:
        o, d = lv["ours"], lv["direct"]
        t.add_row(str(lv["concurrency"]), f"{o['tok_s']:.1f}", f"{d['tok_s']:.1f}", str(lv["ratio"]),
                  f"{o['ttft_ms_p50']} / {d['ttft_ms_p50']}", str(lv["server_added_ttft_ms_p50"]),
                  str(o.get("server_overhead_ms_p50")), f"{o.get('retrieve_ms_p50')} / {o.get('prompt_ms_p50')}",
                  f"{o['itl_ms_p50']} / {o['itl_ms_p99']}", f"{o['errors']} / {d['errors']}")  # fmt: skip
    Console().print(t)
    print(f"report: {report['json']}\nplot:   {report['plot']}")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from assistant.app import create_app
    from evals.local_server import serve_in_thread
    from assistant.services import Services

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request would drown the report
    levels = levels_from(args.concurrency)
    questions = QUESTIONS
    if args.questions:
        questions = [q.strip() for q in args.questions.read_text().splitlines() if q.strip()]
    # Greedy decoding: both targets then generate the same answers for the same prompts.
    gen = settings.generation.model_copy(update={"max_tokens": args.max_tokens, "temperature": 0.0})
    settings = settings.model_copy(update={"generation": gen})
    services = Services.build(settings)
    try:
        if services.store.get_collection(args.collection) is None:
            print(f"bench serve: no collection named {args.collection!r}", file=sys.stderr)
            return 2
        args.out.mkdir(parents=True, exist_ok=True)
        with serve_in_thread(create_app(settings, services)) as server:
            env = environment(settings, services.backend)
            def say(lv: dict[str, Any]) -> None:
                if not args.json:
                    print(f"  concurrency {lv['concurrency']}: ratio {lv['ratio']}", flush=True)

            started = time.time()
            try:
                levels_out = asyncio.run(
                    measure(services, server, args.collection, questions, levels, args.requests, say, args.rounds)
                )
            except BenchRefused as exc:
                print(f"bench serve: {exc}", file=sys.stderr)
                return 2
        report = {
            "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)),
            "collection": args.collection,
            "questions": len(questions),
            "max_tokens": args.max_tokens,
            "rounds": args.rounds,
            "levels": levels_out,
            "environment": env,
            "json": str(args.out / "bench-serve.json"),
            "plot": str(args.out / "bench-serve.png"),
        }
        plot(levels_out, Path(report["plot"]), f"{env['backend']['name']} · {env['backend']['model']}")
        Path(report["json"]).write_text(json.dumps(report, indent=2))
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            print_table(report)
        return 0
    finally:
        asyncio.run(_close(services))


async def _close(services: Any) -> None:
    await services.aclose()
