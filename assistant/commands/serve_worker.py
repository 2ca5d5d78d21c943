"""The ingestion worker `assistant serve` runs beside itself when `ingest.run_worker` is on.

It is a separate process (`assistant worker`), so ingestion never competes with request handling
for the server's interpreter, and a crash of either leaves the other running. The worker ends when the
server ends, however it ends: stopped (TERM, INT), the server stops it; killed, on Linux the kernel sends
the worker SIGTERM (a parent-death signal set before it runs anything), and elsewhere the worker sees its
parent gone within its poll interval (it is given the server's pid, not left to read it once loaded).
Either way the worker finishes the files in hand and hands its job back.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from typing import Callable

from assistant.settings import Settings

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_this_process() -> Callable[[], None] | None:
    """A function for the child between fork and exec: SIGTERM to it when this process dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here: the forked child only calls it
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # the server died before the signal was asked for
            os._exit(0)

    return preexec


def start_worker(settings: Settings) -> subprocess.Popen | None:
    """Start `assistant worker` on the same data directory and config, or None when turned off."""
    if not settings.ingest.run_worker:
        return None
    cmd = [sys.executable, "-m", "assistant.cli", "worker", "--exit-with-parent", str(os.getpid()),
           "--data-dir", str(settings.data_dir)]
    if settings.config:
        cmd += ["--config", str(settings.config)]
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, preexec_fn=die_with_this_process())


def stop_worker(proc: subprocess.Popen | None, timeout_s: float = 30.0) -> None:
    """SIGTERM (the worker commits the files in hand and hands its job back), then SIGKILL if need be."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
