"""Run the app on a free loopback port in a background thread (for `bench serve` and end-to-end checks).

A real uvicorn server, so clients go through real HTTP and SSE, and a client that disconnects is seen
as a disconnect; the calling thread stays free to be that client.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from litestar import Litestar


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class LocalServer:
    url: str  # http://127.0.0.1:PORT
    loop: asyncio.AbstractEventLoop  # the server's event loop (the app's async objects live on it)


@contextmanager
def serve_in_thread(
    app: Litestar, *, host: str = "127.0.0.1", port: int = 0, start_timeout_s: float = 600.0
) -> Iterator[LocalServer]:
    """Serve `app` until the block ends."""
    import uvicorn

    port = port or free_port(host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    loop = asyncio.new_event_loop()

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(server.serve())
        finally:
            loop.close()

    thread = threading.Thread(target=run, name="assistant-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the server stopped while starting (see its log)")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise TimeoutError(f"the server did not start within {start_timeout_s:.0f} s")
        time.sleep(0.05)
    try:
        yield LocalServer(f"http://{host}:{port}", loop)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
