"""The ingestion worker `assistant serve` runs beside itself when `ingest.run_worker` is on.

It is a separate process (`assistant worker`), so ingestion never competes with request handling
for the server's interpreter, and a crash of either leaves the other running. The worker exits by
itself when the server process is gone, even after a SIGKILL of the server.
"""

from __future__ import annotations

import subprocess
import sys

from assistant.settings import Settings


def start_worker(settings: Settings) -> subprocess.Popen | None:
    """Start `assistant worker` on the same data directory and config, or None when turned off."""
    if not settings.ingest.run_worker:
        return None
    cmd = [sys.executable, "-m", "assistant.cli", "worker", "--exit-with-parent", "--data-dir", str(settings.data_dir)]
    if settings.config:
        cmd += ["--config", str(settings.config)]
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL)


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
