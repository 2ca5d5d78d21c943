"""The machine `code` of every error a client can get, on every door: one vocabulary, so that a client
says each in its own language (the page does) whatever door it came through.

`BY_STATUS` is the code of an error that names none of its own; `STATUS` the HTTP status of each code the
answer path names (answers/ask.py). docs/usage.md lists them; a test checks that the two agree.
"""

from __future__ import annotations

from typing import TypeVar

E = TypeVar("E", bound=BaseException)

BY_STATUS = {
    400: "invalid_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
    409: "conflict", 413: "too_large", 415: "unsupported_media_type", 429: "busy", 500: "internal_error",
    503: "unavailable", 507: "no_space",
}

STATUS = {
    "question_empty": 400, "question_too_long": 400, "invalid_request": 400, "collection_required": 400,
    "document_not_answerable": 400, "forbidden": 403, "collection_not_found": 404, "document_not_found": 404,
    "conversation_not_found": 404, "turn_not_found": 404, "turn_not_last": 409, "busy": 429, "no_backend": 503,
}


def code_of(status: int, exc: BaseException | None = None) -> str:
    """The code an error response carries: the one its exception names, else its status's."""
    return getattr(exc, "code", None) or BY_STATUS.get(status) or ("invalid_request" if status < 500 else "internal_error")


def coded(exc: E, code: str) -> E:
    """`exc`, whose error body names `code`."""
    exc.code = code  # type: ignore[attr-defined]
    return exc
