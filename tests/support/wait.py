"""Waiting on something a test can see (a file, a process, a server's answer, a job's status), with a
deadline: a test goes on as soon as it happens, and when it never does, it fails saying what did not
happen and the last value it saw, rather than sleeping a fixed time and hoping."""

from __future__ import annotations

import asyncio
import inspect
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator

Ignored = tuple[type[BaseException], ...]


class _Watch:
    """What a wait has seen so far, and its deadline."""

    def __init__(self, timeout: float, what: str, accept: Callable[[Any], Any], ignoring: Ignored) -> None:
        self.timeout, self.what, self.accept, self.ignoring = timeout, what, accept, ignoring
        self.deadline = time.monotonic() + timeout
        self.last: Any = None
        self.raised = False
        self.tries = 0

    @contextmanager
    def attempt(self) -> Iterator[None]:
        """One look: an exception of an ignored type is "not yet", and is what was seen last."""
        self.tries += 1
        self.raised = False
        try:
            yield
        except self.ignoring as exc:
            self.last, self.raised = exc, True

    def happened(self) -> bool:
        if not self.raised and self.accept(self.last):
            return True
        if time.monotonic() >= self.deadline:
            raise AssertionError(f"{self.what}: did not happen within {self.timeout:g} s "
                                 f"(last seen after {self.tries} looks: {self.last!r})")
        return False


def wait_until(condition: Callable[[], Any], *, timeout: float, interval: float = 0.05, what: str = "the condition",
               accept: Callable[[Any], Any] = bool, ignoring: Ignored = ()) -> Any:
    """Call `condition` until what it returns is accepted (is true, or passes `accept`), and return
    that. An exception of a type in `ignoring` counts as "not yet"; any other one fails at once."""
    watch = _Watch(timeout, what, accept, ignoring)
    while True:
        with watch.attempt():
            watch.last = condition()
        if watch.happened():
            return watch.last
        time.sleep(interval)


async def async_wait_until(condition: Callable[[], Any], *, timeout: float, interval: float = 0.05,
                           what: str = "the condition", accept: Callable[[Any], Any] = bool,
                           ignoring: Ignored = ()) -> Any:
    """`wait_until` for a test on the event loop: `condition` may return an awaitable (a coroutine, or
    `asyncio.to_thread(...)` for a blocking check), which is awaited."""
    watch = _Watch(timeout, what, accept, ignoring)
    while True:
        with watch.attempt():
            value = condition()
            watch.last = await value if inspect.isawaitable(value) else value
        if watch.happened():
            return watch.last
        await asyncio.sleep(interval)
