"""/v1, the OpenAI-compatible API: the echo backend through Litestar's test client for the request
rules, and the real `openai` package against a real server with the real llama.cpp model."""

from __future__ import annotations

import base64
import re

import numpy as np
import pytest

from assistant.app import create_app
from assistant.answers.citations import cited_numbers
from assistant.services import Services
from evals.local_server import serve_in_thread
from indexes.store import Store
from tests.assistant.test_app import PAGES, fill
from tests.support.sse import openai_chunks

QUESTION = "How early must flights be booked?"


def stored_vectors(store: Store, collection: str) -> dict[str, np.ndarray]:
    """chunk text -> the embedding the store keeps for it."""
    coll = store.require_collection(collection)
    ids, vecs = store.embeddings(coll.id)
    records = store.chunk_records([int(i) for i in ids])
    return {records[int(i)].text: vecs[n] for n, i in enumerate(ids)}


@pytest.fixture
def services(settings_factory, make_services, embedder):
    return make_services(settings_factory(), lambda store: fill(store, embedder))


async def test_models_lists_the_backend_and_one_rag_model_per_collection(client):
    r = await client.get("/v1/models")
    assert r.status_code == 200
    ids = [m["id"] for m in r.json()["data"]]
    assert ids == ["echo", "rag:handbook"]
    assert all(m["object"] == "model" for m in r.json()["data"])


