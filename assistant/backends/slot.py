"""One request at a time, the others waiting in a bounded first-come-first-served queue.

For a model that is not thread-safe (in-process llama.cpp). The slot is released by the thread that
ran the model, when it has really stopped, so a request abandoned mid-answer never overlaps the next
one. Waiters may sit on any event loop: they are woken with `call_soon_threadsafe`.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections import deque

from assistant.backends.base import BackendBusy


class Slot:
    def __init__(self, max_waiting: int, *, typical_s: float = 5.0) -> None:
        self.max_waiting = max_waiting
        self.typical_s = typical_s  # running mean of request durations, for Retry-After
        self._lock = threading.RLock()  # re-entrant: a Ticket's __del__ may run while it is held
        self._busy = False
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = deque()
        self._admitted = 0

    @property
    def admitted(self) -> int:
        """Requests holding a ticket: the running one and those waiting."""
        return self._admitted

    def admit(self) -> "Ticket":
        """A place in the queue, or BackendBusy when `max_waiting` requests already wait."""
        with self._lock:
            if self._admitted >= 1 + self.max_waiting:
                retry = min(60, max(1, math.ceil(self.typical_s * self._admitted)))
                raise BackendBusy(f"the model is busy: {self._admitted - 1} requests are already waiting", retry_after=retry)
            self._admitted += 1
            return Ticket(self)

    def record_duration(self, seconds: float) -> None:
        self.typical_s = 0.8 * self.typical_s + 0.2 * seconds

    async def _acquire(self) -> None:
        with self._lock:
            if not self._busy and not self._waiters:
                self._busy = True
                return
            loop = asyncio.get_running_loop()
            fut: asyncio.Future = loop.create_future()
            entry = (loop, fut)
            self._waiters.append(entry)
        try:
            await fut
        except BaseException:
            with self._lock:
                if entry in self._waiters:  # still queued: just leave the queue
                    self._waiters.remove(entry)
                elif fut.done() and not fut.cancelled():  # the slot was handed over: pass it on
                    self._release()
                # else the hand-over is in flight; _grant sees the cancelled future and passes it on
            raise

    def _release(self) -> None:
        """Hand the slot to the next live waiter, or mark it free."""
        with self._lock:
            while self._waiters:
                loop, fut = self._waiters.popleft()
                try:
                    loop.call_soon_threadsafe(self._grant, fut)
                    return
                except RuntimeError:  # that waiter's loop is closed
                    continue
            self._busy = False

    def _grant(self, fut: asyncio.Future) -> None:
        if fut.cancelled():
            self._release()
        else:
            fut.set_result(None)

    def _leave(self) -> None:
        with self._lock:
            self._admitted -= 1


class Ticket:
    """One request's place: `await acquire()` to run, then `release()` once (from any thread)."""

    def __init__(self, slot: Slot) -> None:
        self._slot = slot
        self.state = "waiting"  # -> running -> done, or waiting -> done when abandoned

    async def acquire(self) -> None:
        if self.state != "waiting":
            raise RuntimeError(f"ticket is {self.state}")
        try:
            await self._slot._acquire()
        except BaseException:
            self.release()
            raise
        self.state = "running"

    def release(self) -> None:
        """Give the slot (when running) and the place in the queue back; later calls do nothing."""
        with self._slot._lock:
            if self.state == "done":
                return
            running, self.state = self.state == "running", "done"
            self._slot._leave()
            if running:
                self._slot._release()

    def __del__(self) -> None:  # a request dropped without being run or closed must not keep its place
        if getattr(self, "state", "done") == "waiting":
            self.release()
