"""Fixtures for the backend tests: the real packaged GGUF in-process, and a real llama.cpp HTTP server."""

from __future__ import annotations

import asyncio

import pytest

from assistant.backends.base import create_backend
from assistant.local_server import free_port  # noqa: F401  (re-exported for the tests)
from assistant.settings import Settings
from tests.support.llama_server import MODEL_ALIAS, LlamaServer

SERVER_MODEL = MODEL_ALIAS


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
    server = LlamaServer(gguf_path, tmp_path_factory.mktemp("llama-server"), threads=2)
    try:
        server.start()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    try:
        yield server.url
    finally:
        server.stop()
