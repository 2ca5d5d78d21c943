"""What a source card opens: the passage among its neighbours, the original file (safely), and
creating an empty collection to upload into."""

from __future__ import annotations

import base64
import hashlib

import os

import pytest
from sqlalchemy import text

from assistant.routes.reading import content_type

SECTIONS = "\n\n".join(f"## Part {i}\n\n" + f"Paragraph {i} talks about topic number {i}. " * 40 for i in range(6))


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "guide.md").write_text("# Guide\n\n" + SECTIONS + "\n")
    (root / "page.html").write_text("<html><body><h1>Title</h1><script>alert(1)</script><p>Body text here.</p></body></html>")
    (root / "tool.py").write_text("\n".join(f"def f{i}():\n    return {i}\n" for i in range(3)))
    (tmp_path / "secret.txt").write_text("not for the browser")
    return root


@pytest.fixture
def services(settings_factory, make_services, folder, embedder):
    from ingest.pipeline import ingest_paths

    return make_services(settings_factory(), lambda store: ingest_paths(store, embedder, [str(folder)], "project"))


async def docs_by_path(client) -> dict:
    listed = (await client.get("/api/collections/project/documents")).json()["documents"]
    return {d["path"]: d for d in listed}


async def test_a_chunk_comes_with_its_neighbours_in_reading_order(client, services):
    docs = await docs_by_path(client)
    guide = docs["guide.md"]
    assert guide["chunks"] >= 4
    ids = [r[0] for r in services.store.engine.connect().execute(
        text("SELECT id FROM chunk WHERE document_id = :d ORDER BY ordinal"), {"d": guide["id"]})]
    middle = ids[2]
    r = await client.get(f"/api/chunks/{middle}/context", params={"neighbours": 1})
    assert r.status_code == 200
    body = r.json()
    assert [c["chunk_id"] for c in body["chunks"]] == ids[1:4]
    assert [c["target"] for c in body["chunks"]] == [False, True, False]
    assert body["target"] == middle
    target = body["chunks"][1]
    assert body["document"]["path"] == "guide.md" and body["document"]["file_url"] == (
        f"/api/documents/{guide['id']}/file?lines={target['line_start']}-{target['line_end']}#L{target['line_start']}")
    assert body["document"]["numbered_lines"] is False  # Markdown chunks are rewritten text, not the file's lines
    assert all(c["heading_path"] for c in body["chunks"])
    first = (await client.get(f"/api/chunks/{ids[0]}/context")).json()
    assert [c["chunk_id"] for c in first["chunks"]] == ids[:3]  # two after, none before the first

    assert (await client.get("/api/chunks/999999/context")).status_code == 404
    assert (await client.get(f"/api/chunks/{middle}/context", params={"neighbours": 99})).status_code == 400


async def test_code_chunks_carry_the_file_line_numbers(client, services):
    tool = (await docs_by_path(client))["tool.py"]
    row = services.store.engine.connect().execute(
        text("SELECT id FROM chunk WHERE document_id = :d ORDER BY ordinal LIMIT 1"), {"d": tool["id"]}).first()
    body = (await client.get(f"/api/chunks/{row[0]}/context")).json()
    target = next(c for c in body["chunks"] if c["target"])
    a, b = target["line_start"], target["line_end"]
    assert body["document"]["numbered_lines"] is True
    assert body["document"]["file_url"] == f"/api/documents/{tool['id']}/file?lines={a}-{b}#L{a}"
    lines = (await client.get(f"/api/documents/{tool['id']}/file")).text.splitlines()
    for c in body["chunks"]:
        assert c["text"].strip() == "\n".join(lines[c["line_start"] - 1:c["line_end"]]).strip()
    passage = body["passage"]
    assert passage["format"] == "lines" and passage["target_lines"] == [a, b]
    first = passage["line_start"]
    assert passage["text"].split("\n") == lines[first - 1:first - 1 + len(passage["text"].split("\n"))]


