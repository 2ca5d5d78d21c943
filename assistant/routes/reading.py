"""What a source card opens: the passage in context, and the original file it came from.

- GET  /api/chunks/{id}/context    the chunk among its neighbours, in reading order (lines, page,
                                   heading, symbol of each), with the document it belongs to
- GET  /api/documents/{id}/file    the original file, from where it was ingested

The file route only serves a stored document's own file: its recorded root joined with its recorded
relative path, resolved, and still inside that root as recorded (a root that no longer resolves to
itself, a folder replaced by a link, serves nothing). Only types a browser shows without running
anything are served inline; all else is a download.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from anyio import to_thread
from litestar import get
from litestar.exceptions import NotFoundException
from litestar.params import Parameter
from litestar.response import File

from indexes.reading import DocumentRef, document_by_id, document_of_chunk, passage
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
# The file's own scripts, forms and plugins stay off even when a browser is told to render it.
FILE_HEADERS = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox; default-src 'none'"}


def file_url(document_id: int) -> str:
    return f"/api/documents/{document_id}/file"


def deleted(doc: DocumentRef) -> bool:
    """Whether the document's collection was deleted (renamed '~deleted-<id>' until purged)."""
    return doc.collection.startswith("~")


def document_summary(doc: DocumentRef) -> dict:
    return {
        "document_id": doc.document_id, "collection": doc.collection, "path": doc.path, "title": doc.title,
        "kind": doc.kind, "chunks": doc.chunks, "file_url": file_url(doc.document_id),
    }


def chunk_context(services: Services, identity: Identity, chunk_id: int, neighbours: int) -> dict:
    found = document_of_chunk(services.store, chunk_id)
    if found is None or deleted(found[0]):
        raise NotFoundException(f"no chunk {chunk_id}")
    doc, ordinal = found
    identity.check_collection(doc.collection)
    p = passage(services.store, doc, [ordinal], neighbours)
    return {
        "document": document_summary(doc),
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


@get("/api/documents/{document_id:int}/file", tags=["collections"], opt=scoped("read"))
async def document_file(services: Services, identity: Identity, document_id: RowId) -> File:
    """The original file of a document (a download unless it is a type shown safely inline)."""
    path, doc = await to_thread.run_sync(original_file, services, identity, document_id)
    media_type, disposition = content_type(doc.kind, path.name)
    return File(path=path, filename=path.name, media_type=media_type, content_disposition_type=disposition,
                headers=FILE_HEADERS)
