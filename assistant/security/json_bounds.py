"""JSON bodies bounded before any parser reads them: their size, and how deeply they nest.

JSON parsers recurse once per level of nesting: a body of a few thousand `[` ends in a RecursionError, a
500, on the routes and on the /mcp mount alike (whose parser is not Litestar's). Real requests nest a
handful of levels, so a body nested more than MAX_JSON_DEPTH levels is refused with a 400. The mount has no
body-size limit of its own, so every JSON body is also held to the app's `request_max_body_size` (413).

The depth is measured without recursion and without a Python loop per byte: bytes methods keep only the
brackets and quotes, numpy tells which brackets lie inside strings and sums the others.
"""

from __future__ import annotations

import numpy as np
from litestar.datastructures import Headers
from litestar.enums import ScopeType
from litestar.middleware import AbstractMiddleware, DefineMiddleware
from litestar.types import Receive, ReceiveMessage, Scope, Send

from assistant.security.browser_defences import JSON_TYPES, BrowserDefences, body_of

MAX_JSON_DEPTH = 64
FALLBACK_MAX_BODY_BYTES = 10_000_000  # when the app sets no limit of its own

_QUOTE = 2
_NOT_MARKS = bytes(b for b in range(256) if b not in b'[]{}"')
_MARKS = bytes.maketrans(b'[{]}"', b"\x01\x01\xff\xff\x02")  # +1, -1 (as int8), a quote
_BLOCK = 1 << 20


def nests_deeper_than(body: bytes, limit: int) -> bool:
    """Whether a JSON text opens more than `limit` arrays or objects inside one another at any point.

    Brackets left open count (a parser recurses before it finds the text cut short). Escaped backslashes
    and quotes go first, so every quote left opens or closes a string; brackets between an opening quote
    and its closing one do not count. What follows a syntax error may be miscounted, but the parser stops
    there anyway."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    marks = body.replace(b"\\\\", b"").replace(b'\\"', b"").translate(_MARKS, _NOT_MARKS)
    codes = np.frombuffer(marks, dtype=np.int8)
    depth, in_string = 0, 0
    for start in range(0, len(codes), _BLOCK):  # in blocks: temporaries of a few MB whatever the body
        block = codes[start:start + _BLOCK]
        quotes = (block == _QUOTE).view(np.uint8)
        inside = np.bitwise_xor.accumulate(quotes) ^ in_string  # 1 from an opening quote to its closing one
        running = np.cumsum(np.where(inside | quotes, np.int8(0), block), dtype=np.int32) + depth
        if running.max() > limit:
            return True
        depth, in_string = int(running[-1]), int(inside[-1])
    return False


def body_limit(scope: Scope) -> int:
    """The app's `request_max_body_size`; routes with a smaller one still have Litestar enforce theirs."""
    app = scope.get("litestar_app")
    return getattr(app, "request_max_body_size", None) or FALLBACK_MAX_BODY_BYTES


class JsonBounds(AbstractMiddleware):
    scopes = {ScopeType.HTTP}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers.from_scope(scope)
        media_type, has_body = body_of(headers)
        if media_type not in JSON_TYPES or not has_body:
            await self.app(scope, receive, send)
            return
        limit = body_limit(scope)
        announced = headers.get("content-length", "")
        if announced.isdigit() and int(announced) > limit:
            await BrowserDefences.refuse(413, f"the body is {announced} bytes: at most {limit}", send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left before sending the whole body
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > limit:
                await BrowserDefences.refuse(413, f"the body is more than {limit} bytes", send)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if nests_deeper_than(body, MAX_JSON_DEPTH):
            await BrowserDefences.refuse(
                400, f"the JSON body nests more than {MAX_JSON_DEPTH} arrays or objects inside one another", send)
            return
        await self.app(scope, replay(body, receive), send)


def replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the body already read, then waits on the client as the original would."""
    pending = True

    async def replayed() -> ReceiveMessage:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def json_bounds() -> DefineMiddleware:
    return DefineMiddleware(JsonBounds)
