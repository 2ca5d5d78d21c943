"""/mcp: the MCP tools over streamable HTTP, mounted on the app.

The MCP package's session manager is the ASGI app behind the mount; it runs inside the app's lifespan.
The tools reach the services through app.state, where the app's own lifespan puts them.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from typing import AsyncIterator, Callable

from litestar import Litestar
from litestar.handlers import ASGIRouteHandler, asgi
from litestar.types import Receive, Scope, Send
from mcp.server.transport_security import TransportSecuritySettings

from assistant.security.access import scoped
from assistant.mcp_api.server import build_mcp_server
from assistant.services import Services
from assistant.settings import Settings

MCP_PATH = "/mcp"
# Stateless streamable HTTP: no stream opened by GET for the server's own messages, and no session to end
# with DELETE. The MCP spec's answer to both is 405 (the package would hold a GET's stream open forever).
NO_STREAM_METHODS = frozenset({"GET", "DELETE"})


async def method_not_allowed(send: Send) -> None:
    """405 with `Allow: POST` and the app's JSON error body."""
    body = json.dumps({"status_code": 405, "detail": "this MCP server is stateless: send each request as a POST",
                       "code": "method_not_allowed"}).encode()
    await send({"type": "http.response.start", "status": 405,
                "headers": [(b"content-type", b"application/json"), (b"allow", b"POST"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def mcp_mount(settings: Settings) -> tuple[list[ASGIRouteHandler], list[Callable]]:
    """The /mcp route handler and the lifespan that runs its session manager, for one app (none of
    either when the `server.mcp` setting is off)."""
    if not settings.server.mcp:
        return [], []
    holder: dict[str, Litestar] = {}

    def services() -> Services:
        return holder["app"].state.services

    server = build_mcp_server(services, settings)  # no stdio identity: every call acts as its request's key
    # Creates the session manager this mount serves through. Each HTTP request stands alone (no session
    # state to lose when the server restarts). Host and Origin are checked by the app's browser defences,
    # as for every route, with the same `server.allowed_hosts`; the package's own loopback-only list would
    # refuse names the operator allowed.
    server.streamable_http_app(
        stateless_http=True, json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager

    # The guard checks the key and the read scope; each tool asks the same access decision for its own
    # scope and collections with the identity the guard left in the scope (assistant/mcp_api/server.py).
    @asgi(MCP_PATH, is_mount=True, copy_scope=True, opt=scoped("read"))
    async def mcp(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") in NO_STREAM_METHODS:
            await method_not_allowed(send)
            return
        await manager.handle_request(scope, receive, send)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        holder["app"] = app
        async with manager.run():
            yield

    return [mcp], [lifespan]
