"""Files to elements: text with its kind, page, heading level and lines, via `unstructured`.

Every failure is per file and carries a reason a user can act on (`ParseError.reason`); nothing a
single file contains may raise anything else out of `parse()`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ingest import offline
from ingest.pdf import looks_garbled, ocr_available, pdf_problem, pdf_title
from ingest.sources import SourceFile
from ingest.text import TextDecodeError, decode_text, line_blocks, looks_binary, strip_controls

MARKDOWN = {".md", ".markdown", ".mdown", ".mkd"}
RST = {".rst", ".rest"}
HTML = {".html", ".htm", ".xhtml"}
OFFICE = {".docx": "docx", ".pptx": "pptx", ".xlsx": "xlsx", ".xls": "xls"}
EMAIL = {".eml": "eml", ".msg": "msg"}
TEXT = {".txt", ".text", ".log", ".csv", ".tsv"}
CODE = {
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".rs", ".java", ".kt", ".scala",
    ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".rb", ".php", ".swift", ".m", ".lua",
    ".pl", ".r", ".jl", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".bat", ".sql", ".toml", ".yaml",
    ".yml", ".json", ".jsonl", ".ini", ".cfg", ".conf", ".xml", ".css", ".scss", ".vue", ".svelte",
    ".proto", ".graphql", ".tf", ".dockerfile", ".mk", ".cmake", ".gradle", ".el", ".clj", ".ex",
    ".exs", ".erl", ".hs", ".ml", ".dart", ".zig", ".nim", ".v", ".sv", ".vhd", ".ipynb",
}
CODE_NAMES = {"makefile", "dockerfile", "containerfile", "justfile", "cmakelists.txt", "gemfile", "rakefile"}
UNSUPPORTED = {
    ".doc": "legacy Word .doc (needs LibreOffice; save as .docx)",
    ".ppt": "legacy PowerPoint .ppt (needs LibreOffice; save as .pptx)",
    ".odt": "OpenDocument text (needs pandoc)",
    ".rtf": "RTF (needs pandoc)",
    ".epub": "EPUB (needs pandoc)",
    ".org": "Org-mode (needs pandoc)",
}
IMAGES = {".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp", ".heic", ".svg", ".ico"}

# unstructured categories -> our element kinds; categories not listed carry no text worth indexing.
CATEGORY_KIND = {
    "Title": "title",
    "NarrativeText": "text",
    "UncategorizedText": "text",
    "Text": "text",
    "Address": "text",
    "EmailAddress": "text",
    "FigureCaption": "text",
    "Formula": "text",
    "Header": "text",
    "Footer": "text",
    "Image": "text",
    "ListItem": "list",
    "Table": "table",
    "CodeSnippet": "code",
}
_SPACES = re.compile(r"[ \t\u00a0\u3000]+")


class ParseError(Exception):
    """A file that cannot become elements; `reason` says why, in words a user can act on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Element:
    """One piece of a document. heading_level is set for real headings (1 = top); a title without
    a level is a layout guess (PDF, spreadsheets) and is treated as text when splitting."""

    text: str
    kind: str = "text"  # title | text | list | table | code
    page: int | None = None
    heading_level: int | None = None
    line_start: int | None = None
    line_end: int | None = None


@dataclass
class Parsed:
    """A parsed file. anchors says how its chunks are linked to: 'heading' (slug of the nearest
    heading), 'lines' (L10-L42), 'page' (page=N) or 'none'."""

    title: str
    kind: str
    elements: list[Element]
    anchors: str = "none"
    meta: dict[str, Any] = field(default_factory=dict)


def parse(source: SourceFile, data: bytes | None = None) -> Parsed:
    """Parse one file; raises only ParseError. data, when given, is the file's bytes already read."""
    try:
        if data is None:
            data = source.abs_path.read_bytes()
        return _parse(source, data)
    except ParseError:
        raise
    except TextDecodeError as exc:
        raise ParseError(str(exc)) from exc
    except OSError as exc:
        raise ParseError(f"cannot read the file ({exc.strerror or exc})") from exc
    except Exception as exc:  # a parser bug on one odd file must not stop the others
        raise ParseError(f"parser error: {type(exc).__name__}: {str(exc)[:300]}") from exc


