"""Another answer to a conversation's last question: regenerated or edited and sent again through
`/api/ask` with `regenerate_of`. Every answer is kept, the conversation lists them as variants of one
turn, and the history of later questions holds each question once, by its latest answer.

The corpus is the one of test_conversations: "How do I reset it?" after a question about the VPN client
searches for the VPN client, so the follow-up's search query shows which question the history held.
"""

from __future__ import annotations

import pytest

from assistant.answers.conversation import history_for
from assistant.answers.conversation import fallback_query
from indexes.apikeys import create_key
from indexes.conversations import list_turns
from tests.support.sse import parse_sse
from tests.support.stores import write_pages

PAGES = {
    "it/vpn.md": ("VPN client", "The VPN client connects your laptop to the office network from home. If the VPN "
                                "client stops connecting, reset it by importing its profile again from the IT portal."),
    "it/passwords.md": ("Resetting your password", "To reset a forgotten password, open the password reset page and "
                                                   "follow the reset link sent to your email."),
    "office/printers.md": ("Printers", "Printers on every floor print double-sided by default; collect your pages "
                                       "with your badge."),
}
VPN = "How does the VPN client connect to the office network?"
PRINTERS = "Where do I collect my printed pages?"
FOLLOW_UP = "How do I reset it?"


@pytest.fixture
def services(settings_factory, make_services, embedder):
    return make_services(settings_factory(), lambda store: write_pages(store, embedder, "it", PAGES, headings=True))


async def ask(client, headers: dict | None = None, **body) -> dict:
    """The done event of one /api/ask (asserted to be done)."""
    r = await client.post("/api/ask", json=body, headers=headers or {})
    assert r.status_code == 200, r.text
    events = parse_sse(r.text)
    assert events[-1][0] == "done", events[-1]
    return events[-1][1]


async def new_conversation(client, headers: dict | None = None) -> int:
    r = await client.post("/api/conversations", json={"collections": ["it"]}, headers=headers or {})
    assert r.status_code == 201, r.text
    return r.json()["id"]


async def read(client, conversation_id: int, headers: dict | None = None) -> dict:
    r = await client.get(f"/api/conversations/{conversation_id}", headers=headers or {})
    assert r.status_code == 200, r.text
    return r.json()


async def test_regenerate_keeps_both_answers_and_the_history_holds_the_question_once(client, services):
    conv = await new_conversation(client)
    first = await ask(client, question=VPN, conversation_id=conv, k=1)
    again = await ask(client, question=VPN, conversation_id=conv, k=1, regenerate_of=first["turn_id"])
    assert again["turn_id"] > first["turn_id"]
    assert again["query_rewrite"] == "none", "the answer being replaced is not in its own history"

    (turn,) = (await read(client, conv))["turns"]
    assert (turn["id"], turn["variant_of"], turn["question"]) == (again["turn_id"], first["turn_id"], VPN)
    (earlier,) = turn["variants"]
    assert (earlier["id"], earlier["variant_of"], earlier["answer"]) == (first["turn_id"], None, first["answer"])
    assert turn["answer"] == again["answer"] and "variants" not in earlier
    assert [t.id for t in list_turns(services.store.engine, conv)] == [first["turn_id"], again["turn_id"]]

    # A third answer, asked of the second: it joins the same group, the first turn's.
    third = await ask(client, question=VPN, conversation_id=conv, k=1, regenerate_of=again["turn_id"])
    (turn,) = (await read(client, conv))["turns"]
    assert turn["id"] == third["turn_id"] and turn["variant_of"] == first["turn_id"]
    assert [v["id"] for v in turn["variants"]] == [first["turn_id"], again["turn_id"]]

    history = history_for(services.store.engine, conv)
    assert history == [{"role": "user", "content": VPN}, {"role": "assistant", "content": third["answer"]}]
    follow = await ask(client, question=FOLLOW_UP, conversation_id=conv, k=1)
    assert follow["query"] == fallback_query(FOLLOW_UP, VPN)
    assert [t["id"] for t in (await read(client, conv))["turns"]] == [third["turn_id"], follow["turn_id"]]


