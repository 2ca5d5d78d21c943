"""Questions about one document through /api/ask: the whole document when its prompt fits the backend's
window (counted with the backend's tokenizer), else retrieval within that document alone; every way of
naming a document that cannot be answered refused with a clear 4xx. Once with the real packaged model."""

from __future__ import annotations

import numpy as np
import pytest
from litestar.testing import AsyncTestClient

from assistant.answers.document_question import (
    PART_CHUNKS, DocumentNotAnswerable, UnknownDocument, document_parts, find_document,
)
from assistant.app import create_app
from assistant.services import Services
from indexes import reading
from indexes.apikeys import create_key
from indexes.store import SourceInfo, Store
from tests.support.documents import (
    GUIDE, GUIDE_CHUNKS, LONG, OTHER, SECRET, DocumentIds, copy_store, documents_template, long_chunks,
)
from tests.support.sse import parse_sse

WINDOW = 2048
BUDGET = WINDOW - 384 - 32  # the generation settings' answer tokens and margin


@pytest.fixture(scope="module")
def template(tmp_path_factory, embedder):
    return documents_template(tmp_path_factory.mktemp("documents") / "data", embedder)


@pytest.fixture
def services(settings_factory, make_services, template):
    settings = settings_factory(echo={"context_window": WINDOW})
    copy_store(template, settings.data_dir)
    return make_services(settings)


@pytest.fixture
def ids(services) -> DocumentIds:
    def id_of(collection: str, path: str) -> int:
        return services.store.get_document(services.store.require_collection(collection), path).id

    return DocumentIds(id_of("handbook", GUIDE), id_of("handbook", LONG), id_of("handbook", OTHER),
                       id_of("secret", SECRET))


async def ask(client, headers: dict | None = None, **body) -> list[tuple[str, dict]]:
    r = await client.post("/api/ask", json=body, headers=headers or {})
    assert r.status_code == 200, r.text
    return parse_sse(r.text)


def event(events: list[tuple[str, dict]], name: str) -> dict:
    return next(data for kind, data in events if kind == name)


async def test_a_document_that_fits_is_sent_whole_in_order_and_cited_by_lines(client, ids):
    events = await ask(client, question="When is the email account ready?", collection="handbook", document=GUIDE)
    retrieved = event(events, "retrieved")["sources"]
    # every chunk, in reading order: one part per section, each with its lines
    assert [(s["n"], s["path"], s["line_start"], s["line_end"], s["heading_path"]) for s in retrieved] == [
        (1, GUIDE, 1, 8, "Onboarding"), (2, GUIDE, 9, 18, "Onboarding › Accounts")]
    chunk_ids = [i for s in retrieved for i in s["chunk_ids"]]
    assert len(chunk_ids) == len(GUIDE_CHUNKS) and chunk_ids == sorted(chunk_ids)
    done = event(events, "done")
    assert done["document_mode"] == "whole"
    doc = done["document"]
    assert (doc["id"], doc["collection"], doc["path"], doc["title"], doc["mode"]) == (
        ids.guide, "handbook", GUIDE, "Onboarding", "whole")
    assert doc["prompt_tokens"] == done["prompt_tokens"] == doc["whole_prompt_tokens"]
    assert doc["prompt_tokens"] <= doc["budget"] == BUDGET and doc["context_window"] == WINDOW
    sources = event(events, "sources")["sources"]
    assert sources[0]["cited"] and sources[0]["n"] == 1 and sources[0]["support"] is not None


async def test_a_document_named_by_its_id_alone_is_asked_in_its_own_collection(client, ids):
    done = event(await ask(client, question="Where are badges printed?", document=ids.guide), "done")
    assert done["document"]["collection"] == "handbook" and done["document_mode"] == "whole"
    digits = event(await ask(client, question="Where are badges printed?", collection="handbook",
                             document=str(ids.guide)), "done")
    assert digits["document"]["path"] == GUIDE  # a path of digits that names no document is read as an id


async def test_a_document_too_long_is_answered_from_its_own_chunks_alone(client, ids):
    question = "When are parking permits renewed?"
    everywhere = event(await ask(client, question=question, collection="handbook"), "done")
    assert "document" not in everywhere
    anywhere = event(await ask(client, question=question, collection="handbook"), "retrieved")["sources"]
    assert OTHER in {s["path"] for s in anywhere}  # the travel page speaks of permits too

    events = await ask(client, question=question, collection="handbook", document=LONG)
    done = event(events, "done")
    assert done["document_mode"] == "retrieved"
    doc = done["document"]
    assert doc["whole_prompt_tokens"] > doc["budget"] >= doc["prompt_tokens"] == done["prompt_tokens"]
    sources = event(events, "sources")["sources"]
    assert sources and {s["document_id"] for s in sources} == {ids.long}
    permit_line = long_chunks()[40][2]
    assert any(s["line_start"] <= permit_line <= s["line_end"] for s in sources)


async def test_the_document_asked_about_is_kept_with_the_turn(client, ids):
    """A reload shows which document a conversation's question was about (the page asks there again); a
    question of the collections keeps none, and a stopped turn keeps it too."""
    conv = (await client.post("/api/conversations", json={"collections": ["handbook"]})).json()
    await ask(client, question="When is the email account ready?", document=ids.guide, conversation_id=conv["id"])
    await ask(client, question="And the parking permits?", collection="handbook", conversation_id=conv["id"])
    turns = (await client.get(f"/api/conversations/{conv['id']}")).json()["turns"]
    assert turns[0]["document"] == {"id": ids.guide, "collection": "handbook", "path": GUIDE, "title": "Onboarding"}
    assert turns[1]["document"] is None


