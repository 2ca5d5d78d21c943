"""The machine `code` of every error response, beside Litestar's `status_code`, `detail` and `extra`: a
stable word a client can say in its own language (the page does), where `detail` is the server's English.

An error the routes name gets its own code (`coded`); any other gets the code of its status
(assistant/error_codes.py, the one vocabulary of every door)."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from litestar import Request, Response
from litestar.exceptions import HTTPException
from litestar.exceptions.responses import create_exception_response

from assistant.error_codes import code_of

E = TypeVar("E", bound=HTTPException)


def coded(exc: E, code: str) -> E:
    """`exc`, whose response names `code`."""
    exc.code = code  # type: ignore[attr-defined]
    return exc


def with_code(content: Any, code: str) -> Any:
    """Litestar's error body (a dict, or its JSON encoding on a route of another media type) with `code`."""
    if isinstance(content, dict):
        return {**content, "code": code}
    if isinstance(content, (bytes, str)):
        return json.dumps({**json.loads(content), "code": code}).encode()
    return content


def coded_error_response(request: Request, exc: Exception) -> Response:
    """The app's handler of errors (HTTP ones, and the unexpected as a 500): Litestar's own response, its
    body with the code."""
    response = create_exception_response(request, exc)
    response.content = with_code(response.content, code_of(response.status_code, exc))
    return response
