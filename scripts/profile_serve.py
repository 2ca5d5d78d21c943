"""Where the server's time goes while `assistant bench serve` runs: a py-spy profile split into stages.

py-spy is a tool to install by hand (it is no dependency of the product):

    py-spy record --nonblocking --format raw -o serve.raw -- \
        python -m assistant.cli bench serve --collection docs --concurrency 16 --requests 160
    python scripts/profile_serve.py serve.raw

bench serve runs the server in a thread of its own process; the bench's client runs on the main thread.
Only the server's threads (the event loop's, the worker threads, the embedder's lanes) are counted, and
samples whose innermost frame is a wait (a selector, a condition, a queue) are left out. Each remaining
sample goes to the first stage below that one of its frames belongs to, from the innermost frame out; a
sample in no stage of the product is the HTTP server's and the framework's. Prints JSON: the share of
busy samples per stage.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

STAGES = [
    ("question embedding", ("indexes/embedding/",)),
    ("search: BM25, SQLite reads, FAISS", ("indexes/lexical/", "indexes/db.py", "indexes/store.py", "indexes/vectors.py", "faiss/")),
    ("search: fusion, diversity, hits", ("indexes/retrieval/",)),
    ("prompt", ("assistant/answers/prompts.py", "assistant/answers/rag.py", "assistant/answers/early_send.py")),
    ("answer check", ("assistant/answers/support.py", "assistant/answers/statements.py", "assistant/answers/text_units.py")),
    ("conversation recording", ("assistant/answers/conversation.py", "indexes/conversations.py")),
    ("metrics", ("assistant/telemetry", "litestar/plugins/prometheus", "prometheus_client/")),
    ("logging", ("logging/__init__.py", "assistant/security/redaction.py")),
    ("the answer's events and SSE", ("assistant/routes/ask.py", "assistant/answers/events.py", "assistant/answers/ask.py",
                                     "litestar/response/sse.py")),
    ("backend relay (engine client)", ("assistant/backends/", "httpx/", "httpcore/")),
    ("security middleware", ("assistant/security/",)),
]
WAITS = ("EpollSelector.select (selectors.py", "Condition.wait (threading.py", "_worker (concurrent/futures/thread.py",
         "Queue.get (queue.py", "Event.wait (threading.py")
FRAME = re.compile(r"(?P<fn>.*) \((?P<path>.*?):\d+\)")


def stage_of(frames: list[tuple[str, str]]) -> str:
    for _fn, path in reversed(frames):
        for name, keys in STAGES:
            if any(key in path for key in keys):
                return name
    return "HTTP server and framework (uvicorn, litestar, asyncio, sockets)"


def attribute(raw: Path) -> dict:
    shares: Counter[str] = Counter()
    waits = busy = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack.startswith("Thread._bootstrap"):  # the bench's own client, on the main thread
            continue
        names = stack.split(";")
        frames = [(m["fn"], m["path"]) for m in map(FRAME.match, names) if m]
        if not frames or names[-1].startswith(WAITS):
            waits += int(count)
            continue
        busy += int(count)
        shares[stage_of(frames)] += int(count)
    return {"busy_samples": busy, "wait_samples_left_out": waits,
            "share": {name: round(n / busy, 3) for name, n in shares.most_common()} if busy else {}}


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_file():
        sys.exit("usage: profile_serve.py PROFILE.raw   (py-spy record --format raw)")
    print(json.dumps(attribute(Path(sys.argv[1])), indent=1))