async def test_a_passage_is_the_markdown_files_own_lines_with_every_chunk_of_the_source_a_target(
        client, services, folder):
    """Overlapping chunks shown once: the file's own lines while the file is the one ingested, else the
    chunks' texts merged; `chunks` makes the source's other chunks targets, and the original opens at
    all of their lines."""
    guide = (await docs_by_path(client))["guide.md"]
    ids = [r[0] for r in services.store.engine.connect().execute(
        text("SELECT id FROM chunk WHERE document_id = :d ORDER BY ordinal"), {"d": guide["id"]})]
    r = await client.get(f"/api/chunks/{ids[2]}/context", params={"neighbours": 1, "chunks": f"{ids[3]},{ids[4]}"})
    body = r.json()
    assert [c["chunk_id"] for c in body["chunks"]] == ids[1:6]
    assert [c["target"] for c in body["chunks"]] == [False, True, True, True, False]
    cited = body["chunks"][1:4]
    a, b = cited[0]["line_start"], max(c["line_end"] for c in cited)
    assert body["document"]["file_url"].endswith(f"?lines={a}-{b}#L{a}")
    passage = body["passage"]
    assert passage["format"] == "markdown" and passage["target_lines"] == [a, b]
    source = (folder / "guide.md").read_text().split("\n")
    first = passage["line_start"]
    assert passage["text"].split("\n") == source[first - 1:first - 1 + len(passage["text"].split("\n"))]
    assert passage["text"].count("## Part 2") <= 1

    other = (await docs_by_path(client))["tool.py"]
    strays = services.store.engine.connect().execute(
        text("SELECT id FROM chunk WHERE document_id = :d"), {"d": other["id"]}).scalars().all()
    alone = (await client.get(f"/api/chunks/{ids[2]}/context", params={"neighbours": 0, "chunks": strays[0]})).json()
    assert [c["chunk_id"] for c in alone["chunks"]] == [ids[2]]  # another document's chunk is no target here
    assert (await client.get(f"/api/chunks/{ids[2]}/context", params={"chunks": "1,x"})).status_code == 400

    (folder / "guide.md").write_text((folder / "guide.md").read_text() + "\nAn edit after ingestion.\n")
    changed = (await client.get(f"/api/chunks/{ids[2]}/context", params={"chunks": str(ids[3])})).json()["passage"]
    assert changed["format"] == "text"  # the file's lines no longer say what the chunks were made from
    targets = [p for p in changed["parts"] if p["target"]]
    assert [p["chunk_id"] for p in targets] == ids[2:4]
    merged = changed["text"]
    for c in body["chunks"]:
        assert c["text"].strip()[-40:] in merged


async def test_the_original_opens_at_a_markdown_chunks_lines(client, services, folder):
    """Markdown chunks carry the lines of the file their words lie on; the passage's file_url opens the
    original as numbered lines anchored at the chunk's first line, its lines marked, nothing rendered."""
    import re
    from html import unescape

    guide = (await docs_by_path(client))["guide.md"]
    ids = [r[0] for r in services.store.engine.connect().execute(
        text("SELECT id FROM chunk WHERE document_id = :d ORDER BY ordinal"), {"d": guide["id"]})]
    source = (folder / "guide.md").read_text().split("\n")
    for chunk_id in ids:
        body = (await client.get(f"/api/chunks/{chunk_id}/context", params={"neighbours": 0})).json()
        [chunk] = body["chunks"]
        a, b = chunk["line_start"], chunk["line_end"]
        assert 1 <= a <= b <= len(source)
        on_lines = set(re.findall(r"\w+", " ".join(source[a - 1 : b])))
        assert set(re.findall(r"\w+", chunk["text"])) <= on_lines, (chunk["text"], a, b)
        r = await client.get(body["document"]["file_url"])
        assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
        assert "sandbox" in r.headers["content-security-policy"]
        style = re.search(r"<style>(.*?)</style>", r.text).group(1)  # the page's own, allowed by its hash only
        digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
        assert r.headers["content-security-policy"].endswith(f"style-src 'sha256-{digest}'") and "white-space:pre-wrap" in style
        assert f'<span id="L{a}">' in r.text
        marked = re.findall(r'<mark><span id="L(\d+)">', r.text)
        assert [int(n) for n in marked] == list(range(a, b + 1))
        shown = [unescape(re.sub(r"<[^>]+>", "", row))[8:] for row in r.text.split("<pre>")[1].split("\n")]
        assert shown[a - 1 : b] == source[a - 1 : b]

    page = (await docs_by_path(client))["page.html"]
    view = await client.get(f"/api/documents/{page['id']}/file", params={"lines": "1"})
    assert "<script>" not in view.text and "&lt;script&gt;" in view.text  # the file's HTML is shown, not run
    for bad in ("5-2", "0-3", "a-b", "3-", "1-2-3"):
        assert (await client.get(f"/api/documents/{guide['id']}/file", params={"lines": bad})).status_code == 400


