"""What a source card opens: the passage in context, and the original file it came from.

- GET  /api/chunks/{id}/context    the chunk among its neighbours, in reading order (lines, page,
                                   heading, symbol of each), with the document it belongs to
- GET  /api/documents/{id}/file    the original file, from where it was ingested; with ?lines=a-b, a
                                   text file as a page of numbered lines, lines a-b marked, each line
                                   anchored #L<n> (the page opens at the passage)

A passage's `document.file_url` opens the original at the target chunk: `?lines=a-b#La` for Markdown,
reStructuredText and HTML (their chunks are rewritten text, so the page shows the file's own lines
only there), `#page=N` for a PDF, the plain file otherwise; `numbered_lines` says whether the chunks'
texts are the file's own lines, which the page may number.

The file route only serves a stored document's own file: its recorded root joined with its recorded
relative path, resolved, and still inside that root as recorded (a root that no longer resolves to
itself, a folder replaced by a link, serves nothing). Only types a browser shows without running
anything are served inline; all else is a download.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Annotated

from anyio import to_thread
from litestar import Response, get
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import Parameter
from litestar.response import File

from indexes.reading import DocumentRef, PassageChunk, document_by_id, document_of_chunk, passage
from indexes.records import real_path_inside, root_in_place

from assistant.security.access import Identity, scoped
from assistant.routes.deps import RowId
from assistant.services import Services

# File kinds a browser may show inline, and the type they are shown as. Text of any kind (HTML and
# SVG included) is shown as plain text, never rendered.
INLINE_TYPES = {
    "pdf": "application/pdf",
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
}
TEXT_KINDS = frozenset({
    "txt", "md", "markdown", "rst", "py", "js", "ts", "tsx", "jsx", "go", "rs", "java", "c", "h", "cpp", "hpp",
    "cs", "rb", "php", "sh", "toml", "yaml", "yml", "json", "ini", "cfg", "csv", "sql", "html", "htm", "xml",
    "css", "svg", "tex", "org", "log",
})
# Kinds whose chunk texts are rewritten by their parser (markup dropped, lines joined), not the file's lines.
REWRITTEN_KINDS = frozenset({"md", "markdown", "rst", "html", "htm", "xhtml"})
# The file's own scripts, forms and plugins stay off even when a browser is told to render it.
FILE_HEADERS = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox; default-src 'none'"}
MAX_LINES_VIEW_BYTES = 8 * 1024 * 1024  # a larger text file is served as it is, without the numbered view
LINES = r"^[1-9][0-9]{0,8}(-[1-9][0-9]{0,8})?$"


def file_url(document_id: int) -> str:
    return f"/api/documents/{document_id}/file"


def passage_url(doc: DocumentRef, chunk: PassageChunk | None) -> str:
    """The original file opened at a chunk: its lines for rewritten text, its page for a PDF."""
    url = file_url(doc.document_id)
    if chunk is None:
        return url
    if doc.kind in REWRITTEN_KINDS and chunk.line_start is not None:
        end = chunk.line_end or chunk.line_start
        return f"{url}?lines={chunk.line_start}-{end}#L{chunk.line_start}"
    if doc.kind == "pdf" and chunk.page:
        return f"{url}#page={chunk.page}"
    return url


def parse_lines(lines: str) -> tuple[int, int]:
    """`a-b` (or `a`) as (first, last), 1-based; 400 when last comes before first."""
    first, _, last = lines.partition("-")
    a, b = int(first), int(last or first)
    if b < a:
        raise ValidationException(f"lines {lines!r}: the last line comes before the first")
    return a, b


def numbered_page(text: str, first: int, last: int) -> str:
    """The text as one HTML page: every line numbered and anchored `L<n>`, lines first..last marked. All
    of it escaped (nothing of the file is rendered); no styles or scripts, so the sandbox keeps them off."""
    rows = []
    for n, line in enumerate(text.splitlines() or [""], start=1):
        row = f'<span id="L{n}">{n:>6}  {html.escape(line)}</span>'
        rows.append(f"<mark>{row}</mark>" if first <= n <= last else row)
    return f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><pre>{chr(10).join(rows)}</pre></body></html>'


def deleted(doc: DocumentRef) -> bool:
    """Whether the document's collection was deleted (renamed '~deleted-<id>' until purged)."""
    return doc.collection.startswith("~")


