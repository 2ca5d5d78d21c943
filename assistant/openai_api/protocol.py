"""The OpenAI protocol's shapes: its errors, the requests we accept, and the models we list.

`GET /v1/models` lists the backend's model and one `rag:<collection>` model per collection (`rag:a,b`
names several; `rag:a+sources` is `rag:a` with its cited sources listed at the end of the answer text,
for clients that can send no field of their own; `rag:a/<path>` asks about the document at that path of
`a` alone, like the request's own `document` field, and is not listed). chat.py answers chat completions, embeddings.py embeddings; no HTTP in
any of them: every failure is an `OpenAIError` that the route answers with OpenAI's error shape
`{"error": {"message", "type", "code", "param"}}` and its status.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from assistant.answers.document_question import DocumentKey
from assistant.backends.base import BackendBusy, BackendError
from assistant.services import Services

RAG_PREFIX = "rag:"
SOURCES_SUFFIX = "+sources"  # not a character of a collection name (indexes.store.COLLECTION_NAME)
DOCUMENT_SEP = "/"  # nor this: after it, a `rag:` model names a document of its collection by path
CHAT_ROLES = ("system", "developer", "user", "assistant")
MAX_MESSAGES = 200


class OpenAIError(Exception):
    """A request that fails, as OpenAI says it: HTTP status, message, type, code (and the parameter)."""

    def __init__(self, status: int, message: str, type_: str, code: str | None, param: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.code = code
        self.param = param
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "code": self.code, "param": self.param}}


def invalid(message: str, param: str | None = None, code: str | None = None) -> OpenAIError:
    return OpenAIError(400, message, "invalid_request_error", code, param)


def model_not_found(model: str, reason: str = "") -> OpenAIError:
    detail = f"The model {model!r} does not exist" + (f": {reason}" if reason else "") + "; GET /v1/models lists them"
    return OpenAIError(404, detail, "invalid_request_error", "model_not_found", "model")


def busy(exc: BackendBusy) -> OpenAIError:
    return OpenAIError(429, str(exc), "rate_limit_error", "busy", headers={"Retry-After": str(exc.retry_after)})


# --- requests ---------------------------------------------------------------------------------------


class TextPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[TextPart] | None = None
    name: str | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """The fields we act on; the other usual ones (top_p, seed, user, ...) are accepted and ignored."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, max_length=512)
    messages: list[ChatMessage] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(None, ge=1, le=2**31)
    max_completion_tokens: int | None = Field(None, ge=1, le=2**31)
    temperature: float | None = Field(None, ge=0, le=2)
    stop: str | list[str] | None = None
    n: int = Field(1, ge=1, le=128)
    user: str | None = Field(None, max_length=256)
    # Ours: continue a saved conversation (rag: models only); its stored turns are then the history.
    conversation_id: int | None = Field(None, ge=1, le=2**62)
    # Ours: end a rag: answer's text with the sources it cites (else the model suffix, else `v1.append_sources`).
    append_sources: bool | None = None
    # Ours: ask about this document of the rag: model's collection alone (its id, or its path there).
    document: DocumentKey | None = None


class EmbeddingRequest(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, max_length=512)
    input: str | list[str]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(None, ge=1, le=65536)
    user: str | None = Field(None, max_length=256)


# --- models -----------------------------------------------------------------------------------------


def sources_suffix(model: str) -> tuple[str, bool]:
    """A `rag:` model name without its `+sources` suffix, and whether it had one."""
    if model.startswith(RAG_PREFIX) and model.endswith(SOURCES_SUFFIX):
        return model[: -len(SOURCES_SUFFIX)], True
    return model, False


def rag_collections(model: str) -> list[str] | None:
    """The collections a `rag:` model name names (`rag:a,b` names two, `rag:a+sources` one), or None for
    any other name."""
    model = sources_suffix(model)[0]
    if not model.startswith(RAG_PREFIX):
        return None
    names = model[len(RAG_PREFIX):].split(DOCUMENT_SEP, 1)[0]
    return list(dict.fromkeys(n.strip() for n in names.split(",") if n.strip()))


def rag_document(model: str) -> str | None:
    """The document path a `rag:<collection>/<path>` model names (None for any other name)."""
    model = sources_suffix(model)[0]
    if not model.startswith(RAG_PREFIX) or DOCUMENT_SEP not in model:
        return None
    return model.split(DOCUMENT_SEP, 1)[1]


def backend_model(services: Services) -> str | None:
    """The backend's model id (a remote backend may ask its server for it: call from a worker thread)."""
    return services.backend.model if services.backend is not None else None


def list_models(services: Services) -> dict:
    """The backend's model, then one `rag:<collection>` model per collection."""
    data = []
    try:
        model = backend_model(services)
    except BackendError:  # a remote server that cannot say: its rag: models still work once it is back
        model = None
    if model:
        data.append({"id": model, "object": "model", "created": 0, "owned_by": "assistant"})
    for coll in services.store.list_collections():
        created = datetime.fromisoformat(coll["created_at"]).replace(tzinfo=timezone.utc)
        data.append({"id": f"{RAG_PREFIX}{coll['name']}", "object": "model", "created": int(created.timestamp()),
                     "owned_by": "assistant", "collection": coll["name"], "chunks": coll["chunks"]})
    return {"object": "list", "data": data}
