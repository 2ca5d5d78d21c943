"""A question about one document: the whole document in the prompt when it fits the backend's window,
else retrieval restricted to that document.

Whole: the document's chunks, in reading order, are merged into consecutive parts (the chunks of one
section on one page, their overlaps written once, at most PART_CHUNKS of them) numbered [1], [2], ...
like retrieved sources, so that the answer cites lines or pages as every answer does and the answer
check scores each citation against its part. The prompt is counted with the backend's own tokenizer and
must hold all of the document, uncut, within `context window - answer tokens - margin`.

Retrieved: when it does not fit, the question (or a follow-up's standalone query) searches that
document alone, with no cap on the places one document may take, and the prompt is built as for any
question: the best passages first, as many as fit.

`done` says which happened: `document_mode` ("whole" | "retrieved") and `document` {id, collection,
path, title, mode, prompt_tokens, whole_prompt_tokens, context_window, budget}. `whole_prompt_tokens` is
what the prompt with the whole document counted; null when the document is so long that it was not
counted (more than MAX_CHARS_PER_TOKEN characters per token of the budget cannot fit any tokenizer).

A request to summarise a document too long for one prompt is answered here like any other question,
from the passages retrieval finds in it, so it covers only part of the document; a summary of all of it
is POST /api/documents/{id}/summary (answers/summarize.py: map-reduce over every chunk, cited by lines
or pages), which the page and the API offer beside the question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Callable

from pydantic import BeforeValidator, Field

from indexes import reading
from indexes.retrieval.hits import merge_parts
from indexes.retrieval.filters import SearchFilters, literal_glob
from indexes.reading import DocumentRef, PassageChunk
from indexes.retrieval.retriever import Hit, Retriever, snippet_of
from indexes.store import Store

from assistant.answers.prompts import Prompt, TokenCounter, build_prompt, prompt_budget, whole_prompt

PART_CHUNKS = 4  # chunks merged into one numbered part at most: a citation names a few lines or a page
MAX_CHARS_PER_TOKEN = 64  # past this many characters per budget token a document is not counted: it cannot fit
LAST_ORDINAL = 2**62
MAX_ROW_ID = 2**63 - 1


def _not_a_bool(value: Any) -> Any:
    if isinstance(value, bool):  # JSON true is no id, and a lax number field would read it as 1
        raise ValueError("a document is named by its id (a number) or its path (a string)")
    return value


# How a request names a document: its id, or its path within the collection.
DocumentKey = Annotated[
    Annotated[int, Field(ge=1, le=MAX_ROW_ID)] | Annotated[str, Field(min_length=1, max_length=1024)],
    BeforeValidator(_not_a_bool),
]


class UnknownDocument(LookupError):
    """No such document, or one in a collection the caller may not read: the same answer for both."""


class DocumentNotAnswerable(ValueError):
    """The request names its document in a way that cannot be answered (the message says why)."""


def find_document(store: Store, key: int | str, collection: str | None, can_use: Callable[[str], bool]) -> DocumentRef:
    """The document a request names: a number is its id (within `collection` when one is named); a string
    its path within `collection`, else, when it is all digits, its id. Raises UnknownDocument alike for a
    document that does not exist and one whose collection the caller may not read, and
    DocumentNotAnswerable for a path without a collection or a document without text."""
    if collection is not None and not can_use(collection):
        raise UnknownDocument(f"no document {key!r}")
    doc: DocumentRef | None = None
    if isinstance(key, str):
        path = key.strip()
        if not path:
            raise DocumentNotAnswerable("the document is empty: give its id or its path within the collection")
        if collection is None and not _digits(path):
            raise DocumentNotAnswerable(f"name the collection of the document {path!r} (a path is only known "
                                        "within its collection)")
        if collection is not None:
            doc = reading.document_at(store, collection, path)
        if doc is None and _digits(path):
            doc = _by_id(store, int(path), collection)
    else:
        doc = _by_id(store, key, collection)
    if doc is None or not can_use(doc.collection):
        raise UnknownDocument(f"no document {key!r}" + (f" in collection {collection!r}" if collection else ""))
    if doc.chunks == 0:
        raise DocumentNotAnswerable(f"the document {doc.path!r} has no text to answer from (it was not ingested: "
                                    "see its collection's failed files)")
    return doc


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _by_id(store: Store, document_id: int, collection: str | None) -> DocumentRef | None:
    if not 1 <= document_id <= MAX_ROW_ID:
        return None
    doc = reading.document_by_id(store, document_id)
    return doc if doc is not None and collection in (None, doc.collection) else None


def document_parts(store: Store, doc: DocumentRef, question: str = "") -> list[Hit]:
    """The whole document as consecutive sources: chunks of one section and page merged, PART_CHUNKS at most."""
    groups: list[list[PassageChunk]] = []
    for chunk in reading.chunks_between(store, doc.document_id, 0, LAST_ORDINAL):
        last = groups[-1] if groups else None
        if (last is not None and len(last) < PART_CHUNKS and last[-1].heading_path == chunk.heading_path
                and last[-1].page == chunk.page):
            last.append(chunk)
        else:
            groups.append([chunk])
    return [_part(doc, group, question) for group in groups]


def _part(doc: DocumentRef, group: list[PassageChunk], question: str) -> Hit:
    text = merge_parts([c.text for c in group])[0]
    where = group[0].location
    starts = [c.line_start for c in group if c.line_start is not None]
    ends = [c.line_end if c.line_end is not None else c.line_start for c in group if c.line_start is not None]
    if starts:
        where = where.with_lines(min(starts), max(ends))
    return Hit(chunk_id=group[0].chunk_id, document_id=doc.document_id, collection=doc.collection, path=doc.path,
               title=doc.title, kind=doc.kind, text=text, snippet=snippet_of(text, question), location=where,
               score=1.0, chunk_ids=[c.chunk_id for c in group])


@dataclass
class DocumentPrompt:
    """The prompt of a question about one document, and what `done` says of it."""

    prompt: Prompt
    mode: str  # "whole" | "retrieved"
    whole_prompt_tokens: int | None  # the whole document's prompt as counted (None: too long to count)

    def done_fields(self, doc: DocumentRef, backend: TokenCounter) -> dict[str, Any]:
        return {
            "document_mode": self.mode,
            "document": {
                "id": doc.document_id, "collection": doc.collection, "path": doc.path, "title": doc.title,
                "mode": self.mode, "prompt_tokens": self.prompt.prompt_tokens,
                "whole_prompt_tokens": self.whole_prompt_tokens, "context_window": backend.context_window,
                "budget": self.prompt.budget,
            },
        }


def document_prompt(
    question: str,
    doc: DocumentRef,
    *,
    retriever: Retriever,
    backend: TokenCounter,
    max_answer_tokens: int,
    margin: int,
    k: int,
    history: list[dict] | None = None,
    query: str | None = None,
) -> DocumentPrompt:
    """The whole document when its prompt fits, else the passages of it that `query` (else the question)
    retrieves. Raises PromptTooLong when not even the question fits."""
    parts = document_parts(retriever.store, doc, question)
    budget = prompt_budget(backend, max_answer_tokens, margin)
    counted: int | None = None
    if sum(len(p.text) for p in parts) <= max(budget, 0) * MAX_CHARS_PER_TOKEN:
        prompt, counted = whole_prompt(question, parts, backend, max_answer_tokens, margin, history)
        if prompt is not None:
            return DocumentPrompt(prompt, "whole", counted)
    only = SearchFilters(paths=(literal_glob(doc.path),))
    hits = retriever.search(query or question, doc.collection, k, filters=only, per_document=0)
    hits = [h for h in hits if h.document_id == doc.document_id]
    prompt = build_prompt(question, hits, backend, max_answer_tokens, margin, history)
    return DocumentPrompt(prompt, "retrieved", counted)
