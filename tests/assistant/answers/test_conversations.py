"""Saved conversations: the API, follow-ups rewritten to stand alone, restarts, and `assistant chat`.

The corpus is chosen so that the follow-up "How do I reset it?" alone retrieves the password page,
while in a conversation about the VPN client "it" is the VPN client and its page must be retrieved.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient

from assistant.app import create_app
from assistant.backends.factory import create_backend
from assistant.answers.conversation import checked_rewrite, content_words, fallback_query, standalone_query, use_model
from assistant.services import Services
from indexes.conversations import add_turn, create_conversation, list_turns
from indexes.store import Store
from tests.support.sse import openai_chunks, parse_sse
from tests.support.stores import write_pages

from tests.conftest import REPO
PAGES = {
    "it/vpn.md": (
        "VPN client",
        "The VPN client connects your laptop to the office network from home. If the VPN client stops "
        "connecting, reset it by removing its profile and importing the profile again from the IT portal.",
    ),
    "it/passwords.md": (
        "Resetting your password",
        "To reset a forgotten password, open the password reset page and follow the reset link sent to your "
        "email. A reset link expires after one hour.",
    ),
    "office/printers.md": (
        "Printers",
        "Printers on every floor print double-sided by default; collect your pages with your badge.",
    ),
}
FIRST = "How does the VPN client connect to the office network?"
FOLLOW_UP = "How do I reset it?"


def fill(store: Store, embedder) -> None:
    write_pages(store, embedder, "it", PAGES, headings=True)


@pytest.fixture(scope="module")
def filled_store(tmp_path_factory, embedder) -> Path:
    """The corpus in a store, written once per module; each test gets its own copy."""
    path = tmp_path_factory.mktemp("conversations") / "data"
    store = Store(path)
    fill(store, embedder)
    store.close()
    return path


@pytest.fixture
def data_dir(settings_factory, filled_store) -> Path:
    path = settings_factory().data_dir
    shutil.copytree(filled_store, path)
    return path


def app_services(settings, embedder, backend=None) -> Services:
    """The services of one server process over the data dir: a fresh Store, as after a restart."""
    return Services.assemble(settings, Store(settings.data_dir), embedder, backend or create_backend(settings))


@pytest.fixture
async def client(data_dir, settings_factory, embedder):
    services = app_services(settings_factory(), embedder)
    async with AsyncTestClient(app=create_app(services.settings, services)) as c:
        yield c
    services.store.close()


async def ask(client, **body) -> tuple[str, list[dict], dict]:
    """The answer, the sources and the done event of one /api/ask."""
    r = await client.post("/api/ask", json=body)
    assert r.status_code == 200, r.text
    events = parse_sse(r.text)
    assert events[-1][0] == "done", events[-1]
    answer = "".join(d["text"] for k, d in events if k == "token")
    sources = next(d["sources"] for k, d in events if k == "sources")
    return answer, sources, events[-1][1]


def paths(sources: list[dict]) -> list[str]:
    return [s["path"] for s in sources]


# --- the follow-up rewrite, as plain functions ----------------------------------------------------


def test_fallback_adds_the_previous_questions_content_words():
    assert content_words("How does the VPN client connect to it?") == ["vpn", "client", "connect"]
    assert fallback_query(FOLLOW_UP, FIRST) == "How do I reset it? vpn client connect office network"
    assert fallback_query("What about the VPN?", "What is the VPN?") == "What about the VPN?"


def test_a_model_rewrite_is_checked_before_it_is_used():
    assert checked_rewrite(" How do I reset the VPN client?\nmore", FOLLOW_UP, FIRST) == "How do I reset the VPN client?"
    assert checked_rewrite("Rewritten question: \"How do I reset the VPN client?\"", FOLLOW_UP, FIRST) == (
        "How do I reset the VPN client?"
    )
    assert checked_rewrite("   \n ", FOLLOW_UP, FIRST) is None
    assert checked_rewrite("reset " * 100, FOLLOW_UP, FIRST) is None  # absurdly long
    assert checked_rewrite("What is the capital of France?", FOLLOW_UP, FIRST) is None  # about something else
    assert checked_rewrite(f" {FOLLOW_UP}", FOLLOW_UP, FIRST) is None  # copied: it would still search for "it"


async def test_echo_takes_the_fallback_whatever_the_mode(settings_factory):
    echo = create_backend(settings_factory())
    assert not use_model(echo, "auto") and not use_model(echo, "model")
    history = [{"role": "user", "content": FIRST}, {"role": "assistant", "content": "It uses a profile [1]."}]
    for mode in ("auto", "model", "fallback"):
        rewrite = await standalone_query(echo, FOLLOW_UP, history, mode=mode)
        assert (rewrite.method, rewrite.query) == ("fallback", fallback_query(FOLLOW_UP, FIRST))
    assert (await standalone_query(echo, FIRST, [])).method == "none"


# --- the API --------------------------------------------------------------------------------------


async def test_create_list_read_rename_delete(client):
    r = await client.post("/api/conversations", json={"title": "  VPN   questions ", "collections": ["it"]})
    assert r.status_code == 201, r.text
    conv = r.json()
    assert (conv["title"], conv["collections"], conv["turns"]) == ("VPN questions", ["it"], [])
    other = (await client.post("/api/conversations", json={})).json()
    assert other["title"] == "" and other["collections"] == []

    listed = (await client.get("/api/conversations")).json()
    assert [c["id"] for c in listed["conversations"]] == [other["id"], conv["id"]]  # newest first
    assert listed["total"] == 2
    found = (await client.get("/api/conversations", params={"q": "vpn"})).json()
    assert [c["id"] for c in found["conversations"]] == [conv["id"]] and found["total"] == 1
    page = (await client.get("/api/conversations", params={"limit": 1, "offset": 1})).json()
    assert [c["id"] for c in page["conversations"]] == [conv["id"]] and page["total"] == 2

    r = await client.patch(f"/api/conversations/{conv['id']}", json={"title": "The VPN"})
    assert r.status_code == 200 and r.json()["title"] == "The VPN"
    assert (await client.get(f"/api/conversations/{conv['id']}")).json()["title"] == "The VPN"

    # An untitled conversation is named after its first question; the turn is listed with its sources.
    _, sources, done = await ask(client, question=FIRST, conversation_id=other["id"], collection="it", k=1)
    assert done["conversation_id"] == other["id"] and done["query_rewrite"] == "none"
    read = (await client.get(f"/api/conversations/{other['id']}")).json()
    assert read["title"] == FIRST and read["collections"] == []
    (turn,) = read["turns"]
    assert (turn["id"], turn["question"], turn["query"], turn["sources"]) == (done["turn_id"], FIRST, FIRST, sources)
    assert turn["answer"] == done["answer"]

    r = await client.delete(f"/api/conversations/{other['id']}")
    assert r.status_code == 200 and r.json() == {"deleted": other["id"]}
    assert (await client.get(f"/api/conversations/{other['id']}")).status_code == 404
    assert [c["id"] for c in (await client.get("/api/conversations")).json()["conversations"]] == [conv["id"]]


def test_deleting_a_conversation_deletes_its_turns(store):
    conv = create_conversation(store.engine, "t", [])
    add_turn(store.engine, conv.id, question="q", query="q", answer="a", sources=[])
    from indexes.conversations import delete_conversation

    assert list_turns(store.engine, conv.id)
    assert delete_conversation(store.engine, conv.id) and not delete_conversation(store.engine, conv.id)
    assert list_turns(store.engine, conv.id) == []


def test_the_history_holds_an_answer_without_the_sources_words_quoted_under_it(store):
    """The page shows the quotes after a reload (the stored answer keeps them); the model's history does not: it
    is not to copy the block, and the sources of the next prompt hold the words anyway."""
    from assistant.answers.conversation import history_for

    conv = create_conversation(store.engine, "t", [])
    quoted = "Flights go through the travel desk [1].\n\nFrom the sources:\n> “Book flights 14 days ahead.” [1]"
    add_turn(store.engine, conv.id, question="How do I book flights?", query="q", answer=quoted, sources=[])
    assert list_turns(store.engine, conv.id)[0].answer == quoted
    assert history_for(store.engine, conv.id) == [{"role": "user", "content": "How do I book flights?"},
                                                  {"role": "assistant", "content": "Flights go through the travel desk [1]."}]


def test_conversations_are_found_by_what_was_said_in_them(store):
    from indexes.conversations import list_conversations

    leave = create_conversation(store.engine, "Holidays", [])
    add_turn(store.engine, leave.id, question="How many days of leave?", query="q", answer="Twenty-five 100% days.", sources=[])
    other = create_conversation(store.engine, "Expenses", [])
    add_turn(store.engine, other.id, question="How do I claim a taxi?", query="q", answer="With the form.", sources=[])
    found = lambda text: [c.id for c in list_conversations(store.engine, text_contains=text)[0]]  # noqa: E731
    assert found("days of leave") == [leave.id]  # a question
    assert found("25") == [] and found("100%") == [leave.id]  # an answer; % is a character, not a wildcard
    assert found("expenses") == [other.id]  # the title still counts
    assert found("form") == [other.id] and found("nowhere") == []
    assert list_conversations(store.engine, text_contains="leave")[1] == 1


@pytest.mark.parametrize(
    "method, url, body, status, fragment",
    [
        ("post", "/api/conversations", {"title": "x" * 201}, 400, "too long"),
        ("post", "/api/conversations", {"collections": ["nope"]}, 404, "unknown collection"),
        ("post", "/api/conversations", {"collections": "it"}, 400, "collections"),
        ("get", "/api/conversations/999", None, 404, "unknown conversation"),
        ("get", "/api/conversations/abc", None, 404, "not found"),
        ("patch", "/api/conversations/999", {"title": "x"}, 404, "unknown conversation"),
        ("patch", "/api/conversations/{id}", {"title": "   "}, 400, "empty"),
        ("patch", "/api/conversations/{id}", {"title": "x" * 201}, 400, "too long"),
        ("patch", "/api/conversations/{id}", {}, 400, "title"),
        ("delete", "/api/conversations/999", None, 404, "unknown conversation"),
        ("get", "/api/conversations?limit=0", None, 400, "limit"),
        ("get", "/api/conversations?limit=1000", None, 400, "limit"),
        ("get", "/api/conversations?offset=-1", None, 400, "offset"),
        ("post", "/api/ask", {"question": "hi", "collection": "it", "conversation_id": 999}, 404, "unknown conversation"),
        ("post", "/api/ask", {"question": "hi", "conversation_id": "{id}",
                              "history": [{"role": "user", "content": "x"}]}, 400, "history"),
        ("post", "/api/ask", {"question": "hi", "conversation_id": "{id}"}, 400, "collection"),
        ("post", "/api/ask", {"question": " ", "collection": "it", "conversation_id": "{id}"}, 400, "empty"),
    ],
)
async def test_bad_conversation_requests_get_a_clear_4xx(client, method, url, body, status, fragment):
    conv = (await client.post("/api/conversations", json={"title": "keep me"})).json()
    url = url.replace("{id}", str(conv["id"]))
    if body and body.get("conversation_id") == "{id}":
        body = dict(body, conversation_id=conv["id"])
    r = await getattr(client, method)(url, **({"json": body} if body is not None else {}))
    assert r.status_code == status, r.text
    assert fragment in json.dumps(r.json()).lower()
    kept = (await client.get(f"/api/conversations/{conv['id']}")).json()
    assert (kept["title"], kept["turns"]) == ("keep me", []), "a refused request changes nothing"


# --- "it" refers to the first turn's topic ---------------------------------------------------------


async def two_turns(client) -> tuple[list[dict], dict]:
    """Ask FIRST then FOLLOW_UP in a new conversation; the follow-up's sources and done event."""
    conv = (await client.post("/api/conversations", json={"collections": ["it"]})).json()
    _, first_sources, first_done = await ask(client, question=FIRST, conversation_id=conv["id"], k=1)
    assert paths(first_sources) == ["it/vpn.md"]
    _, sources, done = await ask(client, question=FOLLOW_UP, conversation_id=conv["id"], k=1)
    assert done["conversation_id"] == conv["id"] and done["turn_id"] > first_done["turn_id"]
    turns = (await client.get(f"/api/conversations/{conv['id']}")).json()["turns"]
    assert [t["question"] for t in turns] == [FIRST, FOLLOW_UP]
    assert turns[1]["query"] == done["query"] and turns[1]["sources"] == sources
    return sources, done