def document_summary(doc: DocumentRef, target: PassageChunk | None = None) -> dict:
    return {
        "document_id": doc.document_id, "collection": doc.collection, "path": doc.path, "title": doc.title,
        "kind": doc.kind, "chunks": doc.chunks, "file_url": passage_url(doc, target),
    }


def chunk_context(services: Services, identity: Identity, chunk_id: int, neighbours: int) -> dict:
    found = document_of_chunk(services.store, chunk_id)
    if found is None or deleted(found[0]):
        raise NotFoundException(f"no chunk {chunk_id}")
    doc, ordinal = found
    identity.check_collection(doc.collection)
    p = passage(services.store, doc, [ordinal], neighbours)
    target = next((c for c in p.chunks if c.chunk_id == chunk_id), None)
    numbered = (doc.kind not in REWRITTEN_KINDS and all(c.line_start is not None for c in p.chunks)
                and not any(c.page for c in p.chunks))
    return {
        "document": document_summary(doc, target) | {"numbered_lines": numbered},
        "chunks": [c.to_dict() | {"target": c.chunk_id in p.targets} for c in p.chunks],
        "target": chunk_id,
    }


def original_file(services: Services, identity: Identity, document_id: int) -> tuple[Path, DocumentRef]:
    """The document's file on disk, when it still lies inside the root it was ingested from."""
    doc = document_by_id(services.store, document_id)
    if doc is None or deleted(doc):
        raise NotFoundException(f"no document {document_id}")
    identity.check_collection(doc.collection)
    if not doc.root:
        raise NotFoundException(f"document {document_id} has no original file on this server")
    if not root_in_place(doc.root):  # resolving it now would follow a link swapped in for the folder
        raise NotFoundException(f"the folder document {document_id} was ingested from has been replaced or "
                                "moved behind a link: its original file is not served")
    path = real_path_inside(Path(doc.root) / doc.path, doc.root)
    if path is None or not path.is_file():
        raise NotFoundException(f"the original file of document {document_id} is no longer at {doc.path}")
    return path, doc


def content_type(kind: str, name: str) -> tuple[str, str]:
    """(media type, disposition) for a file of this kind."""
    kind = (kind or Path(name).suffix.lstrip(".")).lower()
    if kind in INLINE_TYPES:
        return INLINE_TYPES[kind], "inline"
    if kind in TEXT_KINDS:
        return "text/plain; charset=utf-8", "inline"
    return "application/octet-stream", "attachment"


@get("/api/chunks/{chunk_id:int}/context", tags=["collections"], opt=scoped("read"))
async def chunk_in_context(
    services: Services, identity: Identity, chunk_id: RowId,
    neighbours: Annotated[int, Parameter(ge=0, le=10, description="chunks shown before and after")] = 2,
) -> dict:
    """The chunk with its neighbouring chunks of the same document, in reading order."""
    return await to_thread.run_sync(chunk_context, services, identity, chunk_id, neighbours)


def lines_view(path: Path, doc: DocumentRef, lines: str) -> str | None:
    """The numbered page of a text file at these lines; None for a file that is not text or too large."""
    first, last = parse_lines(lines)
    if content_type(doc.kind, path.name)[0] != "text/plain; charset=utf-8" or path.stat().st_size > MAX_LINES_VIEW_BYTES:
        return None
    return numbered_page(path.read_bytes().decode("utf-8", errors="replace"), first, last)


@get("/api/documents/{document_id:int}/file", tags=["collections"], opt=scoped("read"))
async def document_file(
    services: Services, identity: Identity, document_id: RowId,
    lines: Annotated[str | None, Parameter(pattern=LINES, description="a-b: a text file as numbered lines, these marked")] = None,
) -> Response:
    """The original file of a document (a download unless it is a type shown safely inline); with `lines`,
    a text file as a page of numbered lines anchored #L<n>, those lines marked."""
    path, doc = await to_thread.run_sync(original_file, services, identity, document_id)
    if lines is not None and (page := await to_thread.run_sync(lines_view, path, doc, lines)) is not None:
        return Response(page, media_type="text/html; charset=utf-8", headers=FILE_HEADERS)
    media_type, disposition = content_type(doc.kind, path.name)
    return File(path=path, filename=path.name, media_type=media_type, content_disposition_type=disposition,
                headers=FILE_HEADERS)
