"""Shared fixtures: real stores under tmp_path, the real packaged embedder, settings for tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or a skip with the reason when this checkout has none beside it."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not present (../shared sits beside the clone in CI, not in a user's clone)")
    return path


@pytest.fixture(scope="session")
def embedder():
    """The real packaged all-MiniLM-L6-v2, loaded once per test session."""
    from indexes.embed import Embedder

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
