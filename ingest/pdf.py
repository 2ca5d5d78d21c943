"""PDF specifics: refuse encrypted files early, notice when the text layer is missing or garbled.

unstructured's `fast` strategy reads the PDF text layer with pdfminer. It returns no elements for an
encrypted file or a scan, and letter-by-letter fragments for a rotated page, without raising. Those
cases become per-file failures with a reason here, or an OCR pass when tesseract is installed.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

_LATIN_WORD = re.compile(r"[A-Za-z]+")


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


def ocr_available() -> bool:
    """OCR of PDF pages needs tesseract and poppler's pdftoppm on the PATH."""
    return shutil.which("tesseract") is not None and shutil.which("pdftoppm") is not None