async def test_a_follow_up_about_it_retrieves_the_first_turns_document(client):
    _, alone, _ = await ask(client, question=FOLLOW_UP, collection="it", k=1)
    assert paths(alone) == ["it/passwords.md"], "without the conversation, 'it' finds the password page"

    sources, done = await two_turns(client)
    assert done["query_rewrite"] == "fallback"
    assert done["query"] == fallback_query(FOLLOW_UP, FIRST)
    assert paths(sources) == ["it/vpn.md"]
    assert done["answer"] == f"Echo: {FOLLOW_UP} [1]", "the model is asked the question as the user wrote it"


async def test_openai_chat_completions_continue_a_conversation(client):
    conv = (await client.post("/api/conversations", json={"collections": ["it"]})).json()
    body = {"model": "rag:it", "conversation_id": conv["id"]}
    first = await client.post("/v1/chat/completions", json={**body, "messages": [{"role": "user", "content": FIRST}]})
    assert first.status_code == 200, first.text
    assert first.json()["conversation_id"] == conv["id"] and first.json()["turn_id"]
    r = await client.post("/v1/chat/completions", json={**body, "messages": [{"role": "user", "content": FOLLOW_UP}],
                                                         "stream": True})
    assert r.status_code == 200, r.text
    last = openai_chunks(r.text)[-1]
    assert last["conversation_id"] == conv["id"]
    assert paths(last["sources"])[0] == "it/vpn.md", "the follow-up found the first turn's document"
    turns = (await client.get(f"/api/conversations/{conv['id']}")).json()["turns"]
    assert [t["question"] for t in turns] == [FIRST, FOLLOW_UP]


