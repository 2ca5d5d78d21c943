"""`assistant bench serve --conversations N`: what llama-server's prompt cache saves over conversations.

N conversations of five turns go to `/api/ask`, one turn after another, each turn with the earlier ones as
its history, twice on a freshly started engine: with the engine's prompt cache on (`cache_prompt`: a slot
keeps its last prompt's KV, and the next request evaluates only what follows the prefix they share) and
off. Per answer: the prompt's tokens (the server's count) and the tokens the engine evaluated (the change
of llama-server's `llamacpp:prompt_tokens_total` around that answer, nothing else running). The prompt puts
what repeats first (the instructions, the example, then the earlier turns) and a turn's new sources and
question last (answers/prompts.py), so a turn re-evaluates only its own sources, question and the last answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from assistant.settings import Settings
from evals.engine_watch import EngineWatch
from evals.loadgen import ask_server

TURNS = 5
# Each conversation asks five of these in a row, starting one further along than the conversation before.
FOLLOWING = [
    "What is this project about?",
    "How do I install it?",
    "And how is it configured after that?",
    "Which of those settings change performance?",
    "How do I run the tests?",
    "What does the command line offer?",
    "How are errors handled?",
]
ENGINES = ("llama-server", "openai")  # an engine reached over HTTP whose /metrics counts evaluated prompt tokens


def with_cache(settings: Settings, cache: bool) -> Settings:
    """The settings with the backend's requests asking for the prompt cache on or off."""
    section = "llama_server" if settings.backend == "llama-server" else "openai"
    cfg = getattr(settings, section)
    sampling = {**cfg.sampling, "cache_prompt": cache}
    return settings.model_copy(update={section: cfg.model_copy(update={"sampling": sampling})})


async def converse(server_url: str, engine_url: str | None, collection: str, conversations: int) -> list[dict[str, Any]]:
    """Every turn of every conversation, in order: its prompt tokens and the tokens the engine evaluated."""
    watch = EngineWatch(engine_url)
    turns: list[dict[str, Any]] = []
    async with httpx.AsyncClient(timeout=600) as client:
        for c in range(conversations):
            history: list[dict[str, str]] = []
            for t in range(TURNS):
                question = FOLLOWING[(c + t) % len(FOLLOWING)]
                before = await watch.counters(client)
                body = {"question": question, "collection": collection, "history": history}
                result = await ask_server(client, server_url, body)
                after = await watch.counters(client)
                if not result.ok:
                    raise RuntimeError(f"conversation {c + 1}, turn {t + 1}: {result.error}")
                key = "prompt_tokens_evaluated"
                evaluated = int(after[key] - before[key]) if before and after and key in before else None
                turns.append({"conversation": c + 1, "turn": t + 1, "prompt_tokens": result.prompt_tokens,
                              "evaluated": evaluated, "ttft_ms": round((result.ttft_s or 0) * 1000, 1)})  # fmt: skip
                history += [{"role": "user", "content": question}, {"role": "assistant", "content": result.text}]
    return turns


def summary(turns: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals, and per turn number the mean prompt and evaluated tokens."""
    by_turn = {}
    for t in range(1, TURNS + 1):
        rows = [r for r in turns if r["turn"] == t]
        by_turn[str(t)] = {"prompt_tokens_mean": round(statistics.mean(r["prompt_tokens"] or 0 for r in rows), 1),
                           "evaluated_mean": round(statistics.mean(r["evaluated"] or 0 for r in rows), 1),
                           "ttft_ms_p50": statistics.median(r["ttft_ms"] for r in rows)}  # fmt: skip
    prompt = sum(r["prompt_tokens"] or 0 for r in turns)
    evaluated = sum(r["evaluated"] or 0 for r in turns)
    return {"answers": len(turns), "prompt_tokens": prompt, "evaluated": evaluated,
            "evaluated_per_answer": round(evaluated / max(1, len(turns)), 1),
            "evaluated_share": round(evaluated / prompt, 3) if prompt else None, "by_turn": by_turn}  # fmt: skip


def measure_phase(settings: Settings, collection: str, conversations: int) -> list[dict[str, Any]]:
    """One phase on its own engine (started with the settings, stopped after), so no cache carries over."""
    from assistant.app import create_app
    from assistant.services import Services
    from evals.bench_serve import direct_url
    from evals.local_server import serve_in_thread

    services = Services.build(settings)
    try:
        if services.store.get_collection(collection) is None:
            raise LookupError(f"no collection named {collection!r}")
        with serve_in_thread(create_app(settings, services)) as server:
            return asyncio.run(converse(server.url, direct_url(services.backend), collection, conversations))
    finally:
        asyncio.run(services.aclose())


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Both phases, the report as JSON (and in args.out)."""
    if settings.backend not in ENGINES:
        print(f"bench serve --conversations: the backend is {settings.backend}; it needs llama-server (or an openai "
              "backend in front of one), whose /metrics counts the prompt tokens it evaluates", file=sys.stderr)  # fmt: skip
        return 2
    gen = settings.generation.model_copy(update={"max_tokens": args.max_tokens, "temperature": 0.0})
    settings = settings.model_copy(update={"generation": gen})
    started = time.time()
    phases: dict[str, Any] = {}
    try:
        for name, cache in (("cache_on", True), ("cache_off", False)):
            turns = measure_phase(with_cache(settings, cache), args.collection, args.conversations)
            if any(t["evaluated"] is None for t in turns):
                print("bench serve --conversations: the engine's /metrics gave no llamacpp:prompt_tokens_total "
                      "(llama-server without --metrics?)", file=sys.stderr)  # fmt: skip
                return 2
            phases[name] = {"summary": summary(turns), "turns": turns}
    except (LookupError, RuntimeError) as exc:
        print(f"bench serve --conversations: {exc}", file=sys.stderr)
        return 2
    on, off = phases["cache_on"]["summary"], phases["cache_off"]["summary"]
    report = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started)), "collection": args.collection,
        "backend": settings.backend, "conversations": args.conversations, "turns": TURNS, "max_tokens": args.max_tokens,
        "evaluated_per_answer": {"cache_on": on["evaluated_per_answer"], "cache_off": off["evaluated_per_answer"]},
        "saved_share": round(1 - on["evaluated"] / off["evaluated"], 3) if off["evaluated"] else None,
        **phases,
    }  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "bench-conversations.json").write_text(json.dumps(report, indent=2))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"prompt tokens evaluated per answer over {args.conversations} x {TURNS} turns: "
              f"cache on {on['evaluated_per_answer']}, off {off['evaluated_per_answer']} "
              f"(saved {report['saved_share'] or 0:.0%}; prompts averaged {off['prompt_tokens'] / max(1, off['answers']):.0f} tokens)")  # fmt: skip
        for t, row in on["by_turn"].items():
            print(f"  turn {t}: prompt {row['prompt_tokens_mean']:.0f}, evaluated {row['evaluated_mean']:.0f} "
                  f"(off: {off['by_turn'][t]['evaluated_mean']:.0f})")  # fmt: skip
    return 0