async def test_rag_chat_answers_the_last_user_message_with_history_and_sources(client):
    body = {
        "model": "rag:handbook",
        "messages": [
            {"role": "system", "content": "You are a pirate."},
            {"role": "user", "content": "What about laptops?"},
            {"role": "assistant", "content": "New staff get one [1]."},
            {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
        ],
    }
    r = await client.post("/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["object"] == "chat.completion" and data["model"] == "rag:handbook"
    choice = data["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": f"Echo: {QUESTION} [1]"}
    assert choice["finish_reason"] == "stop"
    assert data["sources"][0]["path"] == "travel/booking.md" and data["sources"][0]["cited"] is True
    usage = data["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


async def test_rag_chat_streams_chunks_and_the_last_carries_sources(client):
    body = {"model": "rag:handbook", "messages": [{"role": "user", "content": QUESTION}], "stream": True,
            "stream_options": {"include_usage": True}}
    r = await client.post("/v1/chat/completions", json=body)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    objs = openai_chunks(r.text)
    assert objs[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(o["object"] == "chat.completion.chunk" for o in objs)
    text = "".join(o["choices"][0]["delta"].get("content", "") for o in objs if o["choices"])
    assert text == f"Echo: {QUESTION} [1]"
    last, usage = objs[-2], objs[-1]
    assert last["choices"][0]["finish_reason"] == "stop"
    assert last["sources"][0]["path"] == "travel/booking.md"
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] > 0
    assert all(o["choices"][0]["finish_reason"] is None for o in objs[:-2])


async def test_the_backends_model_gets_the_conversation_as_it_is(client):
    body = {"model": "echo", "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 100000}
    r = await client.post("/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["choices"][0]["message"]["content"] == "Echo: hello there"  # no sources, no citation
    assert "sources" not in data


async def test_stop_strings_end_the_answer(client):
    body = {"model": "rag:handbook", "messages": [{"role": "user", "content": QUESTION}], "stop": ["["]}
    r = await client.post("/v1/chat/completions", json=body)
    assert r.json()["choices"][0]["message"]["content"] == f"Echo: {QUESTION}"


@pytest.mark.parametrize(
    "body, status, code, fragment",
    [
        ({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}, 404, "model_not_found", "gpt-4o"),
        ({"model": "rag:nope", "messages": [{"role": "user", "content": "hi"}]}, 404, "collection_not_found", "nope"),
        ({"model": "rag:", "messages": [{"role": "user", "content": "hi"}]}, 404, "model_not_found", "collection"),
        ({"model": "echo", "messages": []}, 400, None, "messages"),
        ({"model": "echo", "messages": [{"role": "wizard", "content": "hi"}]}, 400, None, "wizard"),
        ({"model": "echo", "messages": [{"role": "user", "content": "  "}]}, 400, None, "empty"),
        ({"model": "echo", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]},
         400, None, "last message"),
        ({"model": "echo", "messages": [{"role": "user", "content": "hi"}], "n": 2}, 400, None, "n=1"),
        ({"model": "echo", "messages": [{"role": "user", "content": "hi"}], "temperature": 9}, 400, None, "temperature"),
        ({"model": "echo", "messages": [{"role": "user", "content": "hi"}], "stop": ["a"] * 5}, 400, None, "stop"),
        ({"model": "echo", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400, None, "image_url"),
        ({"model": "echo", "messages": [{"role": "user", "content": "word " * 5000}]}, 400, "context_length_exceeded", "tokens"),
        ({"model": "rag:handbook", "messages": [{"role": "user", "content": "x" * 5000}]}, 400, None, "too long"),
        ({"messages": [{"role": "user", "content": "hi"}]}, 400, None, "model"),
    ],
)
async def test_bad_chat_requests_get_openai_shaped_errors(client, body, status, code, fragment):
    r = await client.post("/v1/chat/completions", json=body)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert {"message", "type", "code"} <= error.keys()
    assert error["type"] == "invalid_request_error" and error["code"] == code
    assert fragment in error["message"]


async def test_a_body_that_is_not_json_is_an_openai_shaped_400(client):
    r = await client.post("/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"


async def test_embeddings_are_the_stored_ones_in_both_encodings(client, services):
    stored = stored_vectors(services.store, "handbook")
    texts = [body for _, body in PAGES.values()]
    r = await client.post("/v1/embeddings", json={"model": "rag:handbook", "input": texts})
    assert r.status_code == 200, r.text
    data = r.json()
    assert [d["index"] for d in data["data"]] == [0, 1, 2] and data["usage"]["prompt_tokens"] > 0
    for text, item in zip(texts, data["data"]):
        assert np.allclose(np.array(item["embedding"], dtype=np.float32), stored[text], atol=1e-5)
    name = services.embedder.name
    r = await client.post("/v1/embeddings", json={"model": name, "input": texts[0], "encoding_format": "base64"})
    vec = np.frombuffer(base64.b64decode(r.json()["data"][0]["embedding"]), dtype="<f4")
    assert np.allclose(vec, stored[texts[0]], atol=1e-5)


@pytest.mark.parametrize(
    "body, status, fragment",
    [
        ({"model": "text-embedding-3-small", "input": "hi"}, 404, "embedding model"),
        ({"model": "rag:nope", "input": "hi"}, 404, "nope"),
        ({"model": "rag:handbook", "input": []}, 400, "empty"),
        ({"model": "rag:handbook", "input": ["ok", ""]}, 400, "input[1]"),
        ({"model": "rag:handbook", "input": ["x"] * 300}, 400, "at most"),
        ({"model": "rag:handbook", "input": [[1, 2, 3]]}, 400, "input"),
        ({"model": "rag:handbook", "input": "hi", "dimensions": 3}, 400, "dimensions"),
    ],
)
async def test_bad_embedding_requests(client, body, status, fragment):
    r = await client.post("/v1/embeddings", json=body)
    assert r.status_code == status, r.text
    assert fragment in r.json()["error"]["message"]


# --- the real client against the real server and model ------------------------------------------------


@pytest.fixture(scope="module")
def real_server(tmp_path_factory, embedder, llama):
    """The app over real HTTP with the packaged Gemma-3-270M in-process and the handbook collection."""
    from assistant.settings import Settings

    settings = Settings(data_dir=tmp_path_factory.mktemp("openai-api"), backend="llamacpp",
                        generation={"max_tokens": 48, "temperature": 0})
    store = Store(settings.data_dir)
    fill(store, embedder)
    services = Services.assemble(settings, store, embedder, llama)
    with serve_in_thread(create_app(settings, services)) as server:
        yield server.url, services
    store.close()


@pytest.fixture(scope="module")
def openai_client(real_server):
    import openai

    return openai.OpenAI(base_url=f"{real_server[0]}/v1", api_key="x", max_retries=0, timeout=120)


def assert_citations_name_sources(text: str, sources: list[dict]) -> None:
    numbers = {s["n"] for s in sources}
    assert set(cited_numbers(text)) <= numbers, (text, numbers)
    assert {s["n"] for s in sources if s["cited"]} == set(cited_numbers(text))


@pytest.mark.slow
def test_openai_client_lists_models_and_chats_without_streaming(openai_client, llama):
    ids = [m.id for m in openai_client.models.list()]
    assert ids == [llama.model, "rag:handbook"]
    resp = openai_client.chat.completions.create(
        model="rag:handbook", messages=[{"role": "user", "content": QUESTION}]
    )
    text = resp.choices[0].message.content
    sources = resp.model_extra["sources"]
    assert text and sources and sources[0]["path"] == "travel/booking.md"
    assert_citations_name_sources(text, sources)
    assert resp.choices[0].finish_reason in ("stop", "length")
    assert resp.usage.prompt_tokens > 0 and 0 < resp.usage.completion_tokens <= 48


@pytest.mark.slow
def test_openai_client_streams_a_rag_answer_with_sources_on_the_last_chunk(openai_client):
    stream = openai_client.chat.completions.create(
        model="rag:handbook", messages=[{"role": "user", "content": QUESTION}], stream=True
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    last = chunks[-1]
    assert text.strip() and last.choices[0].finish_reason in ("stop", "length")
    sources = last.model_extra["sources"]
    assert sources and sources[0]["path"] == "travel/booking.md"
    assert_citations_name_sources(text, sources)
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])


@pytest.mark.slow
def test_openai_client_passes_other_turns_to_the_backends_model(openai_client, llama):
    resp = openai_client.chat.completions.create(
        model=llama.model, messages=[{"role": "user", "content": "Say hello."}], max_tokens=8
    )
    assert resp.model == llama.model and resp.usage.completion_tokens <= 8
    assert resp.choices[0].finish_reason in ("stop", "length")


@pytest.mark.slow
def test_openai_client_embeddings_equal_the_stored_ones(openai_client, real_server):
    stored = stored_vectors(real_server[1].store, "handbook")
    texts = list(stored)
    resp = openai_client.embeddings.create(model="rag:handbook", input=texts)  # base64 on the wire
    for text, item in zip(texts, resp.data):
        assert np.allclose(np.array(item.embedding, dtype=np.float32), stored[text], atol=1e-5)


@pytest.mark.slow
def test_openai_client_raises_its_own_errors(openai_client):
    import openai

    with pytest.raises(openai.NotFoundError) as missing:
        openai_client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert missing.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError) as bad:
        openai_client.chat.completions.create(model="rag:handbook", messages=[{"role": "tool", "content": "hi"}])
    assert re.search("role", bad.value.message)
