"""MCP `ask` through the real `mcp` client over streamable HTTP against the real server: each source
carries the support of its citation (score, verdict, span with lines) and the answer its `check`. The
echo backend streams the fixed replies of REPLIES, one that its source supports and one that it does not
(replaced, as `generation.replace_unsupported` is on)."""

from __future__ import annotations

import pytest

from assistant.answers.support import NOT_IN_DOCUMENTS
from assistant.app import create_app
from assistant.backends.factory import create_backend
from assistant.services import Services
from assistant.settings import Settings
from evals.local_server import serve_in_thread
from indexes.store import Store
from tests.assistant.mcp_api.test_mcp import CHUNK_PLACES, GUIDE, data_dir, http_session, payload  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow  # the real MiniLM embedder

ROLLBACK = "How do I roll back a bad release?"
CANTEEN = "What does the canteen serve on Fridays?"
REPLIES = {
    ROLLBACK: "To roll back a bad release, redeploy the previous image tag [1].",
    CANTEEN: "The canteen serves pizza on Fridays [1].",
}


@pytest.fixture(scope="module")
def url(data_dir, embedder):  # noqa: F811 (the fixture imported above)
    """The real server (uvicorn on 127.0.0.1) over test_mcp's store, answering with REPLIES."""
    settings = Settings(data_dir=data_dir, backend="echo", retrieval=CHUNK_PLACES, echo={"replies": REPLIES},
                        generation={"replace_unsupported": "on"})
    store = Store(data_dir)
    services = Services.assemble(settings, store, embedder, create_backend(settings))
    with serve_in_thread(create_app(settings, services)) as server:
        yield server.url
    store.close()


async def ask(url: str, question: str) -> dict:
    async with http_session(f"{url}/mcp") as session:
        return payload(await session.call_tool("ask", {"question": question, "collection": "project", "k": 2}))


async def test_a_supported_citation_comes_back_with_its_span(url):
    answered = await ask(url, ROLLBACK)
    assert answered["answer"] == REPLIES[ROLLBACK] and "model_answer" not in answered
    first = answered["sources"][0]
    assert first["n"] == 1 and first["cited"] and first["location"] == "docs/deploy.md:L9-L17"
    support = first["support"]
    assert support["supported"] is True and support["score"] >= 0.6
    text = GUIDE[1][1]
    assert support["span"] == {"char_start": 0, "char_end": len(text), "line_start": 9, "line_end": 9, "page": None}
    assert [s["support"] for s in answered["sources"][1:]] == [None]
    check = answered["check"]
    assert check["sentences"][0]["supported"] is True and check["sentences"][0]["cited"] == [1]
    assert (check["citation_precision"], check["unsupported"], check["replaced"]) == (1.0, False, False)


async def test_an_unsupported_citation_says_so_and_the_answer_is_replaced(url):
    answered = await ask(url, CANTEEN)
    assert answered["answer"] == NOT_IN_DOCUMENTS["en"] and answered["model_answer"] == REPLIES[CANTEEN]
    support = answered["sources"][0]["support"]
    # The statement that replaced it cites nothing: the sources are the closest passages, the model's citation
    # judged in `support`.
    assert not answered["sources"][0]["cited"] and support["supported"] is False and support["score"] < 0.6
    assert answered["check"]["unsupported"] is True and answered["check"]["citation_precision"] == 0.0
    assert answered["check"]["replaced"] is True and answered["check"]["abstained"] is False
