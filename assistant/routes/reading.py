"""What a source card opens: the passage in context, and the original file it came from.

- GET  /api/chunks/{id}/context    the chunk among its neighbours, in reading order (lines, page,
                                   heading, symbol of each), with the document it belongs to and the
                                   passage as one text (assistant/answers/passage_view.py); with
                                   ?chunks=a,b the source's other chunks are targets too
- GET  /api/documents/{id}/file    the original file, from where it was ingested; with ?lines=a-b, a
                                   text file as a page of numbered lines, lines a-b marked, each line
                                   anchored #L<n> (the page opens at the passage)

A passage's `document.file_url` opens the original at the target chunks: `?lines=a-b#La` for every
text file whose chunks have lines (the numbered page scrolls to line a and marks a-b), `#page=N` for a
PDF, the plain file otherwise; `numbered_lines` says whether the passage is shown as numbered lines.

The file route only serves a stored document's own file: its recorded root joined with its recorded
relative path, resolved, and still inside that root as recorded (a root that no longer resolves to
itself, a folder replaced by a link, serves nothing). Only types a browser shows without running
anything are served inline; all else is a download.
"""

from __future__ import annotations

import base64
import hashlib
import html
from pathlib import Path
from typing import Annotated

from anyio import to_thread
from litestar import Response, get
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import Parameter
from litestar.response import File

from indexes.reading import DocumentRef, PassageChunk, document_by_id, document_of_chunk, ordinals_of, passage
from indexes.records import real_path_inside, root_in_place

from assistant.answers.passage_view import REWRITTEN_KINDS, passage_view, reads_file
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
TEXT_TYPE = "text/plain"  # Litestar adds `; charset=utf-8` to every text/* type it sends
TEXT_KINDS = frozenset({
    "txt", "md", "markdown", "rst", "py", "js", "ts", "tsx", "jsx", "go", "rs", "java", "c", "h", "cpp", "hpp",
    "cs", "rb", "php", "sh", "toml", "yaml", "yml", "json", "ini", "cfg", "csv", "sql", "html", "htm", "xml",
    "css", "svg", "tex", "org", "log", "rst", "xhtml",
})
# The file's own scripts, forms and plugins stay off even when a browser is told to render it.
FILE_HEADERS = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox; default-src 'none'"}
# The numbered page's one stylesheet (long lines wrapped; light or dark as the reader's system is), allowed
# by its hash: no other style, and still no script, can run in it.
LINES_STYLE = "pre{white-space:pre-wrap;overflow-wrap:anywhere}mark{background:#ffe27a;color:#1c1d21}"
LINES_HEADERS = {
    **FILE_HEADERS,
    "Content-Security-Policy": "sandbox; default-src 'none'; style-src "
    f"'sha256-{base64.b64encode(hashlib.sha256(LINES_STYLE.encode()).digest()).decode()}'",
}
MAX_LINES_VIEW_BYTES = 8 * 1024 * 1024  # a larger text file is served as it is, without the numbered view
LINES = r"^[1-9][0-9]{0,8}(-[1-9][0-9]{0,8})?$"
CHUNK_IDS = r"^[1-9][0-9]{0,11}(,[1-9][0-9]{0,11}){0,9}$"


def file_url(document_id: int) -> str:
    return f"/api/documents/{document_id}/file"


def passage_url(doc: DocumentRef, chunks: list[PassageChunk]) -> str:
    """The original file opened at these chunks: a text file's numbered page at their lines, a PDF at
    their first page, else the file itself."""
    url = file_url(doc.document_id)
    lines = [(c.line_start, c.line_end or c.line_start) for c in chunks if c.line_start is not None]
    if lines and (doc.kind in REWRITTEN_KINDS or content_type(doc.kind, doc.path)[0] == TEXT_TYPE):
        first, last = min(a for a, _ in lines), max(b for _, b in lines)
        return f"{url}?lines={first}-{last}#L{first}"
    pages = [c.page for c in chunks if c.page]
    if doc.kind == "pdf" and pages:
        return f"{url}#page={min(pages)}"
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
    of it escaped (nothing of the file is rendered); no scripts, and only our own stylesheet (by its hash)."""
    rows = []
    for n, line in enumerate(text.splitlines() or [""], start=1):
        row = f'<span id="L{n}">{n:>6}  {html.escape(line)}</span>'
        rows.append(f"<mark>{row}</mark>" if first <= n <= last else row)
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><meta name="color-scheme" content="light dark">'
            f'<style>{LINES_STYLE}</style></head><body><pre>{chr(10).join(rows)}</pre></body></html>')


def deleted(doc: DocumentRef) -> bool:
    """Whether the document's collection was deleted (renamed '~deleted-<id>' until purged)."""
    return doc.collection.startswith("~")


