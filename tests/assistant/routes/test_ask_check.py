"""POST /api/ask: the final events carry the check of the answer's citations (each source's `support`,
`done.check`), a replaced answer keeps the model's text in `model_answer`, and a saved conversation
stores the answer the user saw last."""

from __future__ import annotations

import pytest
from litestar.testing import AsyncTestClient

from assistant.app import create_app
from assistant.answers.support import NOT_IN_DOCUMENTS
from assistant.backends.factory import create_backend
from assistant.services import Services
from indexes.store import Store
from tests.support.sse import parse_sse
from tests.support.stores import write_pages

PAGES = {
    "travel/booking.md": ("Booking travel", "Book flights through the travel desk at least 14 days before departure."),
    "tools/laptops.md": ("Laptops", "New staff receive a laptop on their first day from the IT help desk."),
}
SUPPORTED = "How early must flights be booked?"
UNSUPPORTED = "What does the canteen serve on Fridays?"
REPLIES = {  # what the echo backend answers
    SUPPORTED: "Book flights through the travel desk 14 days before departure [1].",
    UNSUPPORTED: "The canteen serves pizza on Fridays [1].",
}


@pytest.fixture
def make_client(settings_factory, embedder):
    """An in-process client over a fresh store of PAGES, with these settings' overrides."""
    opened: list[Services] = []

    def make(**overrides) -> AsyncTestClient:
        settings = settings_factory(retrieval={"k": 2}, echo={"replies": REPLIES}, **overrides)
        store = Store(settings.data_dir)
        if store.get_collection("handbook") is None:
            write_pages(store, embedder, "handbook", PAGES, headings=True)
        services = Services.assemble(settings, store, embedder, create_backend(settings))
        opened.append(services)
        return AsyncTestClient(app=create_app(settings, services))

    yield make
    for services in opened:
        services.store.close()


async def ask(client, **body) -> tuple[list[dict], dict]:
    r = await client.post("/api/ask", json={"collection": "handbook", **body})
    assert r.status_code == 200, r.text
    events = parse_sse(r.text)
    assert [name for name, _ in events][-2:] == ["sources", "done"], events[-1]
    return events[-2][1]["sources"], events[-1][1]


async def test_the_final_events_carry_each_citation_s_support(make_client):
    async with make_client() as client:
        sources, done = await ask(client, question=SUPPORTED)
    assert done["answer"] == REPLIES[SUPPORTED]
    cited, other = sources
    assert cited["cited"] and cited["support"]["supported"] is True
    text = PAGES["travel/booking.md"][1]
    assert cited["support"]["span"] == {"char_start": 0, "char_end": len(text), "line_start": None, "line_end": None,
                                        "page": None}
    assert other["support"] is None
    check = done["check"]
    assert set(check) == {"sentences", "citation_precision", "citation_coverage", "abstained", "unsupported", "replaced",
                          "empty", "attributed", "off_topic", "contradicted", "unknown_names", "no_quantity", "quotes"}
    assert check["sentences"][0] | {"score": None} == {"start": 0, "end": len(done["answer"]), "cited": [1],
                                                        "claim": True, "supported": True, "score": None}
    assert (check["citation_precision"], check["citation_coverage"], check["replaced"]) == (1.0, 1.0, False)


async def test_an_unsupported_answer_is_replaced_when_the_setting_is_on(make_client):
    async with make_client(generation={"replace_unsupported": "on"}) as client:
        sources, done = await ask(client, question=UNSUPPORTED)
        assert done["answer"] == NOT_IN_DOCUMENTS["en"] and done["model_answer"] == REPLIES[UNSUPPORTED]
        assert done["check"]["unsupported"] and done["check"]["replaced"]
        assert sources[0]["support"]["supported"] is False

        conv = (await client.post("/api/conversations", json={"collections": ["handbook"]})).json()
        _, done = await ask(client, question=UNSUPPORTED, conversation_id=conv["id"])
        assert done["answer"] == NOT_IN_DOCUMENTS["en"] and done["conversation_id"] == conv["id"]
        (turn,) = (await client.get(f"/api/conversations/{conv['id']}")).json()["turns"]
    assert turn["answer"] == NOT_IN_DOCUMENTS["en"]  # what the user saw last
    assert turn["sources"][0]["support"]["supported"] is False


async def test_replacing_off_keeps_the_model_s_answer(make_client):
    async with make_client(generation={"replace_unsupported": "off"}) as client:
        _, done = await ask(client, question=UNSUPPORTED)
    assert done["answer"] == REPLIES[UNSUPPORTED] and "model_answer" not in done
    assert done["check"]["unsupported"] is True and done["check"]["replaced"] is False
