"""An answer checked against its sources, without HTTP: each source's `support` (with the span mapped to
the chunk's lines or page), the `check` of `done`, and the replacement of an unsupported answer. The echo
backend streams the fixed replies of REPLIES, so each answer is known."""

from __future__ import annotations

import pytest

from assistant.answers.ask import InFlight, Uncounted, passed
from assistant.answers.conversation import ConversationTurn
from assistant.answers.rag import AnswerPolicy, prepare, replaces_unsupported
from tests.support.answering import answer
from assistant.answers.support import NO_ANSWER, NOT_IN_DOCUMENTS
from assistant.backends.factory import create_backend
from indexes.conversations import create_conversation, list_turns
from indexes.location import Location
from indexes.retrieval.retriever import Retriever
from indexes.store import NewChunk, SourceInfo

BOOKING = (
    "# Booking travel\n"
    "Book flights through the travel desk at least 14 days before departure.\n"
    "Hotels need the approval of your manager."
)
LAPTOPS = "New staff receive a laptop on their first day from the IT help desk."
FLIGHTS = "How early must flights be booked?"
LAPTOP = "Who hands out laptops to new staff?"
CANTEEN = "What does the canteen serve on Fridays?"
CANTEEN_ZH = "食堂周五供应什么？"
MIXED = "What are the rules for booking flights and hotels?"
HOTELS = "Who approves hotel bookings?"
SILENT = "Where are flights booked?"  # the model ends without a word
SILENT_ZH = "在哪里订机票？"
REPLIES = {
    HOTELS: "Hotels need the approval of your manager.",
    SILENT: "",
    SILENT_ZH: "",
    FLIGHTS: "Book flights through the travel desk 14 days before departure. [1]",
    LAPTOP: "New staff receive a laptop from the IT help desk on their first day [1].",
    CANTEEN: "The canteen serves pizza on Fridays [1].",
    CANTEEN_ZH: "食堂每周五供应披萨。[1]",
    MIXED: "Flights are booked through the travel desk 14 days before departure [1]. Hotels need your manager's "
           "approval [1]. Flights are booked in first class [1]. Ask your team lead.",
}


@pytest.fixture
def retriever(store, embedder):
    coll = store.ensure_collection("handbook", embedder.name, embedder.dim)
    for path, text, where in (
        ("travel/booking.md", BOOKING, Location(heading_path="Booking travel", line_start=20, line_end=22)),
        ("manual.pdf", LAPTOPS, Location(page=4)),
    ):
        store.write_document(coll, SourceInfo(path=path, title=path, kind=path.rsplit(".", 1)[1]),
                             [NewChunk(text=text, location=where)], embedder.embed([text]))
    store.ensure_collection("empty", embedder.name, embedder.dim)
    return Retriever(store, embedder)


def settings_for(settings_factory, replace: str = "auto", k: int = 1):
    return settings_factory(retrieval={"k": k}, echo={"replies": REPLIES}, generation={"replace_unsupported": replace})


async def done_and_sources(question: str, retriever, settings, collection: str = "handbook") -> tuple[dict, list[dict]]:
    events = [e async for e in answer(question, collection, retriever=retriever, backend=create_backend(settings),
                                      policy=AnswerPolicy.of(settings))]
    assert [e.type for e in events][-2:] == ["sources", "done"], events[-1]
    return events[-1].data, events[-2].data["sources"]


async def test_a_supported_citation_carries_its_lines(retriever, settings_factory):
    done, sources = await done_and_sources(FLIGHTS, retriever, settings_for(settings_factory, k=2))
    assert done["answer"] == REPLIES[FLIGHTS] and "model_answer" not in done
    cited = sources[0]
    assert cited["n"] == 1 and cited["path"] == "travel/booking.md"
    support = cited["support"]
    assert support["supported"] is True and support["score"] >= 0.6
    span = support["span"]
    assert BOOKING[span["char_start"] : span["char_end"]] == (
        "Book flights through the travel desk at least 14 days before departure."
    )
    assert (span["line_start"], span["line_end"], span["page"]) == (21, 21, None)  # the chunk's second line
    assert [s["support"] for s in sources[1:]] == [None]  # not cited

    check = done["check"]
    assert check["sentences"] == [{"start": 0, "end": len(done["answer"]), "cited": [1], "claim": True,
                                   "supported": True, "score": support["score"]}]
    assert (check["citation_precision"], check["citation_coverage"]) == (1.0, 1.0)
    assert (check["abstained"], check["unsupported"], check["replaced"]) == (False, False, False)
    assert done["timings"]["check_ms"] >= 0


async def test_a_claim_without_a_marker_cites_the_source_that_says_it(retriever, settings_factory):
    done, sources = await done_and_sources(HOTELS, retriever, settings_for(settings_factory, k=2))
    n = next(s["n"] for s in sources if s["path"] == "travel/booking.md")
    assert done["answer"] == f"Hotels need the approval of your manager [{n}]."
    assert done["model_answer"] == REPLIES[HOTELS]  # what the token events streamed
    assert done["check"]["attributed"] == [{"start": 0, "end": len(done["answer"]), "was": [], "now": [n]}]
    assert done["check"]["citation_coverage"] == 1.0 and not done["check"]["replaced"]
    cited = [s for s in sources if s["cited"]]
    assert [s["path"] for s in cited] == ["travel/booking.md"] and cited[0]["support"]["supported"]


