"""Answers of a conversation that end before `done`: a failed one is stored as "error" with what had
streamed, and the history of a follow-up keeps a stopped turn's partial answer but leaves failed turns out."""

from __future__ import annotations

import json

from assistant.answers.ask import InFlight, Uncounted, passed
from assistant.answers.conversation import ConversationTurn, history_for
from assistant.answers.events import Event, Failed, Retrieved, Token
from assistant.backends.factory import create_backend
from indexes.conversations import add_turn, create_conversation, get_conversation, list_turns

RETRIEVED = [
    {"n": 1, "cited": False, "path": "travel/booking.md", "title": "Booking travel"},
    {"n": 2, "cited": False, "path": "leave/vacation.md", "title": "Vacation"},
]


async def stream_of(*events: Event):
    for event in events:
        yield event


async def test_an_error_event_stores_the_turn_with_what_had_streamed(store, settings_factory):
    settings = settings_factory()
    conv = create_conversation(store.engine, "", ["handbook"])
    turn = ConversationTurn.open(store.engine, conv.id)
    await turn.standalone_query(create_backend(settings), "When does leave accrue?", settings.conversations)
    events = stream_of(
        Retrieved(RETRIEVED), Token("Leave accrues"), Token(" per pay period [2]"),
        Failed("the backend failed", "backend_error"),
    )
    passed_on = [e async for e in passed(events, turn, Uncounted(), InFlight())]

    assert [e.type for e in passed_on] == ["retrieved", "token", "token", "error"], "the events pass unchanged"
    (stored,) = list_turns(store.engine, conv.id)
    assert (stored.status, stored.answer, stored.question) == ("error", "Leave accrues per pay period [2]", "When does leave accrue?")
    assert json.loads(stored.sources) == [dict(RETRIEVED[1], cited=True), RETRIEVED[0]], "cited by the partial text, first"
    assert get_conversation(store.engine, conv.id).title == "When does leave accrue?"


def test_the_history_keeps_a_stopped_partial_answer_and_leaves_failed_turns_out(store):
    conv = create_conversation(store.engine, "", [])
    add_turn(store.engine, conv.id, question="How early?", query="How early?", answer="14 days [1].", sources=[])
    add_turn(store.engine, conv.id, question="And hotels?", query="And hotels?", answer="Hotels need", sources=[],
             status="stopped")
    add_turn(store.engine, conv.id, question="And trains?", query="And trains?", answer="Trains", sources=[],
             status="error")
    assert history_for(store.engine, conv.id) == [
        {"role": "user", "content": "How early?"}, {"role": "assistant", "content": "14 days [1]."},
        {"role": "user", "content": "And hotels?"}, {"role": "assistant", "content": "Hotels need"},
    ]
