"""The whole loop with the real models (llama.cpp on the fast packaged Gemma-3-270M; the default instruct model
has its own test in tests/assistant/backends/test_packaged_models.py): handbook pages in, answers with sources out."""

from __future__ import annotations

import shutil
import time

import pytest

from assistant.backends.factory import create_backend
from assistant.answers.citations import cited_numbers
from assistant.answers.rag import AnswerPolicy
from tests.support.answering import answer
from indexes.factory import retriever_from
from indexes.store import Store
from ingest.pipeline import ingest_paths
from tests.conftest import shared_path

pytestmark = pytest.mark.slow

QUESTIONS = [
    ("How many weeks of unpaid leave does FMLA give me in a 12 month period?", "pages/travel-and-leave/fmla.md"),
    ("If I earn the maximum salary, can I be paid overtime or get comp time?", "pages/travel-and-leave/overtime.md"),
    ("How long do I have to come back to work after my paid parental leave ends?", "pages/travel-and-leave/paid-parental-leave.md"),
    ("How is a Slack account offboarded when someone leaves TTS?", "pages/tools/slack/user-management.md"),
    ("How can I donate annual leave to a coworker who has a medical emergency?", "pages/travel-and-leave/voluntary-leave-transfer-program.md"),
]


@pytest.fixture(scope="module")
def handbook(tmp_path_factory):
    """30 real handbook pages (travel and leave, Slack) copied under pages/ in a temporary root."""
    src = shared_path("corpora", "wiki-18f-handbook")
    pages = sorted((src / "pages" / "travel-and-leave").rglob("*.md")) + sorted((src / "pages" / "tools").glob("slack*.md")) + sorted((src / "pages" / "tools" / "slack").glob("*.md"))
    pages = pages[:30]
    assert len(pages) == 30
    root = tmp_path_factory.mktemp("handbook")
    for page in pages:
        dest = root / page.relative_to(src)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(page, dest)
    return root


@pytest.fixture(scope="module")
def ingested(handbook, embedder, tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("data"))
    started = time.perf_counter()
    first = ingest_paths(store, embedder, [handbook], "handbook")
    first_s = time.perf_counter() - started
    yield store, first, first_s
    store.close()


def test_ingest_then_unchanged_reingest_embeds_nothing(ingested, handbook, embedder):
    store, first, first_s = ingested
    assert first.files_ingested == 30 and first.files_failed == 0 and first.chunks_embedded > 30
    started = time.perf_counter()
    again = ingest_paths(store, embedder, [handbook], "handbook")
    again_s = time.perf_counter() - started
    assert again.chunks_embedded == 0 and again.files_skipped == 30
    assert again_s < first_s / 10, (first_s, again_s)
    coll = store.get_collection("handbook")
    rows, declared = store.counts(coll)
    assert rows == declared == first.chunks_written


def test_the_right_page_is_among_the_top_five_sources(ingested, settings_factory, embedder):
    store, _, _ = ingested
    retriever = retriever_from(settings_factory().retrieval, store, embedder)
    found = {}
    for question, page in QUESTIONS:
        paths = [h.path for h in retriever.search(question, "handbook", k=5)]
        found[question] = page in paths
    assert sum(found.values()) >= 4, found


async def test_real_llamacpp_answer_streams_and_cites_only_returned_sources(ingested, settings_factory, embedder):
    store, _, _ = ingested
    settings = settings_factory(backend="llamacpp", llamacpp={"n_ctx": 2048, "packaged_model": "gemma-3-270m"},
                                generation={"max_tokens": 48})
    backend = create_backend(settings)
    retriever = retriever_from(settings.retrieval, store, embedder)
    try:
        for question, page in QUESTIONS[:2]:
            events = [e async for e in answer(question, ["handbook"], retriever=retriever, backend=backend, policy=AnswerPolicy.of(settings))]
            kinds = [e.type for e in events]
            assert "error" not in kinds, events[-1]
            assert kinds[0] == "retrieved" and kinds[-2:] == ["sources", "done"] and set(kinds[1:-2]) == {"token"}
            text = "".join(e.data["text"] for e in events if e.type == "token")
            assert text.strip(), "the streamed answer is not empty"
            sources = events[-2].data["sources"]
            assert page in [s["path"] for s in sources]
            numbers = {s["n"] for s in sources}
            assert set(cited_numbers(text)) <= numbers, (text, numbers)
            assert events[-1].data["prompt_tokens"] <= 2048 - 48
    finally:
        await backend.aclose()