@pytest.mark.parametrize("body, status, code", [
    ({"model": "rag:it", "conversation_id": 987654}, 404, "conversation_not_found"),
    ({"model": "echo", "conversation_id": 1}, 400, None),
    ({"model": "rag:it", "conversation_id": 0}, 400, None),
])
async def test_openai_conversation_errors_are_openai_shaped(client, body, status, code):
    r = await client.post("/v1/chat/completions", json={**body, "messages": [{"role": "user", "content": FIRST}]})
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["message"] and error["type"]
    if code:
        assert error["code"] == code


async def test_a_conversation_survives_a_restart(data_dir, settings_factory, embedder):
    settings = settings_factory()
    first = app_services(settings, embedder)
    async with AsyncTestClient(app=create_app(settings, first)) as c:
        conv = (await c.post("/api/conversations", json={"title": "VPN", "collections": ["it"]})).json()
        _, first_sources, _ = await ask(c, question=FIRST, conversation_id=conv["id"], k=1)
    await first.aclose()  # the first server is gone: its store closed, its backend too

    second = app_services(settings_factory(), embedder)
    try:
        async with AsyncTestClient(app=create_app(second.settings, second)) as c:
            read = (await c.get(f"/api/conversations/{conv['id']}")).json()
            assert read["title"] == "VPN" and [t["question"] for t in read["turns"]] == [FIRST]
            assert read["turns"][0]["sources"] == first_sources
            # The history the follow-up needs came back from the store.
            _, sources, done = await ask(c, question=FOLLOW_UP, conversation_id=conv["id"], k=1)
            assert paths(sources) == ["it/vpn.md"] and done["query_rewrite"] == "fallback"
            assert len((await c.get(f"/api/conversations/{conv['id']}")).json()["turns"]) == 2
    finally:
        await second.aclose()


