"""Every door that answers a question goes through the one ask use case (answers/ask.py): the same question
gives the same answer text, sources and check on /api/ask, /v1, the MCP `ask` tool and `assistant ask`;
each door counts the answer in the server's metrics once; and an unknown document, conversation or
collection is refused with the same code on every door."""

from __future__ import annotations

import argparse
import asyncio
import json
import re

import pytest

from assistant.commands.query import run_ask
from assistant.mcp_api import tools
from assistant.mcp_api.tools import ToolCallError
from assistant.security.access import LOCAL_USER
from tests.support.documents import GUIDE, copy_store, documents_template
from tests.support.sse import parse_sse

QUESTION = "When is the email account ready?"


@pytest.fixture(scope="module")
def template(tmp_path_factory, embedder):
    return documents_template(tmp_path_factory.mktemp("documents") / "data", embedder)


@pytest.fixture
def services(settings_factory, make_services, template):
    settings = settings_factory(echo={"context_window": 2048})
    copy_store(template, settings.data_dir)
    return make_services(settings)


def comparable(sources: list[dict]) -> list[tuple]:
    """What every door shows of each source, whatever else its shape adds."""
    return [(s["chunk_id"], s["path"], s["n"], s["cited"], (s.get("support") or {}).get("score")) for s in sources]


async def answers_done(client) -> float:
    text = (await client.get("/metrics")).text
    found = re.search(r'^assistant_answers_total\{outcome="done"\} ([0-9.]+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


async def cli_ask(settings, capsys, *extra: str) -> tuple[int, dict | str]:
    """`assistant ask --json` as the command runs it (its own services and event loop, in a thread here)."""
    args = argparse.Namespace(question=QUESTION, collection=["handbook"], k=None, path=[], kind=[], document=None,
                              json=True)
    for flag, value in zip(extra[::2], extra[1::2]):
        setattr(args, flag, value)
    code = await asyncio.to_thread(run_ask, args, settings)
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else err)


async def test_the_same_question_gets_the_same_answer_on_every_door(client, services, capsys):
    counted = await answers_done(client)

    events = dict(parse_sse((await client.post("/api/ask", json={"question": QUESTION, "collection": "handbook"})).text))
    assert await answers_done(client) == counted + 1
    rest = (await client.post("/v1/chat/completions", json={
        "model": "rag:handbook", "messages": [{"role": "user", "content": QUESTION}]})).json()
    assert await answers_done(client) == counted + 2
    mcp = await tools.ask(services, LOCAL_USER, QUESTION, collection="handbook")
    assert await answers_done(client) == counted + 3, "the MCP tool is counted like the other doors"
    code, cli = await cli_ask(services.settings, capsys)
    assert code == 0

    answer = events["done"]["answer"]
    assert answer.startswith("Echo:")
    assert rest["choices"][0]["message"]["content"] == mcp["answer"] == cli["answer"] == answer
    shown = comparable(events["sources"]["sources"])
    assert shown and comparable(rest["sources"]) == comparable(mcp["sources"]) == comparable(cli["sources"]) == shown
    assert rest["check"] == mcp["check"] == cli["check"] == events["done"]["check"]


async def test_unknown_things_are_refused_with_one_code_on_every_door(client, services, capsys):
    cases = {
        "collection_not_found": ({"collection": "nowhere"}, {"model": "rag:nowhere"}, {"collection": "nowhere"},
                                 ("collection", ["nowhere"])),
        "document_not_found": ({"collection": "handbook", "document": "nope.md"},
                               {"model": "rag:handbook", "document": "nope.md"},
                               {"collection": "handbook", "document": "nope.md"}, ("document", "nope.md")),
    }
    for code, (api, v1, mcp, cli) in cases.items():
        r = await client.post("/api/ask", json={"question": QUESTION, **api})
        assert (r.status_code, r.json()["code"]) == (404, code)
        r = await client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": QUESTION}], **v1})
        assert (r.status_code, r.json()["error"]["code"]) == (404, code)
        with pytest.raises(ToolCallError, match=rf"\({code}\)$"):
            await tools.ask(services, LOCAL_USER, QUESTION, **mcp)
        status, err = await cli_ask(services.settings, capsys, *cli)
        assert status == 2 and f"({code})" in err

    # A conversation: the HTTP doors take its id (the terminal's `chat` resumes one by id, refused the same).
    r = await client.post("/api/ask", json={"question": QUESTION, "conversation_id": 987654})
    assert (r.status_code, r.json()["code"]) == (404, "conversation_not_found")
    r = await client.post("/v1/chat/completions", json={
        "model": "rag:handbook", "messages": [{"role": "user", "content": QUESTION}], "conversation_id": 987654})
    assert (r.status_code, r.json()["error"]["code"]) == (404, "conversation_not_found")


async def test_a_question_about_one_document_is_the_same_on_every_door(client, services):
    events = dict(parse_sse((await client.post("/api/ask", json={
        "question": QUESTION, "collection": "handbook", "document": GUIDE})).text))
    mcp = await tools.ask(services, LOCAL_USER, QUESTION, collection="handbook", document=GUIDE)
    rest = (await client.post("/v1/chat/completions", json={
        "model": f"rag:handbook/{GUIDE}", "messages": [{"role": "user", "content": QUESTION}]})).json()
    assert events["done"]["document_mode"] == mcp["document_mode"] == rest["document_mode"] == "whole"
    assert events["done"]["answer"] == mcp["answer"] == rest["choices"][0]["message"]["content"]


def test_an_outcome_keeps_what_the_engine_had_kept_of_the_prompt():
    from assistant.answers.ask import Outcome
    from assistant.answers.events import Progress, Token

    got = Outcome()
    for event in (Progress(244, 1022, 244), Progress(756, 1022, 244), Progress(1022, 1022, 244), Token("Yes.")):
        got.take(event)
    assert got.prompt_cached == 244 and got.text == "Yes."
    assert Outcome().prompt_cached is None  # no progress asked for: nothing known