def _parse(source: SourceFile, data: bytes) -> Parsed:
    suffix, name = source.suffix, source.abs_path.name
    stem = source.abs_path.stem if suffix else name
    if not data.strip():
        raise ParseError("empty file" if not data else "file holds only whitespace")
    if suffix in UNSUPPORTED:
        raise ParseError(f"unsupported file type: {UNSUPPORTED[suffix]}")
    if suffix in IMAGES:
        raise ParseError("image file: text in images is not read")
    binary = suffix in {".pdf", ".eml", ".msg"} | set(OFFICE)
    if not binary and looks_binary(data):
        raise ParseError("binary file" + (f" (unsupported type {suffix})" if suffix else ""))

    if suffix in MARKDOWN:
        parsed = _markdown(decode_text(data), stem)
    elif suffix in RST:
        parsed = _rst(decode_text(data), stem)
    elif suffix in HTML:
        parsed = _html(decode_text(data), stem)
    elif suffix == ".pdf":
        parsed = _pdf(source.abs_path, stem)
    elif suffix in OFFICE:
        parsed = _office(source.abs_path, OFFICE[suffix], stem)
    elif suffix in EMAIL:
        parsed = _email(source.abs_path, EMAIL[suffix], stem)
    elif suffix in CODE or name.lower() in CODE_NAMES:
        parsed = _code(decode_text(data), suffix.lstrip(".") or name.lower(), name)
    else:
        parsed = _plain(decode_text(data), suffix.lstrip(".") or "txt", name)
    if not any(e.text.strip() for e in parsed.elements):
        raise ParseError("no text found in the file")
    return parsed


# --- structured formats through unstructured -----------------------------------------------------


def _partition(fn_name: str, **kwargs: Any) -> list:
    offline.prepare()
    import importlib

    module, _, fn = fn_name.rpartition(".")
    return getattr(importlib.import_module(f"unstructured.partition.{module}"), fn)(**kwargs)


def convert(raw: Iterable, *, leveled: bool) -> list[Element]:
    """unstructured elements -> ours. leveled: the format marks real headings with a depth.

    Repeated page headers and footers are kept once; whitespace runs inside prose collapse.
    """
    out: list[Element] = []
    seen_margins: set[str] = set()
    for el in raw:
        kind = CATEGORY_KIND.get(el.category)
        text = strip_controls(el.text or "")
        if kind is None or not text.strip():
            continue
        if el.category in ("Header", "Footer"):
            if text in seen_margins:
                continue
            seen_margins.add(text)
        if kind != "code":
            text = "\n".join(_SPACES.sub(" ", line).strip() for line in text.splitlines()).strip()
        depth = getattr(el.metadata, "category_depth", None)
        level = depth + 1 if kind == "title" and leveled and depth is not None else None
        out.append(Element(text, kind, getattr(el.metadata, "page_number", None), level))
    return out


def first_heading(elements: list[Element]) -> str:
    """The text of the highest-level heading that comes first."""
    headings = [e for e in elements if e.kind == "title" and e.heading_level is not None]
    if not headings:
        return ""
    top = min(e.heading_level for e in headings)
    return next(e.text for e in headings if e.heading_level == top)


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """YAML front matter (between '---' lines at the top) and the text after it.

    Only a block that parses as a YAML mapping counts; a document that merely starts with a
    horizontal rule is left as it is.
    """
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            import yaml

            try:
                meta = yaml.safe_load("\n".join(lines[1:i])) or {}
            except yaml.YAMLError:
                return {}, text
            if not isinstance(meta, dict):
                return {}, text
            return meta, "\n".join(lines[i + 1 :])
    return {}, text


def _markdown(text: str, stem: str) -> Parsed:
    meta, body = split_front_matter(text)
    elements = convert(_partition("md.partition_md", text=body), leveled=True) if body.strip() else []
    title = str(meta.get("title") or "").strip() or first_heading(elements) or stem
    if not elements and meta:
        # A page that is only front matter (a redirect, a stub): what it says is its content.
        elements = [Element(front_matter_text(meta), "text")]
    return Parsed(title, "md", elements, "heading", {"front_matter": meta} if meta else {})


