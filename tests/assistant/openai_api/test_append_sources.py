"""Sources in the text, for clients that show only the text: the real `openai` client against the real
server over HTTP (echo backend with fixed replies, Markdown ingested for real), the list off and on per
server and per request (body field, model suffix), streamed and not; the check and a replaced answer
beside the sources; the sources' words quoted under an answer before the list."""

from __future__ import annotations

import openai
import pytest

from assistant.answers.support import NO_ANSWER, NOT_IN_DOCUMENTS
from assistant.app import create_app
from assistant.backends.factory import create_backend
from assistant.openai_api.chat import question_and_history
from assistant.services import Services
from assistant.settings import Settings
from evals.local_server import serve_in_thread
from indexes.store import Store
from ingest.pipeline import ingest_paths

pytestmark = pytest.mark.slow  # the real embedder

BOOKING = """---
title: Booking travel
---
# Booking travel

Book flights through the travel desk at least 14 days before departure.
Hotels are booked by the travellers themselves.
"""
LAPTOPS = "# Laptops\n\nNew staff receive a laptop on their first day from the IT help desk.\n"
SUPPORTED_Q = "How early must flights be booked?"
SUPPORTED_A = "Book flights through the travel desk at least 14 days before departure [1]."
UNSUPPORTED_Q = "What colour are the new laptops?"
UNSUPPORTED_A = "The laptops are painted bright purple with golden racing stripes [1]."
SILENT_Q = "Who books the hotels?"  # the model ends without a word
QUOTED_Q = "Can I book my own flights?"
QUOTED_A = "Flights are booked through the travel desk [1]."  # the source's condition left out
QUOTE = "\n\nFrom the sources:\n> “Book flights through the travel desk at least 14 days before departure.” [1]"


def start(tmp_path_factory, embedder, append_sources: bool):
    root = tmp_path_factory.mktemp("docs")
    (root / "travel").mkdir()
    (root / "tools").mkdir()
    (root / "travel" / "booking.md").write_text(BOOKING)
    (root / "tools" / "laptops.md").write_text(LAPTOPS)
    settings = Settings(data_dir=tmp_path_factory.mktemp("v1-data"), backend="echo",
                        echo={"replies": {SUPPORTED_Q: SUPPORTED_A, UNSUPPORTED_Q: UNSUPPORTED_A, SILENT_Q: "",
                                          QUOTED_Q: QUOTED_A}},
                        generation={"replace_unsupported": "on", "quote_sources": "on"}, v1={"append_sources": append_sources})
    store = Store(settings.data_dir)
    report = ingest_paths(store, embedder, [root], "docs")
    assert report.files_failed == 0, report.failures
    services = Services.assemble(settings, store, embedder, create_backend(settings))
    return settings, store, services


@pytest.fixture(scope="module", params=[False, True], ids=["server-off", "server-on"])
def client(request, tmp_path_factory, embedder):
    """The `openai` client of a server whose `v1.append_sources` is off, then of one where it is on."""
    settings, store, services = start(tmp_path_factory, embedder, request.param)
    with serve_in_thread(create_app(settings, services)) as server:
        yield openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0, timeout=60), request.param
    store.close()


def ask(client: openai.OpenAI, question: str, model: str = "rag:docs", **extra):
    return client.chat.completions.create(model=model, messages=[{"role": "user", "content": question}], **extra)


def streamed(client: openai.OpenAI, question: str, model: str = "rag:docs", **extra):
    """(the content pieces, the finish chunk's extra fields) of a streamed answer."""
    chunks = list(ask(client, question, model, stream=True, **extra))
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])
    return pieces, last.model_extra


def expected_list(sources: list[dict]) -> str:
    """The list as it must read: the cited source, path:lines of the file (after its front matter)."""
    [cited] = [s for s in sources if s["cited"]]
    assert cited["n"] == 1 and cited["path"] == "travel/booking.md"
    lines = BOOKING.split("\n")
    assert lines[cited["line_start"] - 1] == "# Booking travel" and lines[cited["line_end"] - 1].startswith("Hotels")
    return f"\n\nSources:\n[1] travel/booking.md:{cited['line_start']}-{cited['line_end']}"


def test_not_streamed_the_list_follows_the_server_setting_and_the_request(client):
    client, server_on = client
    plain = ask(client, SUPPORTED_Q)
    extra = plain.model_extra
    listed = expected_list(extra["sources"])
    assert plain.choices[0].message.content == SUPPORTED_A + (listed if server_on else "")
    # the check and each source's support come beside the sources
    assert extra["check"]["replaced"] is False and extra["check"]["citation_precision"] == 1.0
    assert extra["sources"][0]["support"]["supported"] is True and "model_answer" not in extra

    on = ask(client, SUPPORTED_Q, extra_body={"append_sources": True})
    assert on.choices[0].message.content == SUPPORTED_A + listed
    suffixed = ask(client, SUPPORTED_Q, model="rag:docs+sources")
    assert suffixed.choices[0].message.content == SUPPORTED_A + listed and suffixed.model == "rag:docs+sources"
    off = ask(client, SUPPORTED_Q, model="rag:docs+sources", extra_body={"append_sources": False})
    assert off.choices[0].message.content == SUPPORTED_A  # the body's field decides over the rest