async def test_whole_or_not_is_decided_by_the_backend_s_own_count(ids, services):
    """The same document, a window too small for it: retrieved; one just large enough: whole."""
    parts = document_parts(services.store, reading.document_by_id(services.store, ids.long))
    assert sum(len(p.chunk_ids) for p in parts) == len(long_chunks()) and all(len(p.chunk_ids) == 1 for p in parts)
    guide = document_parts(services.store, reading.document_by_id(services.store, ids.guide))
    assert [len(p.chunk_ids) for p in guide] == [2, 2] and PART_CHUNKS >= 2
    assert guide[0].text == f"{GUIDE_CHUNKS[0][1]}\n{GUIDE_CHUNKS[1][1]}"


async def test_documents_that_cannot_be_asked_about_are_refused_with_the_reason(client, services, ids):
    async def refused(body: dict, headers: dict | None = None) -> tuple[int, str, str]:
        r = await client.post("/api/ask", json={"question": "When?", **body}, headers=headers or {})
        return r.status_code, r.json().get("code"), r.json().get("detail")

    assert await refused({"collection": "handbook", "document": "nope.md"}) == (
        404, "document_not_found", "no document 'nope.md' in collection 'handbook'")
    assert await refused({"document": 999999}) == (404, "document_not_found", "no document 999999")
    assert await refused({"collection": "handbook", "document": ids.secret}) == (
        404, "document_not_found", f"no document {ids.secret} in collection 'handbook'")  # another collection's
    assert (await refused({"document": "guide/onboarding.md"}))[:2] == (400, "document_not_answerable")
    assert (await refused({"collection": "handbook", "document": "²"}))[:2] == (404, "document_not_found")  # no id
    assert (await refused({"collections": ["handbook", "secret"], "document": GUIDE}))[0] == 400
    assert (await refused({"collection": "handbook", "document": GUIDE, "filters": {"kinds": ["md"]}}))[0] == 400
    for bad in ("", 0, True, -3, 2**64, "x" * 1025):
        assert (await refused({"collection": "handbook", "document": bad}))[0] == 400, bad
    assert (await refused({"collection": "nowhere", "document": GUIDE}))[:2] == (404, "collection_not_found")

    # A key of `handbook` learns nothing of `secret`'s document: the answer an unknown id gets.
    key = create_key(services.store.engine, "asker", ["ask"], ["handbook"])[1]
    auth = {"Authorization": f"Bearer {key}"}
    unknown, theirs = await refused({"document": 999999}, auth), await refused({"document": ids.secret}, auth)
    assert (unknown[0], unknown[1]) == (theirs[0], theirs[1]) == (404, "document_not_found")
    assert theirs[2] == f"no document {ids.secret}"
    assert (await refused({"collection": "secret", "document": SECRET}, auth))[0] == 403  # as for any question there
    assert event(await ask(client, auth, question="Where are badges printed?", document=ids.guide),
                 "done")["document_mode"] == "whole"


def test_find_document_refuses_a_document_without_text(services, embedder):
    store = services.store
    coll = store.require_collection("handbook")
    store.write_document(coll, SourceInfo(path="empty.md", title="Empty", kind="md"), [], np.zeros((0, embedder.dim), np.float32))
    with pytest.raises(DocumentNotAnswerable, match="no text to answer from"):
        find_document(store, "empty.md", "handbook", lambda name: True)
    with pytest.raises(UnknownDocument, match="no document 'empty.md'$"):
        find_document(store, "empty.md", "handbook", lambda name: name != "handbook")


@pytest.mark.slow
async def test_the_real_model_answers_about_a_whole_small_document(settings_factory, embedder, template, llama):
    """The packaged Gemma-3-270M (512-token window): the guide fits whole, counted by its own tokenizer."""
    settings = settings_factory(backend="llamacpp", generation={"max_tokens": 32, "temperature": 0})
    store = Store(copy_store(template, settings.data_dir))
    services = Services.assemble(settings, store, embedder, llama)
    try:
        async with AsyncTestClient(app=create_app(settings, services)) as c:
            events = await ask(c, question="When is the email account ready?", collection="handbook", document=GUIDE)
    finally:
        store.close()
    done = event(events, "done")
    print("answer:", done["answer"], "| document:", done["document"])
    assert done["model"] == llama.model and done["answer"].strip()
    doc = done["document"]
    assert done["document_mode"] == doc["mode"] == "whole" and doc["context_window"] == llama.context_window == 512
    assert doc["prompt_tokens"] == done["prompt_tokens"] <= doc["budget"] == 512 - 32 - 32
    assert [s["line_start"] for s in event(events, "retrieved")["sources"]] == [1, 9]


def test_the_ask_command_asks_about_one_document(tmp_path, template, capsys):
    """`assistant ask --document`: the whole document when it fits, said after the answer; refusals as
    messages with exit code 2."""
    import json

    from assistant.cli import main

    data = tmp_path / "data"
    copy_store(template, data)
    (data / "config.toml").write_text(f'backend = "echo"\n[echo]\ncontext_window = {WINDOW}\n')

    def ask_cli(*args: str) -> int:
        return main(["ask", "What does the guide say?", "-c", "handbook", "--data-dir", str(data), *args])

    assert ask_cli("--document", GUIDE, "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["document_mode"] == "whole" and out["document"]["path"] == GUIDE
    assert {s["path"] for s in out["sources"]} == {GUIDE}
    assert ask_cli("--document", GUIDE) == 0
    assert f"Read all of {GUIDE} (" in capsys.readouterr().out
    assert ask_cli("--document", "no/such.md") == 2
    assert "no document 'no/such.md' in collection 'handbook'" in capsys.readouterr().err
    assert ask_cli("--document", GUIDE, "--path", "*.md") == 2
    assert "--document is asked about within its own collection" in capsys.readouterr().err
