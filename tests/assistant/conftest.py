"""Fixtures for the backend tests: the real packaged GGUF in-process, and a real llama.cpp HTTP server."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from assistant.backends.base import create_backend
from assistant.settings import Settings

SERVER_MODEL = "gemma-3-270m"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def gguf_path():
    from assistant.backends.llamacpp import packaged_model_path

    return packaged_model_path()


@pytest.fixture(scope="session")
def llama(tmp_path_factory, gguf_path):
    """The packaged Gemma-3-270M in-process, loaded once: small context, one request waiting at most."""
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("llama-data"),
        backend="llamacpp",
        llamacpp={"model_path": gguf_path, "n_ctx": 512, "n_threads": 2, "max_queue": 1, "seed": 7},
    )
    backend = create_backend(settings)
    yield backend
    asyncio.run(backend.aclose())


@pytest.fixture(scope="module")
def llama_server(gguf_path, tmp_path_factory):
    """`python -m llama_cpp.server` with the packaged GGUF on a free 127.0.0.1 port; its /v1 URL."""
    pytest.importorskip("sse_starlette", reason="the llama-cpp-python[server] extra is not installed")
    port = free_port()
    log = (tmp_path_factory.mktemp("llama-server") / "server.log").open("wb")
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path), "--host", "127.0.0.1",
        "--port", str(port), "--n_ctx", "2048", "--n_threads", "2", "--model_alias", SERVER_MODEL,
    ]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}; see {log.name}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not become ready; see {log.name}")
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
