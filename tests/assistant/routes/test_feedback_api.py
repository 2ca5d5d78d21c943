"""Feedback on answers: a conversation's owner puts, replaces and clears a judgement of a turn; the
conversation lists it with the turn; an admin exports the judged answers with their sources, through
`GET /api/feedback` and `assistant feedback export`."""

from __future__ import annotations

import json

import pytest

from assistant.cli import main
from indexes.apikeys import create_key
from indexes.feedback import MAX_COMMENT_CHARS
from indexes.location import Location
from indexes.store import NewChunk, SourceInfo
from tests.support.sse import parse_sse

ROOT_TEXT = {
    "travel.md": ("Travel", "# Travel\n\nBook flights through the travel desk\nat least 14 days before departure.\n"),
    "expenses.md": ("Expenses", "# Expenses\n\nClaim expenses within 30 days\nwith the receipts attached.\n"),
}
QUESTION = "How early do I book flights?"


@pytest.fixture
def services(settings_factory, make_services, embedder):
    def fill(store):
        coll = store.ensure_collection("handbook", embedder.name, embedder.dim)
        for path, (title, text) in ROOT_TEXT.items():
            body = text.split("\n\n", 1)[1]
            chunk = NewChunk(text=body, location=Location(heading_path=title, line_start=3, line_end=4))
            store.write_document(coll, SourceInfo(path=path, title=title, kind="md"), [chunk], embedder.embed([body]))

    return make_services(settings_factory(), fill)


async def asked(client, headers: dict | None = None) -> tuple[int, int]:
    """A new conversation with one answered question: (conversation id, turn id)."""
    conv = (await client.post("/api/conversations", json={"collections": ["handbook"]}, headers=headers or {})).json()
    r = await client.post("/api/ask", json={"question": QUESTION, "conversation_id": conv["id"], "k": 2},
                          headers=headers or {})
    done = parse_sse(r.text)[-1]
    assert done[0] == "done", r.text
    return conv["id"], done[1]["turn_id"]


def feedback_url(conversation_id: int, turn_id: int) -> str:
    return f"/api/conversations/{conversation_id}/turns/{turn_id}/feedback"


async def listed_feedback(client, conversation_id: int) -> dict | None:
    (turn,) = (await client.get(f"/api/conversations/{conversation_id}")).json()["turns"]
    return turn["feedback"]


async def test_feedback_is_put_replaced_and_cleared(client):
    conv, turn = await asked(client)
    assert await listed_feedback(client, conv) is None

    r = await client.put(feedback_url(conv, turn), json={"rating": 1})
    assert r.status_code == 200, r.text
    assert r.json()["feedback"]["rating"] == 1 and r.json()["feedback"]["comment"] == ""
    listed = await listed_feedback(client, conv)
    assert (listed["rating"], listed["comment"]) == (1, "")

    r = await client.put(feedback_url(conv, turn), json={"rating": -1, "comment": "  It cites the wrong page.  "})
    assert r.status_code == 200, r.text
    listed = await listed_feedback(client, conv)
    assert (listed["rating"], listed["comment"]) == (-1, "It cites the wrong page.")
    exported = (await client.get("/api/feedback")).json()
    assert [(row["turn_id"], row["rating"]) for row in exported] == [(turn, -1)], "replaced, not added to"

    r = await client.delete(feedback_url(conv, turn))
    assert r.status_code == 200 and r.json() == {"turn_id": turn, "feedback": None, "cleared": True}
    assert await listed_feedback(client, conv) is None
    assert (await client.delete(feedback_url(conv, turn))).json()["cleared"] is False
    assert (await client.get("/api/feedback")).json() == []


@pytest.mark.parametrize("body, code, words", [
    ({"rating": 0}, "invalid_rating", "the rating is 1 (thumbs up) or -1 (thumbs down), not 0"),
    ({"rating": 2, "comment": "great"}, "invalid_rating", "not 2"),
    ({"rating": True}, "invalid_request", "rating"),
    ({"rating": "1"}, "invalid_request", "rating"),
    ({"rating": -1, "comment": "x" * (MAX_COMMENT_CHARS + 1)}, "comment_too_long",
     f"the comment is too long: {MAX_COMMENT_CHARS + 1} characters, at most {MAX_COMMENT_CHARS}"),
    ({"comment": "no rating"}, "invalid_request", "rating"),
])
async def test_a_bad_judgement_is_a_400_that_says_what_is_wrong(client, body, code, words):
    conv, turn = await asked(client)
    r = await client.put(feedback_url(conv, turn), json=body)
    assert r.status_code == 400, r.text
    assert r.json()["code"] == code and words in json.dumps(r.json()), r.text
    if code == "comment_too_long":
        assert r.json()["extra"] == {"length": MAX_COMMENT_CHARS + 1, "limit": MAX_COMMENT_CHARS}
    assert await listed_feedback(client, conv) is None, "a refused judgement stores nothing"


