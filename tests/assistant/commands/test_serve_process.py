"""`assistant serve` as a user runs it (a process, the echo backend, its worker beside it): the worker ends
however the server ends (TERM, INT, KILL); a connection that sends its headers a byte at a time is closed;
`assistant status` asks a server that needs a key with `--key` or ASSISTANT_API_KEY."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from assistant.backends.engine_process import free_port
from tests.support.wait import wait_until


def children(pid: int) -> list[int]:
    """The live child processes of `pid` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def ended(pid: int) -> bool:
    """Gone, or a zombie waiting for a parent that does not reap (a container's init may not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def start_server(data: Path, **env: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "assistant.cli", "serve", "--backend", "echo", "--port", str(port), "--data-dir", str(data)],
        env={**os.environ, "ASSISTANT_INGEST_WORKER_POLL_S": "0.2", **env},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"the server ended: {proc.stderr.read().decode()[-2000:]}")
        return httpx.get(f"{url}/health", timeout=2).status_code in (200, 503)

    wait_until(up, timeout=120, what="the server answers /health", ignoring=(httpx.HTTPError,))
    return proc, url


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(30)
    proc.stderr.close()


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["TERM", "INT", "KILL"])
def test_the_worker_ends_however_the_server_ends(tmp_path, how):
    server, _ = start_server(tmp_path / "data")
    try:
        workers = wait_until(lambda: children(server.pid), timeout=60, what="the server starts its worker")
        assert len(workers) == 1
        worker = workers[0]
        assert b"worker" in Path(f"/proc/{worker}/cmdline").read_bytes()
        server.send_signal(how)
        server.wait(60)
        wait_until(lambda: ended(worker), timeout=30, what=f"the worker ends after the server's SIG{how.name[3:]}")
    finally:
        stop(server)


def test_slow_headers_are_cut_and_status_asks_with_a_key(tmp_path):
    from indexes.apikeys import create_key
    from indexes.db import make_engine

    data = tmp_path / "data"
    data.mkdir()
    engine = make_engine(data / "store.db")
    _, key = create_key(engine, "ops", ["read"], ["*"])
    engine.dispose()
    server, url = start_server(data, ASSISTANT_SERVER_HEADER_TIMEOUT_S="1")
    try:
        # A client that sends a request's headers a byte at a time is disconnected at the deadline.
        sock = socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=10)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        assert sock.recv(1024) == b"", "the server closed the connection without an answer"
        assert time.monotonic() - started < 8
        sock.close()
        assert httpx.get(f"{url}/health", timeout=5).status_code in (200, 503)  # a whole request is answered

        def status(*args: str, **env: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "assistant.cli", "status", "--url", url, *args,
                                   "--data-dir", str(tmp_path / "elsewhere")], capture_output=True, text=True,
                                  env={**os.environ, "COLUMNS": "300", **env}, timeout=120)

        without = status()
        assert without.returncode == 0, without.stderr
        assert "nothing answers" not in without.stdout and "refused (401)" in without.stdout
        assert "--key" in without.stdout
        with_flag = json.loads(status("--key", key, "--json").stdout)
        assert with_flag["server_reachable"] and with_flag["backend"]["name"] == "echo"
        with_env = json.loads(status("--json", ASSISTANT_API_KEY=key).stdout)
        assert with_env["backend"]["name"] == "echo" and with_env["server_refused"] is None
        wrong = json.loads(status("--json", "--key", "rag_not-a-key").stdout)
        assert wrong["server_refused"] == 401 and wrong["backend"] is None
    finally:
        stop(server)