async def test_original_files_are_served_as_safe_types(client, services, folder):
    docs = await docs_by_path(client)
    r = await client.get(f"/api/documents/{docs['guide.md']['id']}/file")
    assert r.status_code == 200 and r.text == (folder / "guide.md").read_text()
    assert r.headers["content-type"] == "text/plain; charset=utf-8"  # one charset
    assert r.headers["content-disposition"].startswith("inline")
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in r.headers["content-security-policy"]
    page = await client.get(f"/api/documents/{docs['page.html']['id']}/file")
    assert page.headers["content-type"].startswith("text/plain"), "HTML is shown as text, never rendered"
    assert "<script>" in page.text

    assert content_type("pdf", "a.pdf") == ("application/pdf", "inline")
    assert content_type("docx", "a.docx") == ("application/octet-stream", "attachment")
    assert content_type("", "run.exe") == ("application/octet-stream", "attachment")
    assert content_type("svg", "x.svg")[0].startswith("text/plain")


async def test_a_document_path_cannot_reach_outside_its_root(client, services):
    docs = await docs_by_path(client)
    doc_id = docs["tool.py"]["id"]
    with services.store.engine.begin() as conn:  # as if the row said something else
        conn.execute(text("UPDATE document SET path = '../secret.txt' WHERE id = :d"), {"d": doc_id})
    r = await client.get(f"/api/documents/{doc_id}/file")
    assert r.status_code == 404 and "no longer" in r.json()["detail"]
    assert (await client.get("/api/documents/424242/file")).status_code == 404


async def test_a_folder_swapped_for_a_link_serves_nothing(client, services, embedder, tmp_path):
    """The root recorded at ingest time is not resolved again: a link swapped in for the folder does not
    make its target (here /etc) the folder the file is served from."""
    from ingest.pipeline import ingest_paths

    swap = tmp_path / "swap"
    swap.mkdir()
    (swap / "passwd").write_text("Harmless notes about the password policy.\n")
    ingest_paths(services.store, embedder, [swap], "swap")
    [doc] = (await client.get("/api/collections/swap/documents")).json()["documents"]
    assert (await client.get(f"/api/documents/{doc['id']}/file")).text.startswith("Harmless")

    os.rename(swap, tmp_path / "moved")
    swap.symlink_to("/etc")
    r = await client.get(f"/api/documents/{doc['id']}/file")
    assert r.status_code == 404 and "replaced" in r.json()["detail"]
    first = open("/etc/passwd").readline().strip()
    assert first and first not in r.text and "root:" not in r.text


async def test_create_an_empty_collection(client, services):
    r = await client.post("/api/collections", json={"name": "team-notes"})
    assert r.status_code == 201 and r.json()["documents"] == 0
    names = [c["name"] for c in (await client.get("/api/collections")).json()]
    assert "team-notes" in names
    assert (await client.post("/api/collections", json={"name": "team-notes"})).status_code == 409
    bad = await client.post("/api/collections", json={"name": "../x"})
    assert bad.status_code == 400 and "invalid collection name" in bad.json()["detail"]
    assert (await client.post("/api/collections", json={})).status_code == 400