def test_streamed_the_list_is_the_last_content_chunk(client):
    client, server_on = client
    pieces, extra = streamed(client, SUPPORTED_Q)
    listed = expected_list(extra["sources"])
    assert extra["check"]["replaced"] is False and extra["sources"][0]["support"]["supported"] is True
    if server_on:
        assert pieces[-1] == listed and "".join(pieces) == SUPPORTED_A + listed
    else:
        assert "".join(pieces) == SUPPORTED_A
    pieces, _ = streamed(client, SUPPORTED_Q, model="rag:docs+sources")
    assert pieces[-1] == listed and "".join(pieces[:-1]) == SUPPORTED_A
    pieces, _ = streamed(client, SUPPORTED_Q, extra_body={"append_sources": False})
    assert "".join(pieces) == SUPPORTED_A


def test_the_sources_words_follow_the_answer_before_the_list(client):
    """The source's sentence the answer stands on, quoted after the model's text: in the content, as the chunk
    after the model's pieces when streamed, and left out of the history when the client sends it back."""
    client, server_on = client
    resp = ask(client, QUOTED_Q)
    extra = resp.model_extra
    listed = expected_list(extra["sources"]) if server_on else ""
    assert resp.choices[0].message.content == QUOTED_A + QUOTE + listed
    assert extra["model_answer"] == QUOTED_A and [q["n"] for q in extra["check"]["quotes"]] == [1]
    pieces, extra = streamed(client, QUOTED_Q)
    assert "".join(pieces) == QUOTED_A + QUOTE + listed and pieces[-1] == QUOTE + listed
    _, history = question_and_history([{"role": "user", "content": QUOTED_Q},
                                       {"role": "assistant", "content": QUOTED_A + QUOTE + listed},
                                       {"role": "user", "content": "And hotels?"}], 1000)
    assert [m["content"] for m in history] == [QUOTED_Q, QUOTED_A]


def test_a_replaced_answer_is_the_content_and_the_models_text_comes_beside_it(client):
    client, _ = client
    resp = ask(client, UNSUPPORTED_Q, model="rag:docs+sources")
    extra = resp.model_extra
    assert resp.choices[0].message.content == NOT_IN_DOCUMENTS["en"]  # no list under "not in the documents"
    assert extra["check"]["replaced"] is True and extra["model_answer"] == UNSUPPORTED_A
    assert extra["sources"] and extra["check"]["unsupported"] is True

    pieces, extra = streamed(client, UNSUPPORTED_Q, model="rag:docs+sources")
    # the model's text is out before the check: the replacement follows it
    assert "".join(pieces) == UNSUPPORTED_A + "\n\n" + NOT_IN_DOCUMENTS["en"]
    assert extra["check"]["replaced"] is True and extra["model_answer"] == UNSUPPORTED_A


def test_an_empty_answer_is_the_sentence_that_says_so(client):
    client, _ = client
    resp = ask(client, SILENT_Q, model="rag:docs+sources")
    assert resp.choices[0].message.content == NO_ANSWER["en"]
    assert resp.model_extra["check"]["empty"] is True and resp.model_extra["model_answer"] == ""
    pieces, extra = streamed(client, SILENT_Q)
    assert "".join(pieces) == NO_ANSWER["en"] and extra["check"]["replaced"] is True


def test_the_backends_own_model_takes_no_sources_list(client):
    client, _ = client
    with pytest.raises(openai.BadRequestError) as bad:
        ask(client, "hello", model="echo", extra_body={"append_sources": True})
    assert "append_sources" in bad.value.message
    with pytest.raises(openai.NotFoundError):
        ask(client, "hello", model="rag:nothing+sources")


def test_a_list_sent_back_in_the_history_is_left_out_of_it():
    messages = [
        {"role": "user", "content": SUPPORTED_Q},
        {"role": "assistant", "content": SUPPORTED_A + "\n\nSources:\n[1] travel/booking.md:4-7\n[2] a.pdf:p.3"},
        {"role": "user", "content": "And hotels?"},
    ]
    question, history = question_and_history(messages, 1000)
    assert question == "And hotels?"
    assert [m["content"] for m in history] == [SUPPORTED_Q, SUPPORTED_A]