# --- the real model -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("rewrite", ["auto", "model"])
async def test_a_follow_up_with_the_real_llamacpp_backend(data_dir, settings_factory, embedder, llama, rewrite):
    """The packaged Gemma-3-270M answers; `auto` takes the fallback (a base model has no chat template),
    `model` makes the real extra call, whose checked rewrite (or the fallback) must still find the page."""
    settings = settings_factory(
        backend="llamacpp", generation={"max_tokens": 32},
        conversations={"rewrite": rewrite, "rewrite_max_tokens": 32, "rewrite_timeout_s": 120},
    )
    services = Services.assemble(settings, Store(settings.data_dir), embedder, llama)
    try:
        async with AsyncTestClient(app=create_app(settings, services)) as c:
            sources, done = await two_turns(c)
    finally:
        services.store.close()
    assert "it/vpn.md" in paths(sources), done["query"]
    assert done["model"] == llama.model and done["completion_tokens"] > 0
    if rewrite == "auto":
        assert done["query_rewrite"] == "fallback"
    else:
        assert done["query_rewrite"] in ("model", "fallback") and done["timings"]["rewrite_ms"] > 0
    print(f"rewrite={rewrite}: {done['query_rewrite']} -> {done['query']!r} in {done['timings']['rewrite_ms']} ms")


