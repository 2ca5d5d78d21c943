"""The MCP server (official `mcp` package, MCPServer): the tools of assistant/mcp_api/tools.py for editors and
coding agents, over stdio (`assistant mcp`) or streamable HTTP (mounted at /mcp by the app).

Who calls: over HTTP, the identity the app's guard left in the request's ASGI scope (the mount copies
it); over stdio, the identity the operator started the command with (`--key`, `--collection`). A tool
reached over HTTP without an identity is refused: no door falls back to the local user.

The services come from a callable, because the app builds them in its lifespan, after this server
exists (and `assistant mcp` on the first call); it is called in a worker thread. Store and retrieval
work runs in a worker thread so that an HTTP server's event loop keeps streaming other answers meanwhile.
"""

# No `from __future__ import annotations`: MCPServer reads the tools' annotations to build their schemas.

import logging
from typing import Annotated, Any, Awaitable, Callable

from anyio import to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from assistant.mcp_api import tools as tools
from assistant.security.access import Identity
from assistant.services import Services
from assistant.settings import Settings

INSTRUCTIONS = (
    "Search and ask the documents, code and wikis indexed in this assistant's collections. "
    "Every passage names its file (path, and the absolute file when known) and its line range or page: "
    "open the file there, or call read_source for the text around a passage."
)

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")  # the names MCPServer accepts
READ_ONLY = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

Collection = Annotated[
    str | None, Field(description="collection to use; may be left out when there is only one (see list_collections)")
]
Paths = Annotated[
    list[str] | None,
    Field(description="only documents whose path matches one of these globs, e.g. 'src/*' ('*' crosses '/')",
          max_length=tools.MAX_FILTERS),
]
Kinds = Annotated[
    list[str] | None,
    Field(description="only these file types as ingested, e.g. 'py', 'md', 'pdf'", max_length=tools.MAX_FILTERS),
]


async def caller(ctx: Context, stdio_identity: Callable[[], Identity] | None) -> Identity:
    """The identity of this tool call: the HTTP request's (set by the app's guard), else the operator's,
    asked anew for each call in a worker thread (it reads the store; a key revoked meanwhile stops
    working at once)."""
    request = ctx.request_context.request
    if request is not None:
        identity = request.scope.get("user")
        if isinstance(identity, Identity):
            return identity
    elif stdio_identity is not None:
        try:
            return await to_thread.run_sync(stdio_identity)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
    raise ToolError("no identity on this call: the server refuses it")


def build_mcp_server(
    services: Callable[[], Services], settings: Settings, stdio_identity: Callable[[], Identity] | None = None
) -> MCPServer:
    """An MCP server whose tools call mcp_api/tools.py with the services `services()` returns, as the caller;
    `stdio_identity()` says whom calls without an HTTP request act as (None: only HTTP calls are served)."""
    log_level = settings.log_level.upper()
    server = MCPServer("local-rag-assistant", instructions=INSTRUCTIONS,
                       log_level=log_level if log_level in LOG_LEVELS else "INFO")

    # The MCP package logs every request at INFO, and the server logs no other request: below DEBUG,
    # keep its warnings only.
    level = logging.getLevelName(log_level)
    if isinstance(level, int) and level > logging.DEBUG:
        logging.getLogger("mcp").setLevel(max(logging.WARNING, level))

    async def in_thread(ctx: Context, fn: Callable[..., dict], *args: Any) -> dict[str, Any]:
        identity = await caller(ctx, stdio_identity)
        return await answered(to_thread.run_sync(lambda: fn(services(), identity, *args)))

    @server.tool(annotations=READ_ONLY)
    async def list_collections(ctx: Context) -> dict[str, Any]:
        """List the collections that can be searched, with their document and chunk counts."""
        return await in_thread(ctx, tools.list_collections)

    @server.tool(annotations=READ_ONLY)
    async def search(
        query: Annotated[str, Field(description="what to look for: a question, a name or some words")],
        collection: Collection = None,
        k: Annotated[int, Field(ge=1, le=tools.MAX_K, description="how many passages to return")] = 10,
        paths: Paths = None,
        kinds: Kinds = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """Find the passages of a collection that match a query (hybrid semantic + keyword search), best
        first, without generating an answer. Each hit has its path, line range or page, and a snippet."""
        return await in_thread(ctx, tools.search, query, collection, k, paths, kinds)

    @server.tool(annotations=READ_ONLY)
    async def ask(
        question: Annotated[str, Field(description="the question, in plain words")],
        collection: Collection = None,
        k: Annotated[int | None, Field(ge=1, le=tools.MAX_K, description="passages to give the model")] = None,
        paths: Paths = None,
        kinds: Kinds = None,
        document: Annotated[
            str | None,
            Field(description="ask about this document alone: its path as search returns it (or its id); read whole "
                              "when it fits the model's window, else searched", max_length=1024),
        ] = None,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """Answer a question from a collection with the local model. The answer cites its sources as
        [n]; the sources come back with their paths and line ranges or pages, the cited ones first.
        With `document`, the question is about that one document (`document_mode` says whether it was
        read whole or searched)."""
        identity = await caller(ctx, stdio_identity)
        built = await to_thread.run_sync(services)
        return await answered(tools.ask(built, identity, question, collection, k, paths, kinds, document))

    @server.tool(annotations=READ_ONLY)
    async def read_source(
        chunk_id: Annotated[int | None, Field(ge=1, le=2**63 - 1, description="a chunk_id from search or ask")] = None,
        collection: Collection = None,
        path: Annotated[str | None, Field(description="a document's path, as search returns it")] = None,
        start_line: Annotated[int | None, Field(ge=1, le=2**31, description="first line wanted (with path)")] = None,
        end_line: Annotated[int | None, Field(ge=1, le=2**31, description="last line wanted (with path)")] = None,
        page: Annotated[int | None, Field(ge=1, le=2**31, description="page wanted (with path)")] = None,
        neighbours: Annotated[
            int, Field(ge=0, le=tools.MAX_NEIGHBOURS, description="chunks to add before and after")
        ] = 1,
        ctx: Context = None,
    ) -> dict[str, Any]:
        """Read a passage with the text around it: a chunk by its chunk_id, or the chunks of a document
        (by path) that cover some lines or a page, plus `neighbours` chunks before and after each side."""
        return await in_thread(ctx, tools.read_source, chunk_id, collection, path, start_line, end_line, page,
                               neighbours)

    return server


async def answered(call: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """A tool's result; its ToolCallError as the protocol's tool error, whose message reaches the caller."""
    try:
        return await call
    except tools.ToolCallError as exc:
        raise ToolError(str(exc)) from None
