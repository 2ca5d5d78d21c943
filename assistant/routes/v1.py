"""/v1: the OpenAI-compatible API (models, chat completions, embeddings), with OpenAI-shaped errors.

The work is in assistant/openai_api/chat.py and openai_embeddings.py; these routes parse, call it, and send what it returns.
"""

from __future__ import annotations

import json
from typing import AsyncIterator

from anyio import to_thread
from litestar import Request, Response, Router, get, post
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi import ResponseSpec
from litestar.response import ServerSentEvent
from pydantic import BaseModel

from indexes.store import StoreError

from assistant.security.access import AccessDenied, Identity, authorize, scoped
from assistant.openai_api.chat import chunks, completion, start_chat
from assistant.openai_api.embeddings import embeddings
from assistant.openai_api.protocol import ChatCompletionRequest, EmbeddingRequest, OpenAIError, list_models, rag_collections
from assistant.services import Services
from assistant.telemetry import Telemetry


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str
    code: str | None = None
    param: str | None = None


class OpenAIErrorBody(BaseModel):
    """Every /v1 error, shaped as OpenAI's (what its clients parse)."""

    error: OpenAIErrorDetail


ERRORS = {status: ResponseSpec(data_container=OpenAIErrorBody, description=what) for status, what in {
    400: "invalid request", 401: "no valid API key", 403: "the key lacks the scope or collection",
    404: "unknown model or conversation", 413: "request too large", 415: "not application/json",
    429: "busy or rate-limited (Retry-After)"}.items()}


@get("/models", opt=scoped("read"), responses=ERRORS)
async def models(services: Services, identity: Identity) -> dict:
    """The backend's model and a `rag:` model per collection this key may read."""
    listed = await to_thread.run_sync(list_models, services)
    listed["data"] = [m for m in listed["data"] if "collection" not in m or identity.can_use(m["collection"])]
    return listed


def check_model_access(identity: Identity, model: str) -> None:
    """403 (OpenAI-shaped) for a `rag:` model of a collection this key may not use, known or not."""
    try:
        authorize(identity, "read", rag_collections(model) or [])
    except AccessDenied as exc:
        raise OpenAIError(403, exc.detail, "permission_error", "forbidden") from None


@post("/chat/completions", status_code=200, opt=scoped("ask"), responses=ERRORS)
async def chat_completions(
    services: Services, telemetry: Telemetry, identity: Identity, data: ChatCompletionRequest
) -> Response:
    try:
        check_model_access(identity, data.model)
        run = await start_chat(data, services, identity)
    except OpenAIError as exc:
        if exc.status == 429 and not rag_collections(data.model):
            telemetry.busy_rejections.inc()  # the ask use case counts its own
        return error_response(exc)
    if not run.rag:  # the ask use case observes its answers itself
        run.events = telemetry.observe(run.events)
    if not data.stream:
        try:
            return Response(await completion(run))
        except OpenAIError as exc:  # an `error` event (already counted by telemetry)
            return error_response(exc)
    include_usage = bool(data.stream_options and data.stream_options.include_usage)

    async def lines() -> AsyncIterator[str]:
        try:
            async for obj in chunks(run, include_usage):
                yield json.dumps(obj, ensure_ascii=False)
            yield "[DONE]"
        finally:
            await run.aclose()  # client gone or stream done: the backend request is aborted

    return ServerSentEvent(lines())


@post("/embeddings", status_code=200, opt=scoped("read"), responses=ERRORS)
async def create_embeddings(services: Services, identity: Identity, data: EmbeddingRequest) -> Response:
    try:
        check_model_access(identity, data.model)
        return Response(await to_thread.run_sync(embeddings, data, services))
    except OpenAIError as exc:
        return error_response(exc)


def error_response(exc: OpenAIError) -> Response:
    return Response(exc.body(), status_code=exc.status, headers=exc.headers)


def openai_error(_: Request, exc: OpenAIError) -> Response:
    return error_response(exc)


def http_error(_: Request, exc: HTTPException) -> Response:
    """Litestar's own 4xx (a body that is not JSON, a field of the wrong type) in the OpenAI shape."""
    message = exc.detail
    if isinstance(exc, ValidationException) and isinstance(exc.extra, list) and exc.extra:
        message = "; ".join(
            f"{e.get('key') or 'body'}: {e.get('message')}" if isinstance(e, dict) else str(e) for e in exc.extra
        )
    status = exc.status_code
    kind = "invalid_request_error" if status < 500 else "server_error"
    code = {401: "invalid_api_key", 403: "forbidden", 404: "not_found", 415: "unsupported_media_type", 405: "method_not_allowed", 413: "request_too_large", 429: "busy"}.get(status)
    headers = dict(exc.headers or {})
    return error_response(OpenAIError(status, message, kind, code, headers=headers))


def store_error(_: Request, exc: StoreError) -> Response:
    return error_response(OpenAIError(400, str(exc), "invalid_request_error", None))


def server_error(_: Request, exc: Exception) -> Response:
    """An unexpected failure (the app's logging config logs its traceback), without the exception's text."""
    return error_response(OpenAIError(500, "internal server error (see the server's log)", "server_error", "internal_error"))


openai_router = Router(
    path="/v1",
    route_handlers=[models, chat_completions, create_embeddings],
    tags=["openai"],
    exception_handlers={
        OpenAIError: openai_error,
        HTTPException: http_error,
        StoreError: store_error,
        Exception: server_error,
    },
)
