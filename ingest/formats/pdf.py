"""PDF specifics: refuse encrypted files early, notice when the text layer is missing or garbled.

unstructured's `fast` strategy reads the PDF text layer with pdfminer. It returns no elements for an
encrypted file or a scan, and letter-by-letter fragments for a rotated page, without raising. Those
cases become per-file failures with a reason here, or, page by page, an OCR pass (ingest.formats.ocr) over the
pages that have no usable text layer.
"""

from __future__ import annotations

import re
from pathlib import Path

_LATIN_WORD = re.compile(r"[A-Za-z]+")
MIN_PAGE_CHARS = 10


def pdf_problem(path: Path) -> str | None:
    """Why this PDF cannot be read at all (encrypted, damaged), or None when it opens."""
    from pdfminer.pdfdocument import PDFDocument, PDFEncryptionError, PDFPasswordIncorrect
    from pdfminer.pdfparser import PDFParser, PDFSyntaxError
    from pdfminer.psexceptions import PSException

    try:
        with open(path, "rb") as fh:
            PDFDocument(PDFParser(fh), password="")
    except (PDFPasswordIncorrect, PDFEncryptionError):
        return "password-protected or encrypted PDF"
    except (PDFSyntaxError, PSException) as exc:
        return f"damaged or invalid PDF ({exc or type(exc).__name__})"
    return None


def pdf_title(path: Path) -> str:
    """The document title from the PDF's info dictionary, when it has a readable one."""
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdfparser import PDFParser
    from pdfminer.utils import decode_text

    try:
        with open(path, "rb") as fh:
            doc = PDFDocument(PDFParser(fh), password="")
            for info in doc.info:
                raw = info.get("Title")
                value = raw.resolve() if hasattr(raw, "resolve") else raw
                if isinstance(value, bytes):
                    value = decode_text(value)
                if isinstance(value, str) and value.strip():
                    return value.strip()
    except Exception:  # a title is a nicety; any trouble reading it just means no title
        return ""
    return ""


def looks_garbled(texts: list[str]) -> bool:
    """Letter-by-letter text ("R o t a t e d"): what pdfminer makes of rotated or spaced-out glyphs.

    In ordinary prose of any Latin-script language, one-letter words are a small minority; here they
    are most of the words.
    """
    words = [w for t in texts for w in _LATIN_WORD.findall(t)]
    if len(words) < 20:
        return False
    single = sum(1 for w in words if len(w) == 1)
    return single / len(words) > 0.5


def page_count(path: Path) -> int:
    """How many pages the PDF has (0 when its page tree cannot be read)."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        return len(PdfReader(str(path)).pages)
    except (PyPdfError, OSError, ValueError, KeyError):
        return 0


def pages_to_read(count: int, texts: dict[int, list[str]]) -> list[int]:
    """The pages (1-based) whose text layer is missing or garbled: the ones OCR reads. texts: the text layer's
    elements by page. A page with fewer than MIN_PAGE_CHARS letters and digits (a stamped page number, a
    scanner's header line) counts as missing; a page with text is never read again."""
    out = []
    for page in range(1, count + 1):
        on_page = texts.get(page, [])
        if sum(ch.isalnum() for t in on_page for ch in t) < MIN_PAGE_CHARS or looks_garbled(on_page):
            out.append(page)
    return out
