"""What the preview of a table's source gets from the server: the table as a Markdown table (header row,
`|---|`, its rows), which the page renders as Markdown, not a run of cell words."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.support import table_fixtures as fx

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tables"


def row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


@pytest.fixture
def services(settings_factory, make_services, tmp_path, embedder):
    from ingest.pipeline import ingest_paths

    root = tmp_path / "tables"
    root.mkdir()
    for name in ("network.md", "shipping.docx"):
        shutil.copy(FIXTURES / name, root / name)
    return make_services(settings_factory(), lambda store: ingest_paths(store, embedder, [str(root)], "tables"))


def chunk_holding(services, path: str, words: str) -> int:
    rows = services.store.engine.connect().execute(text(
        "SELECT chunk.id, chunk.text FROM chunk JOIN document ON document.id = chunk.document_id "
        "WHERE document.path = :p ORDER BY chunk.ordinal"), {"p": path}).all()
    return next(cid for cid, body in rows if words in body)


async def test_a_docx_table_previews_as_a_markdown_table(client, services):
    cid = chunk_holding(services, "shipping.docx", "North America")
    body = (await client.get(f"/api/chunks/{cid}/context")).json()
    table = "\n".join([row(fx.SHIPPING[0]), "|---|---|---|---|"] + [row(r) for r in fx.SHIPPING[1:]])
    target = next(c for c in body["chunks"] if c["target"])
    assert table in target["text"]
    assert table in body["passage"]["text"]


async def test_a_markdown_table_s_pieces_each_preview_under_the_header(client, services):
    cid = chunk_holding(services, "network.md", row(fx.EXTENSIONS[-1]))
    body = (await client.get(f"/api/chunks/{cid}/context", params={"neighbours": 0})).json()
    target = body["chunks"][0]
    assert target["text"].startswith(row(fx.EXTENSIONS[0]) + "\n|---|---|---|---|\n")
    assert target["heading_path"] == "Office networks › Extension directory"
    passage = body["passage"]
    assert passage["format"] == "markdown"  # the file's own lines, from the header line to the piece's last row
    assert passage["text"].startswith(row(fx.EXTENSIONS[0]) + "\n|---|---|---|---|\n")
    assert passage["text"].endswith(row(fx.EXTENSIONS[-1]))