def front_matter_text(meta: dict[str, Any]) -> str:
    """Front matter as 'key: value' lines (scalars and lists of scalars; nested maps left out)."""
    lines = []
    for key, value in meta.items():
        if isinstance(value, (list, tuple)):
            value = ", ".join(str(v) for v in value if not isinstance(v, (dict, list)))
        elif isinstance(value, dict) or value is None:
            continue
        if str(value).strip():
            lines.append(f"{key}: {value}")
    return "\n".join(lines)


def _html(text: str, stem: str) -> Parsed:
    elements = convert(_partition("html.partition_html", text=text), leveled=True)
    match = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
    title = _SPACES.sub(" ", match.group(1)).strip() if match else ""
    return Parsed(title or first_heading(elements) or stem, "html", elements, "heading")


def _rst(text: str, stem: str) -> Parsed:
    """reStructuredText through docutils to HTML, then the HTML partitioner; without docutils, text."""
    try:
        from ingest.rst import rst_to_html
    except ImportError:
        return _plain(text, "rst", stem)
    elements = convert(_partition("html.partition_html", text=rst_to_html(text)), leveled=True)
    return Parsed(first_heading(elements) or stem, "rst", elements, "heading")


def _pdf(path: Path, stem: str) -> Parsed:
    if problem := pdf_problem(path):
        raise ParseError(problem)
    elements = convert(_partition("pdf.partition_pdf", filename=str(path), strategy="fast"), leveled=False)
    texts = [e.text for e in elements]
    trouble = None
    if not elements:
        trouble = "PDF has no extractable text (scanned?)"
    elif looks_garbled(texts):
        trouble = "PDF text layer is garbled (rotated page or spaced-out letters)"
    if trouble:
        if not ocr_available():
            raise ParseError(f"{trouble}; OCR needs tesseract and poppler-utils, which are not installed")
        elements = convert(_partition("pdf.partition_pdf", filename=str(path), strategy="ocr_only"), leveled=False)
        if not elements:
            raise ParseError(f"{trouble}; OCR found no text either")
    return Parsed(pdf_title(path) or stem, "pdf", elements, "page", {"ocr": bool(trouble)})


def _office(path: Path, kind: str, stem: str) -> Parsed:
    fn = {"docx": "docx.partition_docx", "pptx": "pptx.partition_pptx"}.get(kind, "xlsx.partition_xlsx")
    elements = convert(_partition(fn, filename=str(path)), leveled=kind in ("docx", "pptx"))
    return Parsed(first_heading(elements) or stem, kind, elements, "page" if kind == "pptx" else "none")


def _email(path: Path, kind: str, stem: str) -> Parsed:
    if kind == "eml":
        raw = _partition("email.partition_email", filename=str(path), process_attachments=False)
    else:
        raw = _partition("msg.partition_msg", filename=str(path), process_attachments=False)
    subject = next((el.metadata.subject for el in raw if getattr(el.metadata, "subject", None)), "")
    elements = convert(raw, leveled=False)
    return Parsed(subject or stem, kind, elements, "none")


# --- text and code: line numbers kept ------------------------------------------------------------


def _plain(text: str, kind: str, name: str) -> Parsed:
    """Plain text by paragraphs, each with its line range (unstructured's text partitioner drops them)."""
    elements = [
        Element(_SPACES.sub(" ", strip_controls(b.text)), "text", None, None, b.line_start, b.line_end)
        for b in line_blocks(text)
    ]
    return Parsed(name, kind, elements, "lines")


def _code(text: str, kind: str, name: str) -> Parsed:
    """Source code as blocks of lines separated by blank lines, verbatim, with their line ranges."""
    elements = [Element(strip_controls(b.text), "code", None, None, b.line_start, b.line_end) for b in line_blocks(text)]
    return Parsed(name, kind, elements, "lines")