async def test_only_the_owner_judges_a_turn_of_this_conversation(client, services):
    engine = services.store.engine
    alice = {"Authorization": f"Bearer {create_key(engine, 'alice', ['ask'], ['handbook'])[1]}"}
    bob = {"Authorization": f"Bearer {create_key(engine, 'bob', ['ask'], ['handbook'])[1]}"}
    hers, her_turn = await asked(client, alice)
    his, his_turn = await asked(client, bob)

    r = await client.put(feedback_url(hers, her_turn), json={"rating": -1}, headers=bob)
    assert r.status_code == 403 and "another key" in r.json()["detail"]
    r = await client.delete(feedback_url(hers, her_turn), headers=bob)
    assert r.status_code == 403
    r = await client.put(feedback_url(his, her_turn), json={"rating": -1}, headers=bob)
    assert r.status_code == 404 and r.json()["code"] == "turn_not_found"
    assert (await client.get("/api/feedback", headers=bob)).status_code == 403, "the export is the admin's"
    assert (await client.put(feedback_url(his, his_turn), json={"rating": 1}, headers=bob)).status_code == 200


async def test_the_export_lists_judged_answers_with_their_sources(client, services, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")  # the table's cells whole on one line each
    down_conv, down_turn = await asked(client)
    up_conv, up_turn = await asked(client)
    await asked(client)  # not judged: not exported
    await client.put(feedback_url(down_conv, down_turn), json={"rating": -1, "comment": "Too vague."})
    await client.put(feedback_url(up_conv, up_turn), json={"rating": 1})

    rows = (await client.get("/api/feedback")).json()
    assert [(r["conversation_id"], r["turn_id"], r["rating"]) for r in rows] == [(up_conv, up_turn, 1), (down_conv, down_turn, -1)]
    down = rows[1]
    assert (down["question"], down["status"], down["comment"]) == (QUESTION, "done", "Too vague.")
    assert down["answer"] == f"Echo: {QUESTION} [1]" and down["created_at"].endswith("+00:00")
    cited = [s for s in down["sources"] if s["cited"]]
    assert [s["path"] for s in cited] == ["travel.md"]
    assert cited[0] == {"n": 1, "path": "travel.md", "heading": "Travel", "line_start": 3, "line_end": 4,
                        "page": None, "cited": True}
    assert {s["path"] for s in down["sources"]} == {"travel.md", "expenses.md"}

    assert [r["turn_id"] for r in (await client.get("/api/feedback", params={"rating": -1})).json()] == [down_turn]
    assert (await client.get("/api/feedback", params={"since": "2999-01-01"})).json() == []
    assert len((await client.get("/api/feedback", params={"since": "2000-01-01T00:00:00+02:00"})).json()) == 2
    for params, words in (({"rating": 0}, "`rating` is 1 or -1"), ({"since": "last week"}, "ISO-8601")):
        r = await client.get("/api/feedback", params=params)
        assert r.status_code == 400 and words in r.json()["detail"], r.text

    # The command reads the same rows from the store.
    data_dir = str(services.settings.data_dir)
    assert main(["feedback", "export", "--json", "--rating", "-1", "--data-dir", data_dir]) == 0
    assert json.loads(capsys.readouterr().out) == [rows[1]]
    assert main(["feedback", "export", "--data-dir", data_dir]) == 0
    table = capsys.readouterr().out
    assert "Too vague." in table and f"{down_conv}/{down_turn}" in table and "travel.md" in table
    assert main(["feedback", "export", "--since", "2999-01-01", "--data-dir", data_dir]) == 0
    assert "no judged answers" in capsys.readouterr().out
    assert main(["feedback", "export", "--since", "soon", "--data-dir", data_dir]) == 2
    assert "ISO-8601" in capsys.readouterr().err
