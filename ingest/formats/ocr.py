"""Text in pictures: scanned PDF pages and PNG, JPEG and TIFF files read with tesseract through unstructured.

Only what has no text of its own is read this way: a PDF's pages without a usable text layer, one at a
time (the pages that have one are not read again), and image files, a TIFF's every page. It runs in the
parser process (`ingest.parse_pool`), under that process's time and memory limits, and tells whoever
listens (`listening`) when it starts, so progress can say that a file's text is being read from images.
Without tesseract (or poppler's pdftoppm, for PDF pages) a file gets a reason that names the apt-get command.
"""

from __future__ import annotations

import io
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from indexes.ocr_tools import DEFAULT_LANGUAGES, find_tools, split_languages
from ingest import offline
from ingest.elements import ParseError

OCR_IMAGES = {".png", ".jpg", ".jpeg", ".tif", ".tiff"}
# tesseract puts a space between the words it finds, Chinese ones too: 冷藏 库 的 温度 -> 冷藏库的温度.
_CJK = r"\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_SPACE_IN_CJK = re.compile(rf"(?<=[{_CJK}])[ \t]+(?=[{_CJK}])")
_listener = threading.local()


@dataclass(frozen=True)
class OcrOptions:
    """languages: tesseract's, joined by '+'; command: the tesseract program, a name on PATH or a path."""

    languages: str = DEFAULT_LANGUAGES
    command: str = "tesseract"


@contextmanager
def listening(callback: Callable[[int], None]) -> Iterator[None]:
    """Within this block (this thread), callback(pages) is called when OCR starts on a file, with the number
    of pages it is about to read."""
    previous = getattr(_listener, "callback", None)
    _listener.callback = callback
    try:
        yield
    finally:
        _listener.callback = previous


def _starting(pages: int) -> None:
    callback = getattr(_listener, "callback", None)
    if callback is not None:
        callback(pages)


def usable_languages(options: OcrOptions, *, pdf: bool) -> tuple[list[str], str | None]:
    """The configured languages tesseract has, and a note naming those it lacks; raises ParseError (a
    skip for an image file) when OCR cannot run at all."""
    tools = find_tools(options.command)
    wanted = split_languages(options.languages) or split_languages(DEFAULT_LANGUAGES)
    if tools.tesseract is None or (pdf and tools.pdftoppm is None):
        where = "" if options.command == "tesseract" or tools.tesseract else f" (ingest.ocr_command {options.command!r} was not found)"
        raise ParseError(f"OCR is not installed: {tools.install_command(wanted, pdf=pdf)}{where}", skip=not pdf)
    have = [lang for lang in wanted if lang in tools.languages]
    command = tools.install_command(wanted, pdf=pdf)
    if not have:
        raise ParseError(f"OCR languages {'+'.join(wanted)} are not installed: {command}", skip=not pdf)
    missing = tools.missing_languages(wanted)
    note = f"read without OCR languages {', '.join(missing)}, not installed: {command}" if missing else None
    return have, note


def tidy(raw: list[Any]) -> list[Any]:
    """unstructured's elements with the spaces tesseract put between Chinese (CJK) characters taken out."""
    for el in raw:
        if el.text:
            el.text = _SPACE_IN_CJK.sub("", el.text)
    return raw


def read_pdf_pages(path: Path, pages: list[int], options: OcrOptions) -> tuple[list[Any], str | None]:
    """unstructured elements of these PDF pages (1-based), each read through OCR alone and numbered as in
    the file; and a note when some configured language is missing."""
    from pypdf import PdfReader, PdfWriter

    languages, note = usable_languages(options, pdf=True)
    _starting(len(pages))
    offline.prepare()
    from unstructured.partition.pdf import partition_pdf

    _configure(options)
    reader = PdfReader(str(path))
    raw: list[Any] = []
    for number in pages:
        writer = PdfWriter()
        writer.add_page(reader.pages[number - 1])
        one = io.BytesIO()
        writer.write(one)
        one.seek(0)
        raw += partition_pdf(file=one, strategy="ocr_only", languages=languages, starting_page_number=number)
    return tidy(raw), note


def read_image(path: Path, options: OcrOptions) -> tuple[list[Any], str | None]:
    """unstructured elements of an image file read through OCR (a TIFF's pages numbered from 1), and a note
    when some configured language is missing. A file that is no image it can open is left out with the reason."""
    from PIL import Image, UnidentifiedImageError

    languages, note = usable_languages(options, pdf=False)
    try:
        with Image.open(path) as image:
            frames = _frames(image)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise ParseError(f"image file: damaged or unreadable ({str(exc)[:200] or type(exc).__name__})", skip=True) from None
    _starting(len(frames))
    offline.prepare()
    from unstructured.partition.image import partition_image

    _configure(options)
    raw: list[Any] = []
    for number, frame in enumerate(frames, start=1):
        raw += partition_image(file=frame, strategy="ocr_only", languages=languages, starting_page_number=number)
    return tidy(raw), note


def _frames(image: Any) -> list[io.BytesIO]:
    """Each page of the image (a TIFF may hold several) as a PNG, decoded now so a damaged file fails here."""
    out = []
    for index in range(getattr(image, "n_frames", 1)):
        image.seek(index)
        png = io.BytesIO()
        image.convert("RGB" if image.mode not in ("1", "L", "RGB") else image.mode).save(png, "PNG")
        png.seek(0)
        out.append(png)
    return out


def _configure(options: OcrOptions) -> None:
    """unstructured runs tesseract through unstructured_pytesseract, which reads the program from here."""
    import unstructured_pytesseract

    unstructured_pytesseract.pytesseract.tesseract_cmd = options.command
