"""The connection pool settings of our HTTP clients of uvicorn servers (vLLM, this server), shared by the
backends and the load generators.

Idle connections are dropped after KEEPALIVE_EXPIRY_S, well before the servers' own keep-alive
(uvicorn's 5 s, in vLLM and in this server; httpx's default is those same 5 s): reused near that limit,
a request can go down a connection the server is closing, and reads an EOF instead of its answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

KEEPALIVE_EXPIRY_S = 2.0


def pool_limits(connections: int) -> "httpx.Limits":
    """A pool of `connections`, every one of them kept alive between requests for KEEPALIVE_EXPIRY_S."""
    import httpx  # imported when a client is made: the backends check for the HTTP packages then

    return httpx.Limits(max_connections=connections, max_keepalive_connections=connections,
                        keepalive_expiry=KEEPALIVE_EXPIRY_S)