# --- `assistant chat` -----------------------------------------------------------------------------


def chat(data: Path, stdin: str, *args: str) -> subprocess.CompletedProcess:
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONPATH=pythonpath, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "assistant.cli", "chat", "--data-dir", str(data), "--backend", "echo", "-k", "1", *args],
        input=stdin, capture_output=True, text=True, timeout=300, env=env, cwd=data.parent,
    )


@pytest.mark.slow
def test_assistant_chat_keeps_and_resumes_the_conversation(data_dir):
    out = chat(data_dir, f"{FIRST}\n\n{FOLLOW_UP}\n/quit\nnot asked\n", "--collection", "it")
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"Echo: {FOLLOW_UP} [1]" in out.stdout
    follow_up_part = out.stdout.split(f"Echo: {FOLLOW_UP}")[1]
    assert "it/vpn.md" in follow_up_part and "it/passwords.md" not in follow_up_part
    assert "not asked" not in out.stdout

    store = Store(data_dir)
    try:
        from indexes.conversations import list_conversations

        (conv,), _ = list_conversations(store.engine)
        assert [t.question for t in list_turns(store.engine, conv.id)] == [FIRST, FOLLOW_UP]
        assert json.loads(conv.collections) == ["it"]
    finally:
        store.close()

    # A new process resumes it (no --collection: the conversation's own), and the input ends with Ctrl-D.
    again = chat(data_dir, "Who do I ask about it?\n", "--conversation", str(conv.id))
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"Resuming conversation {conv.id}" in again.stdout and "Echo: Who do I ask about it? [1]" in again.stdout
    store = Store(data_dir)
    try:
        assert len(list_turns(store.engine, conv.id)) == 3
    finally:
        store.close()

    bad = chat(data_dir, "", "--conversation", "999")
    assert bad.returncode == 2 and "unknown conversation" in bad.stderr
    bad = chat(data_dir, "", "--collection", "nope")
    assert bad.returncode == 2 and "unknown collection" in bad.stderr
