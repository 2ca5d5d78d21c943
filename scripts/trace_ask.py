"""One question's walk through the project's own code, from the /api/ask route handler until its stream
ends: the files visited in order of first visit, how many, and how often the walk returns to a file it had
already left. A measure of how scattered the answer path is, not of its speed.

How it counts: the app runs in-process (Litestar's test client) with the echo backend over a tiny temporary
collection, and a saved conversation already holds one turn. A profile hook on every thread (the event
loop's and the worker threads') sees each Python `call` event (a function entered, a coroutine or generator
resumed) whose code lies in assistant/, indexes/ or ingest/; recording starts when the route handler is
entered and stops when the client has read the whole stream. Left out are the chains whose outermost project
frame is one of the gates every request passes whatever its route (the ASGI middleware and response hooks of
security/, the log's redaction) or a finaliser (`__del__`, whenever the collector runs): they do not carry the
question's data. A "return" is a call event whose file differs from the previous recorded event's file and
had been visited before. `returns_by_calls` counts the same over the frames entered for the first time only,
so that a stream's coroutines resumed once per token do not count again: the walk of the code, not of the
tokens.

`--by-pair` adds where the returns come from: for each transition between two files that lands in a file
already left, how often it happens (over the frames entered for the first time), and per file the functions
entered, with how often; the walk to shorten is read there.

usage: PYTHONPATH=. .venv/bin/python scripts/trace_ask.py [--by-pair]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OWN = tuple(str(REPO / name) + "/" for name in ("assistant", "indexes", "ingest"))
PAGES = {
    "travel/booking.md": ("Booking travel", "Book flights through the travel desk at least 14 days before departure."),
    "leave/vacation.md": ("Vacation", "Annual leave accrues at four hours per pay period."),
    "tools/laptops.md": ("Laptops", "New staff receive a laptop on their first day from the IT help desk."),
}
GATES = tuple(str(REPO / "assistant/security" / name) for name in
              ("browser_defences.py", "json_bounds.py", "limits.py", "redaction.py"))


def outermost_own(frame):
    """The outermost frame of the project's own code in the unbroken run of them that calls this one."""
    root = frame
    while frame is not None and frame.f_code.co_filename.startswith(OWN):
        root, frame = frame, frame.f_back
    return root


class Walk:
    """Call events of the project's files while `active`, from every thread the hook is set on."""

    def __init__(self, start_code) -> None:
        self.start_code = start_code
        self.active = False
        self.armed = False
        self.files: list[str] = []  # one per recorded call event
        self.fresh: list[bool] = []  # per event: a frame entered for the first time (not a coroutine resumed)
        self.functions: list[str] = []  # per event: the function's name
        self.frames: set = set()  # the frames seen so far, held so that none is freed and its id reused
        self.threads: set[str] = set()
        self.lock = threading.Lock()

    def hook(self, frame, event, arg) -> None:
        if event != "call":
            return
        if self.armed and frame.f_code is self.start_code:
            self.active, self.armed = True, False
        if not self.active:
            return
        path = frame.f_code.co_filename
        if path.startswith(OWN):
            root = outermost_own(frame).f_code
            if root.co_filename in GATES or root.co_name == "__del__":
                return
            with self.lock:
                self.files.append(str(Path(path).relative_to(REPO)))
                self.fresh.append(frame not in self.frames)
                self.functions.append(frame.f_code.co_name)
                self.frames.add(frame)
                self.threads.add(threading.current_thread().name)

    def summary(self) -> dict:
        order = list(dict.fromkeys(self.files))
        entered = [path for path, fresh in zip(self.files, self.fresh) if fresh]
        return {"files_in_order_of_first_visit": order, "files": len(order), "returns": returns_in(self.files),
                "returns_by_calls": returns_in(entered), "call_events": len(self.files), "calls": len(entered),
                "threads": len(self.threads)}


    def by_pair(self) -> dict:
        """Over the frames entered for the first time: the returns by transition, the functions by file."""
        entered = [(path, name) for path, name, fresh in zip(self.files, self.functions, self.fresh) if fresh]
        pairs: Counter[str] = Counter()
        seen, previous = set(), None
        for path, _ in entered:
            if path != previous and path in seen:
                pairs[f"{previous} -> {path}"] += 1
            seen.add(path)
            previous = path
        functions: dict[str, Counter[str]] = {}
        for path, name in entered:
            functions.setdefault(path, Counter())[name] += 1
        return {"returns_by_pair": dict(pairs.most_common()),
                "functions_by_file": {path: dict(names.most_common()) for path, names in functions.items()}}


def returns_in(walk: list[str]) -> int:
    """How often the walk enters a file it had already left."""
    returns, seen, previous = 0, set(), None
    for path in walk:
        returns += path != previous and path in seen
        seen.add(path)
        previous = path
    return returns


async def walk_one_question(by_pair: bool = False) -> dict:
    from litestar.testing import AsyncTestClient

    from assistant.app import create_app
    from assistant.routes.ask import ask
    from assistant.services import Services
    from assistant.settings import Settings
    from tests.support.stores import write_pages

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", backend="echo", retrieval={"k": 3},
                            server={"allowed_hosts": ["testserver.local"]})  # the test client's Host
        services = Services.build(settings)
        write_pages(services.store, services.embedder, "handbook", PAGES, headings=True)
        walk = Walk(ask.fn.__code__)
        threading.setprofile(walk.hook)
        sys.setprofile(walk.hook)
        try:
            async with AsyncTestClient(app=create_app(settings, services)) as client:
                conv = (await client.post("/api/conversations", json={"collections": ["handbook"]})).json()
                first = await client.post("/api/ask", json={"question": "How early must flights be booked?",
                                                            "conversation_id": conv["id"]})
                assert first.status_code == 200, first.text
                walk.armed = True
                second = await client.post("/api/ask", json={"question": "And the laptop?",
                                                             "conversation_id": conv["id"]})
                walk.active = False
                assert second.status_code == 200 and "event: done" in second.text, second.text
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
            services.store.close()
    return walk.summary() | (walk.by_pair() if by_pair else {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--by-pair", action="store_true", help="the returns by transition, the functions by file")
    print(json.dumps(asyncio.run(walk_one_question(parser.parse_args().by_pair)), indent=1))


if __name__ == "__main__":
    main()
