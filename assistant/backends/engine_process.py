"""An inference engine's HTTP server as a child process: start, wait for health, log, restart, stop.

The engine (vLLM's OpenAI-compatible server, llama.cpp's `llama-server`) is bound to 127.0.0.1, in its
own process group so that its workers are stopped with it. A supervisor thread restarts it with a
doubling backoff when it dies; threads (not an event loop) keep it independent of the web server's loop,
which may start and stop around it. Subclasses say how the engine is started (`command`) and named.
"""

from __future__ import annotations

import collections
import ctypes
import logging
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any, Protocol

import httpx

HOST = "127.0.0.1"
HEALTH_POLL_S = 0.5
STABLE_AFTER_S = 120.0  # up this long after a restart: the next failure starts the backoff from scratch
LOG_FILE_MAX_BYTES = 50 * 2**20


class EngineSettings(Protocol):
    """What supervising an engine reads from its settings section."""

    env: dict[str, str]
    port: int
    nice: int
    start_timeout_s: float
    stop_timeout_s: float
    restart_backoff_s: float
    restart_backoff_max_s: float


def free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def build_env(cfg: EngineSettings, base: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment plus the configured one (NCCL_*, CUDA_VISIBLE_DEVICES, VLLM_* ...)."""
    env = dict(os.environ if base is None else base)
    env.update({k: str(v) for k, v in cfg.env.items()})
    env["PYTHONUNBUFFERED"] = "1"  # a Python engine's log lines arrive as they are written
    return env


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the server gets SIGTERM if this process dies without stopping it (no orphaned GPU memory)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def child_setup(nice: int):
    """What runs in the child before exec: die with the parent, then lower its CPU priority by `nice`
    (inherited by every process and thread the engine starts)."""

    def setup() -> None:  # pragma: no cover - runs in the child between fork and exec
        _die_with_parent()
        if nice:
            os.nice(nice)

    return setup


class EngineProcess:
    """One managed engine server. `start()` returns at once; `wait_ready()` blocks until it answers."""

    label = "engine"  # the engine's name in states, logs and errors
    log = logging.getLogger("assistant.engine")

    def __init__(self, cfg: EngineSettings, log_file: Path | None = None) -> None:
        """`log_file`: where the engine's output is also kept (appended; the last run's kept as .1 past 50 MB)."""
        self.cfg = cfg
        self.log_file = log_file
        self.port = cfg.port or free_port()
        self.state = "stopped"  # starting | ready | restarting | stopped | failed
        self.detail = ""
        self.starts = 0
        self.last_exit: int | None = None
        self.last_failure = ""
        self.recent: collections.deque[str] = collections.deque(maxlen=40)
        self._proc: subprocess.Popen[str] | None = None
        self._ready = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._supervisor: threading.Thread | None = None

    # --- what callers read ----------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def ready(self) -> bool:
        return self._ready.is_set() and self._alive()

    def _alive(self) -> bool:
        """The process is running (the supervisor may not have noticed a death yet)."""
        proc = self._proc
        return proc is not None and proc.poll() is None

    def command(self) -> list[str]:
        """The engine's command line for the current port."""
        raise NotImplementedError

    def status(self) -> dict[str, Any]:
        return {"state": self.state, "detail": self.detail, "pid": self.pid, "port": self.port,
                "starts": self.starts, "last_exit": self.last_exit}  # fmt: skip

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Spawn the server and its supervisor (restarts it when it dies) and return at once."""
        if self._supervisor is not None and self._supervisor.is_alive():
            return
        self._stopping.clear()
        self._supervisor = threading.Thread(target=self._supervise, name=f"{self.label}-supervisor", daemon=True)
        self._supervisor.start()

    def wait_ready(self, timeout: float | None = None, *, give_up_on_exit: bool = False) -> bool:
        """Block until the server answers /health (True), or `timeout` passes or it is stopped (False).

        `give_up_on_exit`: also return False as soon as the current attempt has failed (the supervisor
        goes on restarting it in the background).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while not (self._ready.wait(0.2) and self._alive()):
            if self._stopping.is_set() or (deadline is not None and time.monotonic() > deadline):
                return False
            if give_up_on_exit and self.state == "restarting":
                return False
            time.sleep(0.05)  # a dead process whose ready flag is not cleared yet
        return True

    def stop(self) -> None:
        """SIGTERM the server's process group, SIGKILL what is left after `stop_timeout_s`; no restart."""
        self._stopping.set()
        self._ready.clear()
        self._terminate()
        if self._supervisor is not None:
            self._supervisor.join(timeout=self.cfg.stop_timeout_s + 5)
        self.state, self.detail = "stopped", "stopped"

    # --- internals ------------------------------------------------------------------------------

    def _supervise(self) -> None:
        backoff = self.cfg.restart_backoff_s
        while not self._stopping.is_set():
            began = time.monotonic()
            became_ready = self._run_once()
            if self._stopping.is_set():
                break
            if became_ready and time.monotonic() - began > STABLE_AFTER_S:
                backoff = self.cfg.restart_backoff_s
            if not became_ready and not self.cfg.port:
                self.port = free_port()  # the port may have been taken meanwhile
            self.state = "restarting"
            self.last_failure = f"{self.label} exited ({self._exit_text()}). {self._tail()}".strip()
            self.detail = f"{self.last_failure} Restarting in {backoff:.1f} s."
            self.log.warning("%s", self.detail)
            if self._stopping.wait(backoff):
                break
            backoff = min(backoff * 2, self.cfg.restart_backoff_max_s)

    def _run_once(self) -> bool:
        """Spawn, wait for health, then wait for the exit. True when it became ready meanwhile."""
        cmd, env = self.command(), build_env(self.cfg)
        self.state, self.detail = "starting", f"starting {self.label} on {self.base_url} (attempt {self.starts + 1})"
        if self.last_failure:
            self.detail += f"; the last attempt failed: {self.last_failure}"
        self.starts += 1
        self.log.info("starting %s: %s", self.label, " ".join(cmd))
        with self._lock:
            if self._stopping.is_set():
                return False
            try:
                self._proc = subprocess.Popen(
                    cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    text=True, errors="replace", bufsize=1, start_new_session=True,
                    preexec_fn=child_setup(self.cfg.nice),
                )  # fmt: skip
            except OSError as exc:
                self.last_exit = None
                self.recent.append(f"cannot start {cmd[0]}: {exc}")
                return False
            proc = self._proc
        threading.Thread(target=self._forward_log, args=(proc,), name=f"{self.label}-log", daemon=True).start()
        became_ready = self._wait_health(proc)
        if became_ready:
            self.state, self.detail = "ready", f"{self.label} ready on {self.base_url} (pid {proc.pid})"
            self.log.info("%s", self.detail)
            self._ready.set()
        self.last_exit = proc.wait()
        self._ready.clear()
        self._kill_group(proc, signal.SIGKILL)  # engine workers left behind by a crashed front process
        self._wait_group_gone(proc)  # their GPU memory must be free before the next start
        return became_ready

    def health_url(self) -> str:
        """What answers 200 once the engine can serve (vLLM's and llama-server's /health)."""
        return f"{self.base_url}/health"

    def _wait_health(self, proc: subprocess.Popen[str]) -> bool:
        deadline = time.monotonic() + self.cfg.start_timeout_s
        with httpx.Client(timeout=2.0) as client:
            while proc.poll() is None and not self._stopping.is_set():
                try:
                    if client.get(self.health_url()).status_code == 200:
                        return True
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    self.recent.append(f"not healthy after {self.cfg.start_timeout_s:.0f} s: stopping it")
                    self._kill_group(proc, signal.SIGTERM)
                    break
                time.sleep(HEALTH_POLL_S)
        return False

    def _open_log_file(self, proc: subprocess.Popen[str]) -> IO[str] | None:
        if self.log_file is None:
            return None
        try:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            if self.log_file.exists() and self.log_file.stat().st_size > LOG_FILE_MAX_BYTES:
                os.replace(self.log_file, self.log_file.with_name(self.log_file.name + ".1"))
            sink = self.log_file.open("a", encoding="utf-8", errors="replace")
        except OSError as exc:
            self.log.warning("cannot write the %s log to %s: %s", self.label, self.log_file, exc)
            return None
        sink.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {self.label} pid {proc.pid}: {' '.join(self.command())}\n")
        return sink

    def _forward_log(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        sink = self._open_log_file(proc)
        try:
            for line in proc.stdout:
                line = line.rstrip()
                if sink is not None:
                    sink.write(line + "\n")
                    sink.flush()
                if not line:
                    continue
                self.recent.append(line)
                level = logging.WARNING if (" ERROR " in line or "Traceback" in line or " WARNING " in line) else logging.INFO
                self.log.log(level, "[%s %d] %s", self.label, proc.pid, line)
        finally:
            proc.stdout.close()
            if sink is not None:
                sink.close()

    def _terminate(self) -> None:
        with self._lock:
            proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        self._kill_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=self.cfg.stop_timeout_s)
        except subprocess.TimeoutExpired:
            self.log.warning("%s did not stop within %.0f s of SIGTERM: killing it", self.label, self.cfg.stop_timeout_s)
            self._kill_group(proc, signal.SIGKILL)
            proc.wait(timeout=10)
        self._kill_group(proc, signal.SIGKILL)
        self._wait_group_gone(proc)

    def _wait_group_gone(self, proc: subprocess.Popen[str], timeout: float = 10.0) -> None:
        """Return once no process of the server's group is left (its GPU memory is then free)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.05)
        self.log.warning("processes of the %s group %d are still present %.0f s after SIGKILL", self.label, proc.pid, timeout)

    @staticmethod
    def _kill_group(proc: subprocess.Popen[str], sig: signal.Signals) -> None:
        try:
            os.killpg(proc.pid, sig)  # its own session: the group id is its pid
        except (ProcessLookupError, PermissionError):
            pass

    def _exit_text(self) -> str:
        code = self.last_exit
        if code is None:
            return "did not start"
        if code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"exit code {code}"

    def _tail(self) -> str:
        lines = [ln for ln in self.recent if ln.strip()][-3:]
        return "Last output: " + " | ".join(lines) if lines else ""
