"""Scanned PDF pages and PNG/JPEG/TIFF images read through OCR (tesseract, through unstructured) in the real
pipeline, in the parser process: a question whose answer is only in a picture finds it first, on its page;
a PDF page with a text layer is not read again; without tesseract each such file says why, and the job goes on.

The fixtures are tests/fixtures/ocr (made by its make_fixtures.py): English and Chinese pages as PNG and as
image-only PDFs, and a PDF whose page 1 has a text layer and page 2 is a scan.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image

from indexes.jobs import FileState, Jobs, reason_kind
from indexes.ocr_tools import find_tools
from indexes.retrieval.retriever import Retriever
from ingest.formats.ocr import OcrOptions, tidy
from ingest.parse import ParseError, parse
from ingest.parse_pool import ParsePool
from ingest.formats.pdf import pages_to_read
from ingest.pipeline import JobLink, ingest_paths
from ingest.prepare import IngestOptions
from ingest.sources import SourceFile
from ingest.worker import options_from

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ocr"
TOOLS = find_tools()
OCR_READY = TOOLS.tesseract is not None and TOOLS.pdftoppm is not None and {"eng", "chi_sim"} <= set(TOOLS.languages)
needs_ocr = pytest.mark.skipif(not OCR_READY, reason="OCR is not installed: apt-get install tesseract-ocr "
                               "tesseract-ocr-eng tesseract-ocr-chi-sim poppler-utils (scripts/setup.sh does it)")
NOT_INSTALLED = "OCR is not installed: apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim"

# Beside the scans, notes on near subjects (a harbour, an office's temperature), so a hit is not a given.
NOTES = {
    "harbour.md": "# Harbour office\n\nThe harbour office opens at eight. Boats moor at the east pier and pay the "
                  "berth fee weekly. The lighthouse museum is closed on Mondays.\n",
    "office.md": "# 办公室规定\n\n办公室的空调温度夏天设为二十六度。会议室需要提前一天预订。\n",
}
QUESTIONS = [  # (question, file stem, page): the answer is only in the picture
    ("How often is the north lens of the lighthouse polished?", "scan-en", 1),
    ("冷藏库的温度要保持在多少度？", "scan-zh", 1),
]


def folder(tmp_path: Path, name: str, files: list[str]) -> Path:
    root = tmp_path / name
    root.mkdir()
    for f in files:
        shutil.copy(FIXTURES / f, root / f)
    for path, text in NOTES.items():
        (root / path).write_text(text, encoding="utf-8")
    return root


def source(path: Path) -> SourceFile:
    st = path.stat()
    return SourceFile(path, path.name, path.parent, st.st_size, st.st_mtime)


def document_meta(store, collection: str, path: str) -> dict:
    return json.loads(store.get_document(store.require_collection(collection), path).meta)


@needs_ocr
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["png", "pdf"])
def test_a_question_answered_only_in_a_scan_finds_it_first_on_its_page(tmp_path, store, embedder, kind):
    root = folder(tmp_path, kind, [f"scan-en.{kind}", f"scan-zh.{kind}"])
    events = []
    report = ingest_paths(store, embedder, [root], kind, progress=events.append)
    assert (report.files_ingested, report.files_failed, report.files_ignored) == (4, 0, 0), report.failures
    assert not report.notes
    # progress said which files had their text read from images, and only those
    assert {e.path for e in events if e.stage == "ocr"} == {f"scan-en.{kind}", f"scan-zh.{kind}"}
    retriever = Retriever(store, embedder)
    for question, stem, page in QUESTIONS:
        hits = retriever.search(question, kind, k=3)
        assert (hits[0].path, hits[0].page, hits[0].anchor) == (f"{stem}.{kind}", page, f"page={page}"), \
            [(h.path, h.page, h.text[:60]) for h in hits]
        assert document_meta(store, kind, f"{stem}.{kind}")["ocr"] == {"pages": [1], "languages": "eng+chi_sim"}
    assert "fourteen days" in retriever.search(QUESTIONS[0][0], kind, k=1)[0].text
    # tesseract's spaces between Chinese words are gone: the text reads, and its trigrams match
    assert "冷藏库的温度必须保持在零下十八度" in retriever.search(QUESTIONS[1][0], kind, k=1)[0].text


@needs_ocr
@pytest.mark.slow
def test_only_the_scanned_page_of_a_pdf_is_read_through_ocr(tmp_path, store, embedder):
    root = folder(tmp_path, "mixed", ["mixed.pdf"])
    events = []
    report = ingest_paths(store, embedder, [root], "mixed", progress=events.append)
    assert report.files_failed == 0 and report.files_ingested == 3
    assert [e.path for e in events if e.stage == "ocr"] == ["mixed.pdf"]
    assert document_meta(store, "mixed", "mixed.pdf")["ocr"] == {"pages": [2], "languages": "eng+chi_sim"}
    retriever = Retriever(store, embedder)
    scanned = retriever.search("How much did the cider press repair cost?", "mixed", k=3)[0]
    assert (scanned.path, scanned.page) == ("mixed.pdf", 2) and "2,300 dollars" in scanned.text
    layer = retriever.search("How many families are members of the orchard cooperative?", "mixed", k=3)[0]
    assert (layer.path, layer.page) == ("mixed.pdf", 1)
    # page 1 is the text layer's own text, as pdfminer reads it, not a picture of it read back
    assert "Membership grew to 412 families this year. The board met eleven times" in layer.text


def test_without_tesseract_each_scan_and_image_says_so_and_the_job_goes_on(tmp_path, store, embedder, monkeypatch,
                                                                            settings_factory):
    monkeypatch.setenv("ASSISTANT_INGEST_OCR_COMMAND", str(tmp_path / "nowhere" / "tesseract"))
    options = options_from(settings_factory())
    assert options.ocr_command.endswith("nowhere/tesseract")
    root = folder(tmp_path, "docs", ["scan-en.png", "scan-en.pdf", "mixed.pdf"])
    jobs = Jobs(store.engine)
    job = jobs.enqueue(0, "docs", {"paths": [str(root)]})
    jobs.claim("test", job_id=job.id)
    report = ingest_paths(store, embedder, [root], "docs", options=options, link=JobLink(jobs, job.id, "test"))

    assert report.files_ingested == 3  # the two notes, and mixed.pdf's text page
    (failed,) = report.failures
    assert failed.path == "scan-en.pdf" and failed.reason.startswith(NOT_INSTALLED)
    assert "(this PDF has no extractable text (scanned?))" in failed.reason
    (left_out,) = report.ignored
    assert left_out.path == "scan-en.png" and left_out.reason.startswith(NOT_INSTALLED)
    assert "poppler-utils" not in left_out.reason  # an image needs no PDF renderer
    (note,) = report.notes
    assert note.path == "mixed.pdf" and note.reason.startswith(f"page 2 not read: {NOT_INSTALLED}")

    progress = jobs.progress(job.id)
    assert [(e["path"], e["kind"]) for e in progress["errors"]] == [("scan-en.pdf", "ocr_missing")]
    assert [(e["path"], e["kind"]) for e in progress["skipped"]] == [("scan-en.png", "ocr_missing")]
    assert Retriever(store, embedder).search("families in the orchard cooperative", "docs", k=1)[0].page == 1

    if not OCR_READY:
        return
    # once OCR is there, the next run reads what it could not before; the rest is unchanged
    again = ingest_paths(store, embedder, [root], "docs")
    assert (again.files_ingested, again.files_skipped, again.files_failed) == (3, 2, 0), again.failures
    assert document_meta(store, "docs", "mixed.pdf")["ocr"]["pages"] == [2]


@needs_ocr
def test_a_damaged_image_is_left_out_as_an_image(tmp_path):
    bad = tmp_path / "photo.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    with pytest.raises(ParseError) as info:
        parse(source(bad))
    assert info.value.reason.startswith("image file: damaged or unreadable (") and info.value.skip
    assert reason_kind(info.value.reason) == "image"


@needs_ocr
@pytest.mark.slow
def test_every_page_of_a_tiff_is_read_and_numbered(tmp_path):
    pages = [Image.open(FIXTURES / "scan-zh.png"), Image.open(FIXTURES / "scan-en.png")]
    tiff = tmp_path / "binder.tiff"
    pages[0].save(tiff, save_all=True, append_images=pages[1:], compression="tiff_lzw")
    parsed = parse(source(tiff))
    assert parsed.kind == "tiff" and parsed.anchors == "page" and parsed.meta["ocr"]["pages"] == [1, 2]
    text = {page: " ".join(e.text for e in parsed.elements if e.page == page) for page in (1, 2)}
    assert "冷藏库" in text[1] and "north lens" in text[2]


@needs_ocr
@pytest.mark.slow
def test_ocr_runs_in_the_parser_process_under_its_time_limit(tmp_path, embedder):
    """A TIFF of eight pages takes the child longer than a 4 s limit with no time per OCR page: it is stopped,
    and the reason says it was reading through OCR; the caller was told OCR had started, on how many pages."""
    page = Image.open(FIXTURES / "scan-en.png")
    tiff = tmp_path / "eight.tiff"
    page.save(tiff, save_all=True, append_images=[page] * 7)
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nThe child loads its tokenizer on its first file.\n")
    pool = ParsePool()
    told = []
    try:
        model = str(embedder.model_path)
        pool.parse_and_split(source(note), note.read_bytes(), 200, 32, model, 256)
        with pytest.raises(ParseError) as info:
            pool.parse_and_split(source(tiff), tiff.read_bytes(), 200, 32, model, 256, timeout_s=4.0, ocr=OcrOptions(),
                                 ocr_page_s=0.0, on_ocr=told.append)
    finally:
        pool.shutdown()
    assert told == [8]
    assert info.value.reason == ("the parser took longer than 4 s on this file (stopped): 4 s and 0 s for each of "
                                 "the 8 pages it was reading through OCR")


def test_pages_without_a_usable_text_layer_are_the_ones_read():
    prose = ["The board met eleven times this year and approved the new bylaws of the cooperative."]
    garbled = [" ".join("R o t a t e d p a g e t e x t r e a d l e t t e r b y l e t t e r")]
    assert pages_to_read(4, {1: prose, 2: ["3"], 4: garbled}) == [2, 3, 4]  # a lone page number is no text layer
    assert pages_to_read(2, {1: prose, 2: prose}) == []


def test_spaces_tesseract_puts_between_chinese_words_are_taken_out():
    raw = [SimpleNamespace(text="冷藏 库 的 温度 必须 保持 在 零下 十 八 度 。 叉车 钥匙"),
           SimpleNamespace(text="Room 7B 的 温度 is 20 度"), SimpleNamespace(text="")]
    assert [r.text for r in tidy(raw)] == ["冷藏库的温度必须保持在零下十八度。叉车钥匙", "Room 7B 的温度 is 20 度", ""]


def test_a_job_names_the_files_being_read_through_ocr(store):
    jobs = Jobs(store.engine)
    job = jobs.enqueue(0, "scans", {"paths": ["/x"]})
    jobs.record(job.id, [FileState("a.png", "ocr"), FileState("b.md", "parsing"), FileState("c.md", "done", chunks=1)])
    progress = jobs.progress(job.id)
    assert progress["reading_images"] == ["a.png"] and sorted(progress["current"]) == ["a.png", "b.md"]
    assert progress["files_pending"] == 2 and progress["files_done"] == 1


def test_a_collection_keeps_the_ocr_languages_its_last_job_named(store, settings_factory):
    jobs = Jobs(store.engine)
    jobs.enqueue(0, "scans", {"paths": ["/a"], "options": {"ocr_languages": "chi_tra+eng"}})
    later = jobs.enqueue(1, "scans", {"paths": ["/b"]})
    assert json.loads(later.params)["options"] == {"ocr_languages": "chi_tra+eng"}
    assert options_from(settings_factory(), json.loads(later.params)["options"]).ocr_languages == "chi_tra+eng"
    named = jobs.enqueue(1, "scans", {"paths": ["/c"], "options": {"ocr_languages": "jpn"}})
    assert json.loads(named.params)["options"]["ocr_languages"] == "jpn"
    assert json.loads(jobs.enqueue(1, "other", {"paths": ["/d"]}).params) == {"paths": ["/d"]}
    jobs.enqueue(1, "scans", {"collection_id": 1}, kind="purge")  # deleted: a new collection of that name starts afresh
    assert "options" not in json.loads(jobs.enqueue(2, "scans", {"paths": ["/e"]}).params)


def test_ingest_options_carry_the_ocr_settings():
    assert IngestOptions().ocr == OcrOptions("eng+chi_sim", "tesseract")
