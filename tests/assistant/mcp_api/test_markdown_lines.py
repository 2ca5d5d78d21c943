"""A Markdown document ingested for real is read by its lines: `search` and `ask` name the lines of its
chunks, the prompt cites them, and `read_source` with a line range returns the chunk on those lines,
through the real `mcp` client over streamable HTTP against the real server (echo backend)."""

from __future__ import annotations

import re

import pytest

from assistant.answers.prompts import source_block
from assistant.app import create_app
from assistant.backends.factory import create_backend
from assistant.services import Services
from assistant.settings import Settings
from evals.local_server import serve_in_thread
from indexes.store import Store
from ingest.pipeline import ingest_paths
from ingest.prepare import IngestOptions
from tests.assistant.mcp_api.test_mcp import http_session, payload

pytestmark = pytest.mark.slow  # the real embedder

GUIDE = """---
title: Operations guide
---
# Operations guide

The operations team keeps the service running. This guide covers the daily checks, the release
process and what to do when a release goes wrong. Every operator reads it in the first week.

## Releases

Releases go out on Tuesdays after the morning checks. The release script builds the image, runs
the smoke tests and tags the image with the date. Nobody releases on a Friday.

## Rollback

To roll back a bad release, redeploy the previous image tag with the release script and its
`--tag` option. The scheduler keeps the last five image tags for this reason. Every rollback is
logged with the operator's name, and the team reviews it at the next weekly meeting.
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("ops")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text(GUIDE)
    settings = Settings(data_dir=tmp_path_factory.mktemp("ops-data"), backend="echo")
    store = Store(settings.data_dir)
    report = ingest_paths(store, embedder, [root], "ops", options=IngestOptions(chunk_tokens=64, overlap_tokens=0))
    assert report.files_failed == 0, report.failures
    services = Services.assemble(settings, store, embedder, create_backend(settings))
    with serve_in_thread(create_app(settings, services)) as server:
        yield server.url, services
    store.close()


def words_on(lines: list[str], a: int, b: int) -> set[str]:
    return set(re.findall(r"\w+", " ".join(lines[a - 1 : b]).lower()))


async def test_markdown_is_searched_asked_and_read_by_its_lines(served):
    url, services = served
    lines = GUIDE.split("\n")
    rollback_line = next(i for i, line in enumerate(lines, 1) if line.startswith("To roll back"))
    async with http_session(f"{url}/mcp") as session:
        found = payload(await session.call_tool("search", {"query": "how do I roll back a bad release?", "k": 3}))
        top = found["hits"][0]
        a, b = top["line_start"], top["line_end"]
        assert top["path"] == "docs/guide.md" and a <= rollback_line <= b
        assert top["location"] == f"docs/guide.md:L{a}-L{b}"

        answered = payload(await session.call_tool("ask", {"question": "How do I roll back a bad release?"}))
        first = answered["sources"][0]
        assert first["cited"] and first["location"] == f"docs/guide.md:L{a}-L{b}"

        read = payload(await session.call_tool("read_source", {
            "collection": "ops", "path": "docs/guide.md", "start_line": rollback_line, "end_line": rollback_line,
            "neighbours": 1,
        }))
        [target] = [c for c in read["chunks"] if c["target"]]
        assert "To roll back a bad release" in target["text"]
        assert target["line_start"] <= rollback_line <= target["line_end"]
        assert set(re.findall(r"\w+", target["text"].lower())) <= words_on(lines, target["line_start"], target["line_end"])
        assert read["line_start"] < rollback_line and len(read["chunks"]) >= 2  # with the chunk before it
        assert target["location"] == f"docs/guide.md:L{target['line_start']}-L{target['line_end']}"

    hit = services.retriever.search("how do I roll back a bad release?", "ops", 1)[0]
    assert source_block(1, hit).splitlines()[0] == f"[1] Operations guide — docs/guide.md:{a}-{b}"