async def test_an_edited_question_is_a_variant_and_the_next_question_follows_it(client, services):
    conv = await new_conversation(client)
    first = await ask(client, question=PRINTERS, conversation_id=conv, k=1)
    edited = await ask(client, question=VPN, conversation_id=conv, k=1, regenerate_of=first["turn_id"])
    assert edited["query_rewrite"] == "none" and edited["answer"] == f"Echo: {VPN} [1]"

    (turn,) = (await read(client, conv))["turns"]
    assert (turn["question"], turn["variants"][0]["question"]) == (VPN, PRINTERS)

    # The follow-up's history holds the edited question, not the printers one: "it" is the VPN client.
    follow = await ask(client, question=FOLLOW_UP, conversation_id=conv, k=1)
    assert follow["query"] == fallback_query(FOLLOW_UP, VPN)
    sources = (await read(client, conv))["turns"][-1]["sources"]
    assert sources[0]["path"] == "it/vpn.md"
    assert "printers" not in follow["query"].lower()


async def test_only_the_last_question_may_be_answered_again(client, services):
    conv = await new_conversation(client)
    first = await ask(client, question=VPN, conversation_id=conv, k=1)
    second = await ask(client, question=FOLLOW_UP, conversation_id=conv, k=1)
    other = await new_conversation(client)
    elsewhere = await ask(client, question=PRINTERS, conversation_id=other, k=1)

    cases = [
        ({"regenerate_of": first["turn_id"]}, 409, "turn_not_last", "only the last question may be regenerated or edited"),
        ({"regenerate_of": elsewhere["turn_id"]}, 404, "turn_not_found", f"has no turn {elsewhere['turn_id']}"),
        ({"regenerate_of": 987654}, 404, "turn_not_found", "has no turn 987654"),
    ]
    for extra, status, code, words in cases:
        r = await client.post("/api/ask", json={"question": VPN, "conversation_id": conv, "k": 1, **extra})
        assert r.status_code == status, r.text
        assert r.json()["code"] == code and words in r.json()["detail"], r.text
    r = await client.post("/api/ask", json={"question": VPN, "collection": "it", "regenerate_of": second["turn_id"]})
    assert r.status_code == 400 and "conversation_id" in r.json()["detail"]

    assert [t.id for t in list_turns(services.store.engine, conv)] == [first["turn_id"], second["turn_id"]], \
        "a refused request records nothing"
    # A variant of the last question is itself of the last question: it may be answered again.
    again = await ask(client, question=FOLLOW_UP, conversation_id=conv, k=1, regenerate_of=second["turn_id"])
    await ask(client, question=FOLLOW_UP, conversation_id=conv, k=1, regenerate_of=again["turn_id"])


async def test_another_keys_turn_cannot_be_answered_again(client, services):
    engine = services.store.engine
    alice = {"Authorization": f"Bearer {create_key(engine, 'alice', ['ask'], ['it'])[1]}"}
    bob = {"Authorization": f"Bearer {create_key(engine, 'bob', ['ask'], ['it'])[1]}"}
    hers = await new_conversation(client, alice)
    turn = await ask(client, alice, question=VPN, conversation_id=hers, k=1)
    his = await new_conversation(client, bob)

    r = await client.post("/api/ask", headers=bob,
                          json={"question": VPN, "conversation_id": hers, "regenerate_of": turn["turn_id"]})
    assert r.status_code == 403 and "another key" in r.json()["detail"]
    r = await client.post("/api/ask", headers=bob,
                          json={"question": VPN, "conversation_id": his, "regenerate_of": turn["turn_id"]})
    assert r.status_code == 404 and r.json()["code"] == "turn_not_found"
    assert [t["id"] for t in (await read(client, hers, alice))["turns"]] == [turn["turn_id"]]
    assert (await read(client, hers, alice))["turns"][0]["variants"] == []
