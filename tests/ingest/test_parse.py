"""Parsing real files offline: every file becomes elements or a failure with a reason."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from ingest.parse import ParseError, parse
from ingest.sources import SourceFile, walk
from tests.conftest import shared_path


def source(path: Path) -> SourceFile:
    st = path.stat()
    return SourceFile(path, path.name, path.parent, st.st_size, st.st_mtime)


def write(tmp_path: Path, name: str, content: str | bytes) -> SourceFile:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return source(path)


def reason_of(sf: SourceFile) -> str:
    with pytest.raises(ParseError) as info:
        parse(sf)
    return info.value.reason


MARKDOWN = """---
title: Voluntary Leave Transfer
redirect_from:
  - /vltp/
---

Intro paragraph about the programme.

## To receive donated hours

### Eligibility

You must have exhausted all leave balances.

```python
print("hello")
```
"""


def test_markdown_front_matter_gives_the_title_and_is_not_text(tmp_path):
    parsed = parse(write(tmp_path, "vltp.md", MARKDOWN))
    assert parsed.title == "Voluntary Leave Transfer"
    assert parsed.kind == "md" and parsed.anchors == "heading"
    assert parsed.meta["front_matter"]["redirect_from"] == ["/vltp/"]
    texts = [e.text for e in parsed.elements]
    assert not any("redirect_from" in t or "/vltp/" in t for t in texts)
    headings = [(e.text, e.heading_level) for e in parsed.elements if e.kind == "title"]
    assert headings == [("To receive donated hours", 2), ("Eligibility", 3)]
    assert any(e.kind == "code" and 'print("hello")' in e.text for e in parsed.elements)


def test_markdown_title_falls_back_to_first_heading_then_file_name(tmp_path):
    assert parse(write(tmp_path, "a.md", "# Main Title\n\nBody text here.\n")).title == "Main Title"
    assert parse(write(tmp_path, "notes-2024.md", "Just a line of text.\n")).title == "notes-2024"
    # a leading horizontal rule is not front matter
    parsed = parse(write(tmp_path, "rule.md", "---\n\nText after a rule.\n\n---\n\nMore text.\n"))
    assert "Text after a rule." in " ".join(e.text for e in parsed.elements)


def test_front_matter_only_page_keeps_what_it_says(tmp_path):
    parsed = parse(write(tmp_path, "org.md", "---\ntitle: Org chart\nredirect_to: https://example.org/chart\n---\n"))
    assert parsed.title == "Org chart"
    assert "redirect_to: https://example.org/chart" in parsed.elements[0].text


def test_rst_headings(tmp_path):
    text = "Guide\n=====\n\nIntro text.\n\nInstall\n-------\n\nRun it.\n\n.. versionadded:: 2.0\n   Faster now.\n"
    parsed = parse(write(tmp_path, "guide.rst", text))
    assert parsed.kind == "rst" and parsed.title == "Guide"
    titles = [e.text for e in parsed.elements if e.kind == "title" and e.heading_level]
    assert "Install" in titles
    assert "Faster now." in " ".join(e.text for e in parsed.elements)  # Sphinx directive body kept


def test_rst_object_entries_are_sections_and_unknown_directives_keep_their_text(tmp_path):
    text = ("Config\n======\n\nKeys.\n\n.. py:data:: TRUSTED_HOSTS\n\n    Validate the host against these values.\n\n"
            "    Default: ``None``\n\n.. data:: PLAIN\n\n.. click:example::\n\n    @click.command()\n    def hello(): pass\n")
    parsed = parse(write(tmp_path, "config.rst", text))
    titles = [(e.text, e.heading_level) for e in parsed.elements if e.kind == "title"]
    assert ("TRUSTED_HOSTS", 2) in titles  # an entry with a body is a section headed by its name
    body = " ".join(e.text for e in parsed.elements)
    assert "Validate the host against these values." in body
    assert "PLAIN" in body and ("PLAIN", 2) not in titles  # no body: the name stays a line of text
    assert "@click.command()" in body and "def hello(): pass" in body  # an unknown directive's body kept as written


def test_html_title_and_headings(tmp_path):
    html = "<html><head><title>The Page</title></head><body><h1>Top</h1><p>Para one is here.</p>" \
           "<h2>Sub</h2><p>Para two is here.</p></body></html>"
    parsed = parse(write(tmp_path, "p.html", html))
    assert parsed.title == "The Page"
    assert [(e.text, e.heading_level) for e in parsed.elements if e.kind == "title"] == [("Top", 1), ("Sub", 2)]


def test_docx_headings(tmp_path):
    import docx

    doc = docx.Document()
    doc.add_heading("Report", level=1)
    doc.add_paragraph("The first finding is described in this paragraph.")
    doc.add_heading("Details", level=2)
    doc.add_paragraph("More details follow in this second paragraph.")
    doc.save(tmp_path / "r.docx")
    parsed = parse(source(tmp_path / "r.docx"))
    assert parsed.kind == "docx" and parsed.title == "Report"
    assert "The first finding is described in this paragraph." in [e.text for e in parsed.elements]


def test_code_keeps_line_numbers(tmp_path):
    code = "import os\n\n\ndef f(x):\n    return x\n\nclass A:\n    pass\n"
    parsed = parse(write(tmp_path, "m.py", code))
    assert parsed.kind == "py" and parsed.anchors == "lines"
    # one unit per definition, each cut into its header and its statements, with their lines
    assert [(e.symbol, e.unit, e.line_start, e.line_end) for e in parsed.elements] == [
        ("", 0, 1, 1), ("f", 1, 4, 4), ("f", 1, 5, 5), ("A", 2, 7, 7), ("A", 2, 8, 8),
    ]
    assert [e.text for e in parsed.elements[1:3]] == ["def f(x):", "    return x"]
    # an unknown language falls back to blocks separated by blank lines
    blocks = parse(write(tmp_path, "run.sh", "echo one\necho two\n\necho three\n"))
    assert [(e.symbol, e.unit, e.line_start, e.line_end) for e in blocks.elements] == [("", None, 1, 2), ("", None, 4, 4)]


def test_plain_text_paragraphs_with_lines(tmp_path):
    parsed = parse(write(tmp_path, "readme", "First paragraph\nwraps here.\n\nSecond one.\n"))
    assert [(e.text, e.line_start, e.line_end) for e in parsed.elements] == [
        ("First paragraph\nwraps here.", 1, 2), ("Second one.", 4, 4),
    ]


def test_non_utf8_text_is_decoded_by_its_charset(tmp_path):
    text = "Le café de la gare sert un thé très chaud à côté du marché. " * 5
    parsed = parse(write(tmp_path, "latin1.txt", text.encode("cp1252")))
    assert "café de la gare" in parsed.elements[0].text


def test_utf16_with_bom(tmp_path):
    parsed = parse(write(tmp_path, "u16.txt", "Hello wide world.".encode("utf-16")))
    assert parsed.elements[0].text == "Hello wide world."


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("empty.md", b"", "empty file"),
        ("blank.txt", b"  \n\n ", "only whitespace"),
        ("blob.bin", bytes(range(256)) * 8, "binary file"),
        ("data.txt", b"\x00\x01\x02garbage\x00" * 100, "binary file"),
        ("photo.gif", b"GIF89a" + b"\x00" * 64, "image file: text is read from PNG, JPEG and TIFF images only"),
        ("old.doc", b"\xd0\xcf\x11\xe0" + b"\x00" * 64, "unsupported file type"),
        ("noise.txt", random.Random(0).randbytes(4000).replace(b"\x00", b"\x01"), "not valid UTF-8"),
        ("fake.pdf", b"this is not a pdf at all", "PDF"),
        ("fake.docx", b"not a zip file", "parser error"),
    ],
)
def test_bad_files_fail_with_a_reason(tmp_path, name, content, expected):
    assert expected in reason_of(write(tmp_path, name, content))


def test_unreadable_file_fails_with_a_reason(tmp_path):
    sf = write(tmp_path, "gone.md", "text")
    os.unlink(sf.abs_path)
    assert "cannot read" in reason_of(sf)


def test_password_pdf_fails_with_a_reason():
    pdf = shared_path("corpora", "messy-docs", "password.pdf")
    assert reason_of(source(pdf)) == "password-protected or encrypted PDF"


def test_every_messy_doc_parses_or_fails_with_a_reason():
    folder = shared_path("corpora", "messy-docs")
    outcomes = {}
    for sf in walk(folder):
        try:
            parsed = parse(sf)
        except ParseError as exc:
            assert exc.reason.strip()
            outcomes[sf.rel_path] = "failed: " + exc.reason
        else:
            assert parsed.elements and all(e.text.strip() for e in parsed.elements)
            assert parsed.title
            outcomes[sf.rel_path] = "ok"
    assert outcomes["password.pdf"] == "failed: password-protected or encrypted PDF"
    assert outcomes["docx-tables.docx"] == outcomes["example-10k-1p.html"] == outcomes["reliance.pdf"] == "ok"
    assert outcomes["fake-power-point-table.pptx"] == "ok"
    assert outcomes["2023-half-year-analyses-by-segment.xlsx"] == "ok"
    assert outcomes["email-no-utf8-2014-03-17.111517.eml"] == "ok"
    ok = [p for p, o in outcomes.items() if o == "ok"]
    assert len(ok) >= 17, outcomes


def test_pdf_pages_and_email_subject():
    folder = shared_path("corpora", "messy-docs")
    pdf = parse(source(folder / "multi-column-2p.pdf"))
    assert pdf.anchors == "page" and {e.page for e in pdf.elements} == {1, 2}
    mail = parse(source(folder / "email-no-utf8-2014-03-17.111517.eml"))
    assert mail.title == "Google Account password changed"


def test_scanned_or_rotated_pdf_is_not_silently_empty():
    folder = shared_path("corpora", "messy-docs")
    for name in ("table-multi-row-column-cells.pdf", "rotated-page-90.pdf"):
        try:
            parsed = parse(source(folder / name))
        except ParseError as exc:
            assert "PDF" in exc.reason and ("scanned" in exc.reason or "garbled" in exc.reason)
        else:  # OCR is installed: then it must have read words, not letters
            assert parsed.meta["ocr"] and parsed.elements