async def test_a_page_source_gives_its_page(retriever, settings_factory):
    done, sources = await done_and_sources(LAPTOP, retriever, settings_for(settings_factory))
    assert sources[0]["path"] == "manual.pdf" and sources[0]["support"]["supported"]
    span = sources[0]["support"]["span"]
    assert (span["page"], span["line_start"], span["line_end"]) == (4, None, None)


async def test_each_sentence_is_checked(retriever, settings_factory):
    done, sources = await done_and_sources(MIXED, retriever, settings_for(settings_factory, replace="on"))
    assert sources[0]["path"] == "travel/booking.md"
    check = done["check"]
    assert [(s["cited"], s["claim"], s["supported"]) for s in check["sentences"]] == [
        ([1], True, True), ([1], True, True), ([1], True, False), ([], True, None)
    ]
    assert check["citation_precision"] == pytest.approx(2 / 3, abs=1e-3)
    assert check["citation_coverage"] == 0.75
    assert done["answer"] == REPLIES[MIXED] and check["replaced"] is False  # some claims are supported
    first = check["sentences"][0]
    assert done["answer"][first["start"] : first["end"]].endswith("departure [1].")


async def test_an_unsupported_answer_is_kept_when_replacing_is_off(retriever, settings_factory):
    done, sources = await done_and_sources(CANTEEN, retriever, settings_for(settings_factory, replace="off"))
    assert done["answer"] == REPLIES[CANTEEN] and "model_answer" not in done
    assert sources[0]["support"]["supported"] is False
    assert sources[0]["support"]["span"]["char_start"] == -1  # nothing of the claim is in the source
    assert done["check"]["unsupported"] is True and done["check"]["replaced"] is False
    assert done["check"]["citation_precision"] == 0.0


@pytest.mark.parametrize("question, language", [(CANTEEN, "en"), (CANTEEN_ZH, "zh")])
async def test_an_unsupported_answer_is_replaced_in_the_question_language(retriever, settings_factory, question, language):
    done, sources = await done_and_sources(question, retriever, settings_for(settings_factory, replace="on"))
    assert done["answer"] == NOT_IN_DOCUMENTS[language]
    assert done["model_answer"] == REPLIES[question]
    assert done["check"]["replaced"] is True and sources[0]["support"]["supported"] is False


async def test_an_answer_from_no_source_is_replaced(retriever, settings_factory):
    done, sources = await done_and_sources(CANTEEN, retriever, settings_for(settings_factory, replace="on"), "empty")
    assert sources == []
    # the citation of a source that was not shown is dropped as the answer streams
    assert done["model_answer"] == "The canteen serves pizza on Fridays ." and done["answer"] == NOT_IN_DOCUMENTS["en"]
    assert done["check"]["citation_coverage"] == 0.0 and done["check"]["citation_precision"] is None
    assert done["check"]["unsupported"] is True and done["check"]["replaced"] is True


@pytest.mark.parametrize("question, language", [(SILENT, "en"), (SILENT_ZH, "zh")])
async def test_an_empty_answer_says_the_model_gave_none_even_with_replacing_off(retriever, settings_factory, question,
                                                                                 language):
    done, sources = await done_and_sources(question, retriever, settings_for(settings_factory, replace="off", k=2))
    assert done["answer"] == NO_ANSWER[language] and done["model_answer"] == ""
    assert done["check"]["empty"] is True and done["check"]["replaced"] is True
    assert sources and not any(s["cited"] for s in sources)


async def test_an_answer_with_words_is_not_empty(retriever, settings_factory):
    done, _ = await done_and_sources(FLIGHTS, retriever, settings_for(settings_factory, replace="on"))
    assert done["check"]["empty"] is False and done["check"]["replaced"] is False


def test_auto_replaces_for_the_packaged_small_models_only(settings_factory, tmp_path):
    assert replaces_unsupported(settings_factory(backend="llamacpp"))
    assert not replaces_unsupported(settings_factory(backend="llamacpp", llamacpp={"model_path": tmp_path / "m.gguf"}))
    assert not replaces_unsupported(settings_factory())  # echo
    assert replaces_unsupported(settings_factory(generation={"replace_unsupported": "on"}))
    assert not replaces_unsupported(settings_factory(backend="llamacpp", generation={"replace_unsupported": "off"}))


async def test_a_conversation_stores_the_answer_the_user_saw(retriever, settings_factory):
    settings = settings_for(settings_factory, replace="on")
    engine = retriever.store.engine
    conv = create_conversation(engine, collections=["handbook"])
    turn = ConversationTurn.open(engine, conv.id)
    query = await turn.standalone_query(create_backend(settings), CANTEEN, settings.conversations)
    prepared = await prepare(CANTEEN, "handbook", retriever=retriever, backend=create_backend(settings),
                             policy=AnswerPolicy.of(settings), query=query)
    events = [e async for e in passed(prepared.events(), turn, Uncounted(), InFlight())]
    assert events[-1].data["answer"] == NOT_IN_DOCUMENTS["en"]
    (stored,) = list_turns(engine, conv.id)
    assert stored.answer == NOT_IN_DOCUMENTS["en"]
    assert '"support"' in stored.sources and '"supported": false' in stored.sources
