"""The MCP tools as plain functions over the Services: list collections, search, ask, read a source.

The MCP server (assistant/mcp_api/server.py) only registers them; keeping them free of the protocol lets
the same functions be called and tested directly. Every passage they return names its file (`path`
relative to the ingested root, `file` when the root is known), its line range or page, and a
`location` such as `src/flask/app.py:L120-L180`, so that an agent can open the original.
A call that cannot be answered raises ToolCallError with a message written for the caller.

Every tool takes the caller's Identity and asks the one access decision (`access.authorize`) with the
scope of its REST twin before it reads anything: `list_collections`, `search` and `read_source` need
read, `ask` needs ask (TOOL_SCOPES). Collections the caller may not use are neither listed nor named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from indexes import reading
from indexes.retrieval.filters import SearchFilters
from indexes.location import Location
from indexes.retrieval.retriever import Hit

from assistant.security.access import AccessDenied, Identity, authorize
from assistant.answers.ask import AskError, Question
from assistant.services import Services

MAX_K = 50
MAX_FILTERS = 32
MAX_NEIGHBOURS = 5
MAX_READ_CHUNKS = 20  # chunks asked for by a line range or page, before neighbours
TOOL_SCOPES = {"list_collections": "read", "search": "read", "ask": "ask", "read_source": "read"}


class ToolCallError(ValueError):
    """A tool call that cannot be answered; the message says why and is shown to the caller."""


# --- where a passage lies ---------------------------------------------------------------------


def mcp_location(path: str, where: Location) -> str:
    """How a tool names a place for an editor or agent to open: `path:Lstart-Lend` for text with lines,
    `path#page=N` for a page, the path alone otherwise."""
    start, end = where.line_start, where.line_end
    if start is not None:
        return f"{path}:L{start}-L{end if end is not None else start}"
    if where.page is not None:
        return f"{path}#page={where.page}"
    return path


def file_of(identity: Identity, root: str, path: str) -> str | None:
    """The original file's absolute path, when the document was ingested from a folder and the caller is
    on this machine (keyless use): server paths are not shown to callers with keys."""
    return str(Path(root) / path) if root and identity.key_id is None else None


def hit_result(identity: Identity, hit: Hit | dict, roots: dict[int, str]) -> dict[str, Any]:
    """A retrieved chunk as a tool shows it: where it is, what it is about, and a snippet."""
    h = hit.to_dict() if isinstance(hit, Hit) else hit
    out = {
        "chunk_id": h["chunk_id"],
        "collection": h["collection"],
        "path": h["path"],
        "file": file_of(identity, roots.get(h["document_id"], ""), h["path"]),
        "location": mcp_location(h["path"], Location.from_dict(h)),
        "line_start": h["line_start"],
        "line_end": h["line_end"],
        "page": h["page"],
        "title": h["title"],
        "kind": h["kind"],
        "heading_path": h["heading_path"],
        "symbol": h["symbol"],
        "score": round(float(h["score"]), 4),
        "snippet": h["snippet"],
    }
    for key in ("n", "cited", "support"):  # an answer's sources: the prompt's numbering, the citation check
        if key in h:
            out[key] = h[key]
    return out


# --- who is calling -------------------------------------------------------------------------------


def allow(identity: Identity, tool: str, collections: list[str] | tuple[str, ...] = ()) -> None:
    """The access decision for one tool call, refused as a tool error."""
    try:
        authorize(identity, TOOL_SCOPES[tool], collections)
    except AccessDenied as exc:
        raise ToolCallError(exc.detail) from None


def usable_names(services: Services, identity: Identity) -> list[str]:
    return [n for n in reading.collection_names(services.store) if identity.can_use(n)]


# --- checking the input -----------------------------------------------------------------------


def resolve_collection(services: Services, identity: Identity, tool: str, collection: str | None) -> str:
    """The collection to use, once the caller may: the one named, or the only one the caller may use;
    else an error listing the caller's own. A named collection costs one lookup; the list is read only
    when needed."""
    if collection and collection.strip():
        allow(identity, tool, [collection])
        if services.store.get_collection(collection) is not None:
            return collection
        known = usable_names(services, identity)
        raise ToolCallError(f"unknown collection {collection!r} (known: {', '.join(known) or 'none yet'})")
    allow(identity, tool)
    names = usable_names(services, identity)
    if len(names) == 1:
        return names[0]
    listed = ", ".join(names) if names else "none yet: ingest some documents first"
    raise ToolCallError(f"name a collection (known: {listed})")


def check_text(services: Services, value: str, what: str) -> str:
    text = (value or "").strip()
    limit = services.settings.server.max_question_chars
    if not text:
        raise ToolCallError(f"the {what} is empty")
    if len(text) > limit:
        raise ToolCallError(f"the {what} is too long: {len(text)} characters, at most {limit}")
    return text


def check_k(k: int | None) -> int | None:
    if k is not None and not 1 <= k <= MAX_K:
        raise ToolCallError(f"k must be between 1 and {MAX_K}, not {k}")
    return k


def filters_of(paths: list[str] | None, kinds: list[str] | None) -> SearchFilters | None:
    """Path globs and file types as a search filter (None when both are empty)."""
    paths, kinds = list(paths or []), list(kinds or [])
    for name, values in (("paths", paths), ("kinds", kinds)):
        if len(values) > MAX_FILTERS:
            raise ToolCallError(f"at most {MAX_FILTERS} {name}, not {len(values)}")
    return SearchFilters.coerce({"paths": paths, "kinds": kinds})


# --- the tools --------------------------------------------------------------------------------


def list_collections(services: Services, identity: Identity) -> dict[str, Any]:
    """Every collection the caller may use, with its document and chunk counts."""
    allow(identity, "list_collections")
    return {
        "collections": [
            {k: c[k] for k in ("name", "title", "documents", "chunks", "failed", "embedder")}
            for c in services.store.list_collections() if identity.can_use(c["name"])
        ]
    }


def search(
    services: Services,
    identity: Identity,
    query: str,
    collection: str | None = None,
    k: int = 10,
    paths: list[str] | None = None,
    kinds: list[str] | None = None,
) -> dict[str, Any]:
    """The passages a query retrieves (hybrid dense + BM25), best first, without generating."""
    name = resolve_collection(services, identity, "search", collection)
    query = check_text(services, query, "query")
    k = check_k(k) or 10
    hits = services.retriever.search(query, name, k, filters=filters_of(paths, kinds))
    roots = reading.document_roots(services.store, [h.document_id for h in hits])
    return {"query": query, "collection": name, "hits": [hit_result(identity, h, roots) for h in hits]}


async def ask(
    services: Services,
    identity: Identity,
    question: str,
    collection: str | None = None,
    k: int | None = None,
    paths: list[str] | None = None,
    kinds: list[str] | None = None,
    document: str | None = None,
) -> dict[str, Any]:
    """The answer to a question from a collection, with its sources (the cited ones first).

    The same ask use case as /api/ask, /v1 and `assistant ask` (answers/ask.py): retrieval, a prompt that
    fits, the backend, and the check of its citations: each source's `support`, the answer's `check`, and
    `model_answer` when the answer is not the model's text (replaced, or the sources' words quoted under it,
    `check.quotes`). With `document` (a path in the collection, or an
    id), the question is about that document alone, and the result says how it was read (`document_mode`:
    whole or retrieved). A refusal is a tool error that ends with its code, as the other doors name it.
    """
    allow(identity, "ask")
    if document is not None and (paths or kinds):  # this door's names for the filters
        raise ToolCallError("give either document or paths/kinds: a question about one document searches it alone "
                            "(invalid_request)")
    named = collection is not None and collection.strip()
    names = (collection,) if named else (resolve_collection(services, identity, "ask", None),)  # the caller's only one
    asked = Question(question, names, k=check_k(k), filters=filters_of(paths, kinds), document=document)
    try:
        answering = await services.asking.open(identity, asked)
    except AskError as exc:
        raise tool_error(exc, services, identity) from None
    got = await answering.outcome()
    if got.failed is not None:
        raise ToolCallError(f"the answer failed: {got.failed.message} ({got.failed.code})")
    sources, done = got.sources, got.fields
    roots = reading.document_roots(services.store, [s["document_id"] for s in sources])
    result = {
        "question": question.strip(),
        "collection": answering.collections[0],
        "answer": got.answer,
        "sources": [hit_result(identity, s, roots) for s in sources],
        "model": done.get("model"),
        "check": done.get("check"),
    }
    for key in ("model_answer", "document_mode", "document", "absent_words"):
        if key in done:
            result[key] = done[key]
    return result


def tool_error(exc: AskError, services: Services, identity: Identity) -> ToolCallError:
    """The ask use case's refusal as a tool error: its message, the caller's collections where that helps,
    and its code."""
    message = exc.message
    if exc.code == "collection_not_found":
        message += f" (known: {', '.join(usable_names(services, identity)) or 'none yet'})"
    elif exc.code == "busy":
        message = f"the backend is busy: retry in {exc.retry_after} s"
    return ToolCallError(f"{message} ({exc.code})")


def read_source(
    services: Services,
    identity: Identity,
    chunk_id: int | None = None,
    collection: str | None = None,
    path: str | None = None,
    start_line: int | None = None,
    end_line: int | None = None,
    page: int | None = None,
    neighbours: int = 1,
) -> dict[str, Any]:
    """A passage of a document with `neighbours` chunks before and after it: by chunk id (from a
    search or an answer), or by collection + path and optionally a line range or a page."""
    allow(identity, "read_source")
    if not 0 <= neighbours <= MAX_NEIGHBOURS:
        raise ToolCallError(f"neighbours must be between 0 and {MAX_NEIGHBOURS}, not {neighbours}")
    store = services.store
    if chunk_id is not None:
        if path or start_line is not None or end_line is not None or page is not None:
            raise ToolCallError("give either chunk_id, or path with optional start_line/end_line/page, not both")
        found = reading.document_of_chunk(store, chunk_id)
        if found is None or not identity.can_use(found[0].collection):  # another's chunk is as good as none
            raise ToolCallError(f"no chunk {chunk_id}")
        doc, ordinal = found
        ordinals = [ordinal]
    else:
        if not path:
            raise ToolCallError("give chunk_id, or path (with collection when there are several)")
        for name, value in (("start_line", start_line), ("end_line", end_line), ("page", page)):
            if value is not None and value < 1:
                raise ToolCallError(f"{name} must be at least 1, not {value}")
        if start_line is not None and end_line is not None and end_line < start_line:
            raise ToolCallError(f"end_line {end_line} is before start_line {start_line}")
        name = resolve_collection(services, identity, "read_source", collection)
        doc = reading.document_at(store, name, path)
        if doc is None:
            raise ToolCallError(f"no document {path!r} in collection {name!r}")
        ordinals = reading.ordinals_covering(store, doc.document_id, start_line=start_line, end_line=end_line, page=page)
        if not ordinals:
            asked = f"lines {start_line or 1}-{end_line or 'end'}" if page is None else f"page {page}"
            raise ToolCallError(f"{path!r} has no chunk at {asked} ({doc.chunks} chunks)")
    truncated = len(ordinals) > MAX_READ_CHUNKS
    passage = reading.passage(store, doc, ordinals[:MAX_READ_CHUNKS], neighbours)
    chunks = passage.chunks
    lines = [c.line_start for c in chunks if c.line_start is not None] + [
        c.line_end for c in chunks if c.line_end is not None
    ]
    pages = sorted({c.page for c in chunks if c.page is not None})
    line_start, line_end = (min(lines), max(lines)) if lines else (None, None)
    return {
        "collection": doc.collection,
        "path": doc.path,
        "file": file_of(identity, doc.root, doc.path),
        "title": doc.title,
        "kind": doc.kind,
        "document_chunks": doc.chunks,
        "location": mcp_location(doc.path, Location(page=pages[0] if pages else None, line_start=line_start,
                                                    line_end=line_end)),
        "line_start": line_start,
        "line_end": line_end,
        "pages": pages,
        "truncated": truncated,
        "chunks": [
            dict(c.to_dict(), target=c.chunk_id in passage.targets,
                 location=mcp_location(doc.path, c.location))
            for c in chunks
        ],
    }
