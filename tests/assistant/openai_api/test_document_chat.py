"""Questions about one document through the other doors, with their own clients against the real server
(echo backend): /v1 with the `openai` package (the `document` field, or the model `rag:<collection>/<path>`)
and MCP `ask` with the `mcp` package (its `document` argument)."""

from __future__ import annotations

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from assistant.app import create_app
from assistant.services import Services
from evals.local_server import serve_in_thread
from indexes.apikeys import create_key
from indexes.store import Store
from tests.support.documents import GUIDE, LONG, OTHER, SECRET, documents_template

pytestmark = pytest.mark.slow  # the real MiniLM embedder and a real server

WINDOW = 2048
PERMITS = "When are parking permits renewed?"


@pytest.fixture(scope="module")
def server(tmp_path_factory, embedder):
    """The app over real HTTP with the echo backend (a 2,048-token window) and the documents' store; its
    URL, the services, and a key that may ask `handbook` only."""
    from assistant.backends.factory import create_backend
    from assistant.settings import Settings

    settings = Settings(data_dir=documents_template(tmp_path_factory.mktemp("doc-chat") / "data", embedder),
                        backend="echo", echo={"context_window": WINDOW})
    store = Store(settings.data_dir)
    key = create_key(store.engine, "asker", ["ask"], ["handbook"])[1]
    services = Services.assemble(settings, store, embedder, create_backend(settings))
    with serve_in_thread(create_app(settings, services)) as running:
        yield running.url, services, key
    store.close()


@pytest.fixture(scope="module")
def client(server):
    import openai

    return openai.OpenAI(base_url=f"{server[0]}/v1", api_key=server[2], max_retries=0, timeout=60)


def document_id(services: Services, collection: str, path: str) -> int:
    return services.store.get_document(services.store.require_collection(collection), path).id


def test_the_openai_client_asks_about_a_whole_document_by_the_model_name(client):
    resp = client.chat.completions.create(model=f"rag:handbook/{GUIDE}",
                                          messages=[{"role": "user", "content": "Where are badges printed?"}])
    extra = resp.model_extra
    assert resp.model == f"rag:handbook/{GUIDE}" and resp.choices[0].message.content.endswith("[1]")
    assert extra["document_mode"] == "whole" and extra["document"]["path"] == GUIDE
    assert extra["document"]["prompt_tokens"] == resp.usage.prompt_tokens <= extra["document"]["budget"] < WINDOW
    assert [(s["n"], s["line_start"], s["line_end"]) for s in sorted(extra["sources"], key=lambda s: s["n"])] == [
        (1, 1, 8), (2, 9, 18)]


def test_the_openai_client_streams_a_long_document_answered_from_its_chunks(client):
    chunks = list(client.chat.completions.create(
        model="rag:handbook", messages=[{"role": "user", "content": PERMITS}], stream=True,
        extra_body={"document": LONG}))
    last = chunks[-2] if not chunks[-1].choices else chunks[-1]
    extra = last.model_extra
    assert extra["document_mode"] == "retrieved" and extra["document"]["whole_prompt_tokens"] > extra["document"]["budget"]
    assert extra["sources"] and {s["path"] for s in extra["sources"]} == {LONG}
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == f"Echo: {PERMITS} [1]"


def test_the_openai_client_gets_404_for_a_document_it_may_not_read(client, server):
    import openai

    secret = document_id(server[1], "secret", SECRET)
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="rag:handbook", messages=[{"role": "user", "content": "When?"}],
                                       extra_body={"document": 999999})
    with pytest.raises(openai.NotFoundError) as theirs:
        client.chat.completions.create(model="rag:handbook", messages=[{"role": "user", "content": "When?"}],
                                       extra_body={"document": secret})
    assert unknown.value.code == theirs.value.code == "document_not_found"
    assert theirs.value.body["message"] == f"no document {secret} in collection 'handbook'"
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="rag:handbook/nope.md", messages=[{"role": "user", "content": "When?"}])
    assert "no document 'nope.md'" in missing.value.message
    with pytest.raises(openai.PermissionDeniedError):  # the model's collection, as for any rag: question
        client.chat.completions.create(model=f"rag:secret/{SECRET}", messages=[{"role": "user", "content": "When?"}])
    for body, model in (({"document": GUIDE}, f"rag:handbook/{GUIDE}"), ({"document": GUIDE}, "echo"),
                        ({"document": True}, "rag:handbook"), ({}, f"rag:handbook,secret/{GUIDE}")):
        with pytest.raises((openai.BadRequestError, openai.PermissionDeniedError)):
            client.chat.completions.create(model=model, messages=[{"role": "user", "content": "When?"}], extra_body=body)


async def test_the_mcp_client_asks_about_one_document(server):
    url, services, key = server
    headers = {"Authorization": f"Bearer {key}"}
    async with create_mcp_http_client(headers=headers) as http, \
            streamable_http_client(f"{url}/mcp", http_client=http) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        schema = next(t for t in (await session.list_tools()).tools if t.name == "ask").input_schema
        assert "document" in schema["properties"]

        whole = await session.call_tool("ask", {"question": "Where are badges printed?", "document": GUIDE})
        data = whole.structured_content
        assert not whole.is_error and data["document_mode"] == "whole" and data["collection"] == "handbook"
        assert [s["location"] for s in sorted(data["sources"], key=lambda s: s["n"])] == [
            f"{GUIDE}:L1-L8", f"{GUIDE}:L9-L18"]

        long = (await session.call_tool("ask", {"question": PERMITS, "collection": "handbook", "document": LONG}))
        assert long.structured_content["document_mode"] == "retrieved"
        assert {s["path"] for s in long.structured_content["sources"]} == {LONG}
        anywhere = (await session.call_tool("ask", {"question": PERMITS})).structured_content
        assert OTHER in {s["path"] for s in anywhere["sources"]}  # what the restriction kept out

        secret = str(document_id(services, "secret", SECRET))
        for args, said in (({"document": "nope.md"}, "no document 'nope.md' in collection 'handbook'"),
                           ({"document": secret}, f"no document {secret!r} in collection 'handbook'"),
                           ({"document": GUIDE, "kinds": ["md"]}, "give either document or paths/kinds")):
            refused = await session.call_tool("ask", {"question": "When?", **args})
            assert refused.is_error and said in refused.content[0].text, refused.content[0].text
