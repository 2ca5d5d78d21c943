"""Reading what a summary needs (a document and its chunks in order) and the cached summaries.

Kept apart from the store's write path: summaries are derived data, keyed by the document's content
hash, so a changed document simply misses the cache and a deleted one leaves a harmless row behind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from indexes.db import read_rows
from indexes.models import Summary, utcnow


@dataclass
class DocumentInfo:
    id: int
    collection_id: int
    collection: str
    path: str
    root: str
    title: str
    kind: str
    sha256: str


@dataclass
class Section:
    """One chunk of a document, in reading order, with where it is."""

    text: str
    page: int | None
    line_start: int | None
    line_end: int | None
    heading_path: str


DOC_SQL = (
    "SELECT d.id, d.collection_id, k.name, d.path, d.root, d.title, d.kind, d.sha256 "
    "FROM document d JOIN collection k ON k.id = d.collection_id "
)


def get_document_info(engine: Engine, document_id: int) -> DocumentInfo | None:
    rows = read_rows(engine, DOC_SQL + "WHERE d.id = ?", (int(document_id),))
    return DocumentInfo(*rows[0]) if rows else None


def find_document(engine: Engine, collection_id: int, key: str) -> DocumentInfo | None:
    """A document of the collection named by its id, its stored path, or the file's path on disk."""
    key = key.strip()
    if key.isdigit():
        doc = get_document_info(engine, int(key))
        return doc if doc is not None and doc.collection_id == collection_id else None
    rows = read_rows(engine, DOC_SQL + "WHERE d.collection_id = ? AND d.path = ?", (collection_id, key))
    if rows:
        return DocumentInfo(*rows[0])
    wanted = Path(key).expanduser().resolve()
    for row in read_rows(engine, DOC_SQL + "WHERE d.collection_id = ? AND d.root != ''", (collection_id,)):
        doc = DocumentInfo(*row)
        if Path(doc.root) / doc.path == wanted:
            return doc
    return None


def document_sections(engine: Engine, document_id: int) -> list[Section]:
    rows = read_rows(
        engine,
        "SELECT text, page, line_start, line_end, heading_path FROM chunk WHERE document_id = ? ORDER BY ordinal, id",
        (int(document_id),),
    )
    return [Section(*r) for r in rows]


def get_summary(engine: Engine, sha256: str, model: str, prompt_version: str) -> Summary | None:
    with Session(engine, expire_on_commit=False) as s:
        return s.exec(
            select(Summary).where(Summary.sha256 == sha256, Summary.model == model, Summary.prompt_version == prompt_version)
        ).first()


def put_summary(
    engine: Engine, sha256: str, model: str, prompt_version: str, text: str, overview: str, parts: list[dict], pieces: int
) -> None:
    """Store (or replace) the summary of this content by this model and prompt version."""
    with Session(engine, expire_on_commit=False) as s:
        row = s.exec(
            select(Summary).where(Summary.sha256 == sha256, Summary.model == model, Summary.prompt_version == prompt_version)
        ).first()
        if row is None:
            row = Summary(sha256=sha256, model=model, prompt_version=prompt_version, text=text)
        row.text, row.overview, row.pieces, row.created_at = text, overview, pieces, utcnow()
        row.parts = json.dumps(parts, ensure_ascii=False)
        s.add(row)
        s.commit()
