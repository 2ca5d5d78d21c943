"""Shared fixtures: real stores under tmp_path, the real packaged embedder, settings for tests."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
# Litestar's test client sends `Host: testserver.local`: a name the server answers to in tests only.
os.environ.setdefault("ASSISTANT_SERVER_ALLOWED_HOSTS", '["testserver.local"]')

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or a skip with the reason when this checkout has none beside it."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not present (../shared sits beside the clone in CI, not in a user's clone)")
    return path


def pytest_collection_modifyitems(items):
    """Tests marked `long` first, browser tests last.

    Long ones first: scripts/test.sh runs the files on parallel workers, and a file of several minutes
    started at the end would run alone while the other workers sit idle. Browser tests last: Playwright's
    synchronous API leaves an event loop behind that breaks async tests run after it in the same process
    (scripts/test.sh also runs them in a process of their own).
    """
    items.sort(key=lambda item: (item.get_closest_marker("browser") is not None,
                                 item.get_closest_marker("long") is None))


@pytest.fixture(scope="session")
def embedder():
    """The real packaged all-MiniLM-L6-v2, loaded once per test session."""
    from indexes.embedding.embedder import Embedder

    emb = Embedder()
    emb.embed(["warm up"])
    return emb


@pytest.fixture
def store(tmp_path):
    from indexes.store import Store

    s = Store(tmp_path / "data")
    yield s
    s.close()


@pytest.fixture
def settings_factory(tmp_path):
    """Settings for a test: a fresh data dir, the echo backend unless told otherwise."""
    from assistant.settings import Settings

    def make(**overrides):
        values = {"data_dir": tmp_path / "data", "backend": "echo"}
        values.update(overrides)
        return Settings(**values)

    return make


@pytest.fixture(scope="session")
def gguf_path():
    """The packaged Gemma-3-270M GGUF: the fast model, for tests that need a real model but not the default
    (the default Qwen instruct model is four times its size and slower to answer)."""
    from assistant.backends.packaged_models import FAST_PACKAGED, ensure_joined, packaged_model

    return ensure_joined(packaged_model(FAST_PACKAGED))


@pytest.fixture(scope="session")
def llama(tmp_path_factory, gguf_path):
    """The packaged Gemma-3-270M in-process, loaded once: small context, one request waiting at most."""
    from assistant.backends.factory import create_backend
    from assistant.settings import Settings

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
    """`python -m llama_cpp.server` with the packaged GGUF on a free 127.0.0.1 port; its /v1 URL (the
    model is served as `tests.support.llama_server.MODEL_ALIAS`)."""
    from tests.support.llama_server import LlamaServer

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


@pytest.fixture
def make_services(embedder):
    """Services over a real store at the settings' data dir and the backend they name, sharing the
    session's loaded embedder; `fill(store)` writes the documents first. Stores close at teardown."""
    from assistant.backends.factory import create_backend
    from assistant.services import Services
    from indexes.store import Store

    made = []

    def make(settings, fill=None):
        store = Store(settings.data_dir)
        if fill is not None:
            fill(store)
        made.append(Services.assemble(settings, store, embedder, create_backend(settings)))
        return made[-1]

    yield make
    for services in made:
        services.store.close()


@pytest.fixture
async def client(services):
    """Litestar's in-process test client over the app built around the test's `services` fixture."""
    from litestar.testing import AsyncTestClient

    from assistant.app import create_app

    async with AsyncTestClient(app=create_app(services.settings, services)) as c:
        yield c


@pytest.fixture(scope="session")
def flask_src(tmp_path_factory):
    """Flask 3.1.3's src/ tree (from the sdist the shared script unpacks), as a folder of its own; a skip
    with the reason where the script is absent or cannot fetch it."""
    import shutil
    import subprocess

    script = shared_path("corpora", "get-flask-source.sh")
    dest = tmp_path_factory.mktemp("flask-sdist")
    out = subprocess.run(["sh", str(script), str(dest)], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        pytest.skip(f"the Flask sdist could not be fetched: {out.stderr.strip()[-300:]}")
    tree = tmp_path_factory.mktemp("flask") / "flask"
    shutil.copytree(f"{out.stdout.strip()}/src", tree / "src")
    return tree


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL cluster on 127.0.0.1 for the session (tests/support/postgres.py), or a
    skip with the reason where PostgreSQL is not installed."""
    from tests.support.postgres import PostgresCluster, available

    reason = available()
    if reason:
        pytest.skip(reason)
    cluster = PostgresCluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(postgres, request):
    """The URL of a new, empty database of the session's cluster for one test."""
    import re

    name = "t_" + re.sub(r"\W+", "_", request.node.name.lower())[:50]
    return postgres.create_database(name)
