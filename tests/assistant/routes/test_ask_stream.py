"""POST /api/ask over real HTTP: the retrieved sources go out before the first token, and a client that
closes the stream mid-answer leaves its turn stored as "stopped" with what had streamed and its sources."""

from __future__ import annotations

import httpx
import pytest

from assistant.app import create_app
from evals.local_server import serve_in_thread
from tests.support.sse import iter_sse, parse_sse
from tests.support.stores import write_pages
from tests.support.wait import wait_until

PAGES = {
    "travel/booking.md": ("Booking travel", "Book flights through the travel desk at least 14 days before departure."),
    "leave/vacation.md": ("Vacation", "Annual leave accrues at four hours per pay period."),
    "tools/laptops.md": ("Laptops", "New staff receive a laptop on their first day from the IT help desk."),
}
QUESTION = "How early must flights be booked?"
# Cites its source in the third word, then goes on long enough (60 words) to be stopped half-way.
REPLY = "Book early [1] " + " ".join(["and keep the travel desk informed"] * 10)


@pytest.fixture
def server(settings_factory, make_services, embedder):
    """The app on a real port; its echo backend streams REPLY to QUESTION, a word every 50 ms."""
    settings = settings_factory(retrieval={"k": 3}, echo={"delay_s": 0.05, "replies": {QUESTION: REPLY}})
    services = make_services(settings, lambda store: write_pages(store, embedder, "handbook", PAGES, headings=True))
    with serve_in_thread(create_app(settings, services)) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        yield http


def without_support(sources: list[dict]) -> list[dict]:
    return [{k: v for k, v in s.items() if k != "support"} for s in sources]


def test_the_retrieved_sources_come_before_the_first_token(server):
    r = server.post("/api/ask", json={"question": QUESTION, "collection": "handbook"})
    assert r.status_code == 200, r.text
    events = parse_sse(r.text)
    kinds = [k for k, _ in events]
    assert kinds[:2] == ["retrieved", "token"] and kinds[-2:] == ["sources", "done"], kinds
    assert kinds.count("retrieved") == 1
    retrieved, final = events[0][1]["sources"], events[-2][1]["sources"]
    assert [s["n"] for s in retrieved] == [1, 2, 3], "in prompt order"
    assert not any(s["cited"] for s in retrieved) and all("support" not in s for s in retrieved)
    assert retrieved[0]["path"] == "travel/booking.md" and retrieved[0]["url"] == f"/api/chunks/{retrieved[0]['chunk_id']}"
    by_n = {s["n"]: dict(s, cited=False) for s in without_support(final)}
    assert retrieved == [by_n[n] for n in (1, 2, 3)], "the same sources as the final event, none cited yet"


def test_a_client_that_closes_the_stream_mid_answer_leaves_a_stopped_turn(server):
    conv = server.post("/api/conversations", json={"collections": ["handbook"]}).json()
    seen: list[tuple[str, dict]] = []
    with server.stream("POST", "/api/ask", json={"question": QUESTION, "conversation_id": conv["id"]}) as r:
        assert r.status_code == 200
        for event in iter_sse(r.iter_lines()):
            seen.append(event)
            if event[0] == "retrieved":
                # Named after its question while the answer is still being written, with no turn yet.
                listed = server.get(f"/api/conversations/{conv['id']}").json()
                assert (listed["title"], listed["turns"]) == (QUESTION, [])
            if sum(k == "token" for k, _ in seen) == 4:
                break  # the client leaves: the response is closed mid-answer
    streamed = "".join(d["text"] for k, d in seen if k == "token")
    assert "[1]" in streamed

    turns = wait_until(lambda: server.get(f"/api/conversations/{conv['id']}").json()["turns"], timeout=30,
                       what="the stopped turn stored")
    (turn,) = turns
    assert turn["status"] == "stopped" and turn["question"] == QUESTION
    assert turn["answer"].startswith(streamed.strip()) and len(turn["answer"]) < len(REPLY)
    assert seen[0][0] == "retrieved"
    retrieved = seen[0][1]["sources"]
    assert sorted(turn["sources"], key=lambda s: s["n"]) == [dict(s, cited=s["n"] == 1) for s in retrieved]
    assert turn["sources"][0]["n"] == 1, "the source the partial answer cites comes first"
    wait_until(lambda: server.get("/api/status").json()["backend"]["in_flight"], accept=lambda n: n == 0, timeout=30,
               what="the server ending the answer")

    # The next answer in the conversation ends: stored as done, after the stopped one.
    r = server.post("/api/ask", json={"question": "And hotels?", "conversation_id": conv["id"]})
    done = parse_sse(r.text)[-1]
    assert done[0] == "done", done
    statuses = [t["status"] for t in server.get(f"/api/conversations/{conv['id']}").json()["turns"]]
    assert statuses == ["stopped", "done"]
