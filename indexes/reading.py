"""Reading stored chunks in their document's order: a chunk with its neighbours, or the chunks that
cover some lines or a page of a document.

Search returns single chunks; a reader (a person, an editor's agent) often needs the text around one.
Chunks of a document are numbered by `ordinal` in reading order, so the neighbours are the ordinals
next to it. Reads go through the sqlite3 connection (see `indexes.db.read_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass

from indexes.db import read_rows
from indexes.location import Located, Location, columns
from indexes.store import Store

READ_COLUMNS = f"c.id, c.ordinal, c.text, {columns('c')}"


@dataclass
class DocumentRef:
    """The document a passage belongs to, and where its original file lies."""

    document_id: int
    collection: str
    path: str  # relative to the ingested root
    root: str  # the absolute root it was ingested from ('' for uploads)
    title: str
    kind: str
    chunks: int  # how many chunks the document has
    sha256: str = ""  # of the bytes ingested: whether the file on disk is still the one the chunks came from


@dataclass
class PassageChunk(Located):
    """One chunk of a document in reading order."""

    chunk_id: int
    ordinal: int
    text: str
    location: Location

    def to_dict(self) -> dict:
        return self.flat_dict()


@dataclass
class Passage:
    """Some chunks of one document (the ones asked for, and their neighbours), in order."""

    document: DocumentRef
    chunks: list[PassageChunk]
    targets: list[int]  # chunk ids of the chunks asked for (the others are neighbours)


def _document(store: Store, where: str, params: tuple) -> DocumentRef | None:
    rows = read_rows(
        store.engine,
        "SELECT d.id, k.name, d.path, d.root, d.title, d.kind, "
        "(SELECT count(*) FROM chunk c WHERE c.document_id = d.id), d.sha256 "
        f"FROM document d JOIN collection k ON k.id = d.collection_id WHERE {where}",
        params,
    )
    return DocumentRef(*rows[0]) if rows else None


def document_of_chunk(store: Store, chunk_id: int) -> tuple[DocumentRef, int] | None:
    """The document holding a chunk, and the chunk's ordinal in it; None when there is no such chunk."""
    rows = read_rows(store.engine, "SELECT document_id, ordinal FROM chunk WHERE id = ?", (int(chunk_id),))
    if not rows:
        return None
    doc = _document(store, "d.id = ?", (rows[0][0],))
    return (doc, int(rows[0][1])) if doc else None


def document_by_id(store: Store, document_id: int) -> DocumentRef | None:
    """A document by its id; None when there is none."""
    return _document(store, "d.id = ?", (int(document_id),))


def document_at(store: Store, collection: str, path: str) -> DocumentRef | None:
    """The document of a collection at a path (relative to the root it was ingested from)."""
    return _document(store, "k.name = ? AND d.path = ?", (collection, path))


def ordinals_of(store: Store, document_id: int, chunk_ids: list[int]) -> list[int]:
    """The ordinals of those chunks that belong to this document (others are left out), in order."""
    ids = ",".join(str(int(i)) for i in set(chunk_ids))
    if not ids:
        return []
    rows = read_rows(store.engine, f"SELECT ordinal FROM chunk WHERE document_id = ? AND id IN ({ids}) ORDER BY ordinal",
                     (int(document_id),))
    return [int(r[0]) for r in rows]


def chunks_between(store: Store, document_id: int, first: int, last: int) -> list[PassageChunk]:
    """The chunks of a document whose ordinals lie in [first, last], in reading order."""
    rows = read_rows(
        store.engine,
        f"SELECT {READ_COLUMNS} FROM chunk c WHERE c.document_id = ? AND c.ordinal BETWEEN ? AND ? ORDER BY c.ordinal",
        (document_id, max(0, first), last),
    )
    return [PassageChunk(r[0], r[1], r[2], Location(*r[3:])) for r in rows]


def ordinals_covering(
    store: Store, document_id: int, *, start_line: int | None = None, end_line: int | None = None,
    page: int | None = None,
) -> list[int]:
    """Ordinals of the chunks that overlap lines [start_line, end_line] (either bound may be open) and
    lie on the page, when one is given. With neither lines nor a page: every chunk of the document."""
    conds, params = ["c.document_id = ?"], [document_id]
    if start_line is not None or end_line is not None:
        conds.append("c.line_start IS NOT NULL")
        if end_line is not None:
            conds.append("c.line_start <= ?")
            params.append(end_line)
        if start_line is not None:
            conds.append("coalesce(c.line_end, c.line_start) >= ?")
            params.append(start_line)
    if page is not None:
        conds.append("c.page = ?")
        params.append(page)
    rows = read_rows(
        store.engine, f"SELECT c.ordinal FROM chunk c WHERE {' AND '.join(conds)} ORDER BY c.ordinal", tuple(params)
    )
    return [int(r[0]) for r in rows]


def passage(store: Store, document: DocumentRef, ordinals: list[int], neighbours: int) -> Passage:
    """The chunks at these ordinals (one contiguous run from the first to the last) with `neighbours`
    chunks before and after."""
    first, last = min(ordinals), max(ordinals)
    chunks = chunks_between(store, document.document_id, first - neighbours, last + neighbours)
    targets = [c.chunk_id for c in chunks if first <= c.ordinal <= last]
    return Passage(document, chunks, targets)


def collection_names(store: Store) -> list[str]:
    """The names of the collections that can be read, sorted (a deleted one, renamed '~deleted-<id>'
    until its rows are purged, is left out)."""
    rows = read_rows(store.engine, "SELECT name FROM collection WHERE substr(name, 1, 1) != '~' ORDER BY name")
    return [r[0] for r in rows]


def document_roots(store: Store, document_ids: list[int]) -> dict[int, str]:
    """The ingested root of each document (to turn a relative path into the original file's path)."""
    if not document_ids:
        return {}
    marks = ",".join(str(int(i)) for i in set(document_ids))
    return {int(r[0]): r[1] or "" for r in read_rows(store.engine, f"SELECT id, root FROM document WHERE id IN ({marks})")}