def document_summary(doc: DocumentRef, targets: list[PassageChunk]) -> dict:
    return {
        "document_id": doc.document_id, "collection": doc.collection, "path": doc.path, "title": doc.title,
        "kind": doc.kind, "chunks": doc.chunks, "file_url": passage_url(doc, targets),
    }


def unchanged_text(doc: DocumentRef) -> str | None:
    """The original file's text while it is still the file the chunks were made from (same sha256, under
    the size limit, inside its root as recorded); None otherwise."""
    if not doc.root or not doc.sha256 or not root_in_place(doc.root):
        return None
    path = real_path_inside(Path(doc.root) / doc.path, doc.root)
    if path is None or not path.is_file() or path.stat().st_size > MAX_LINES_VIEW_BYTES:
        return None
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != doc.sha256:
        return None
    return data.decode("utf-8", errors="replace")


def chunk_context(services: Services, identity: Identity, chunk_id: int, neighbours: int,
                  also: list[int] | None = None) -> dict:
    """The chunk (with `also`, the other chunks of its source: those of its document count) among its
    neighbours, and the passage they make."""
    found = document_of_chunk(services.store, chunk_id)
    if found is None or deleted(found[0]) or not identity.can_use(found[0].collection):  # ids cannot be probed
        raise NotFoundException(f"no chunk {chunk_id}")
    doc, ordinal = found
    ordinals = [ordinal, *ordinals_of(services.store, doc.document_id, also or [])]
    p = passage(services.store, doc, ordinals, neighbours)
    targets = [c for c in p.chunks if c.chunk_id in p.targets]
    view = passage_view(p.chunks, set(p.targets), doc.kind,
                        unchanged_text(doc) if reads_file(doc.kind, p.chunks) else None)
    return {
        "document": document_summary(doc, targets) | {"numbered_lines": view["format"] == "lines"},
        "chunks": [c.to_dict() | {"target": c.chunk_id in p.targets} for c in p.chunks],
        "target": chunk_id,
        "passage": view,
    }


def original_file(services: Services, identity: Identity, document_id: int) -> tuple[Path, DocumentRef]:
    """The document's file on disk, when it still lies inside the root it was ingested from."""
    doc = document_by_id(services.store, document_id)
    if doc is None or deleted(doc) or not identity.can_use(doc.collection):  # another's id is as good as none
        raise NotFoundException(f"no document {document_id}")
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
        return TEXT_TYPE, "inline"
    return "application/octet-stream", "attachment"


@get("/api/chunks/{chunk_id:int}/context", tags=["collections"], opt=scoped("read"))
async def chunk_in_context(
    services: Services, identity: Identity, chunk_id: RowId,
    neighbours: Annotated[int, Parameter(ge=0, le=10, description="chunks shown before and after")] = 2,
    chunks: Annotated[str | None, Parameter(pattern=CHUNK_IDS, description="the source's other chunk ids (a,b): targets too")] = None,
) -> dict:
    """The chunk with its neighbouring chunks of the same document, in reading order, and the passage
    they make as one text; `chunks` names the other chunks of the same source."""
    also = [int(i) for i in chunks.split(",")] if chunks else []
    return await to_thread.run_sync(chunk_context, services, identity, chunk_id, neighbours, also)


def lines_view(path: Path, doc: DocumentRef, lines: str) -> str | None:
    """The numbered page of a text file at these lines; None for a file that is not text or too large."""
    first, last = parse_lines(lines)
    if content_type(doc.kind, path.name)[0] != TEXT_TYPE or path.stat().st_size > MAX_LINES_VIEW_BYTES:
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
        return Response(page, media_type="text/html", headers=LINES_HEADERS)
    media_type, disposition = content_type(doc.kind, path.name)
    return File(path=path, filename=path.name, media_type=media_type, content_disposition_type=disposition,
                headers=FILE_HEADERS)
