"""Embeddings as OpenAI serves them, from the store's own embedder (no HTTP in here)."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from assistant.openai_api.protocol import EmbeddingRequest, invalid, model_not_found, rag_collections
from assistant.services import Services

MAX_EMBED_INPUTS = 256
MAX_EMBED_CHARS = 20_000


def embedding_inputs(req: EmbeddingRequest) -> list[str]:
    inputs = [req.input] if isinstance(req.input, str) else list(req.input)
    if not inputs:
        raise invalid("`input` is empty", "input")
    if len(inputs) > MAX_EMBED_INPUTS:
        raise invalid(f"`input` has {len(inputs)} texts, at most {MAX_EMBED_INPUTS}", "input")
    for i, text in enumerate(inputs):
        if not text.strip():
            raise invalid(f"input[{i}] is empty", "input")
        if len(text) > MAX_EMBED_CHARS:
            raise invalid(f"input[{i}] has {len(text)} characters, at most {MAX_EMBED_CHARS}", "input")
    return inputs


def check_embedding_model(req: EmbeddingRequest, services: Services) -> None:
    """The embedder's own name, or `rag:<collection>` of a collection built with it."""
    name = services.embedder.name
    names = rag_collections(req.model)
    if names is None:
        if req.model != name:
            raise model_not_found(req.model, f"the embedding model is {name!r} (or rag:<collection>)")
        return
    if len(names) != 1:
        raise model_not_found(req.model, "name one collection after 'rag:'")
    coll = services.store.get_collection(names[0])
    if coll is None:
        raise model_not_found(req.model, f"there is no collection {names[0]!r}")
    if coll.embedder != name:
        raise invalid(f"collection {coll.name!r} was embedded with {coll.embedder!r}; this server runs {name!r}", "model")


def embeddings(req: EmbeddingRequest, services: Services) -> dict:
    """The vectors the store's own embedder gives these texts (the document path, as ingestion embeds).

    One text per forward pass: in a padded batch (bf16 especially) a text's vector moves by ~1e-3
    with its neighbours; alone, the same text always gets the same vector, the one a document
    embedded alone is stored with. Blocking (the model runs here): call it from a worker thread.
    """
    check_embedding_model(req, services)
    inputs = embedding_inputs(req)
    embedder = services.embedder
    if req.dimensions is not None and req.dimensions != embedder.dim:
        raise invalid(f"this model has {embedder.dim} dimensions; `dimensions` cannot change that", "dimensions")
    vectors = np.vstack([embedder.embed([text]) for text in inputs]).astype(np.float32)
    tokens = sum(min(embedder.count_tokens(t), embedder.max_seq_length) for t in inputs)
    data = []
    for i, vec in enumerate(vectors):
        value: Any = base64.b64encode(vec.astype("<f4").tobytes()).decode() if req.encoding_format == "base64" else vec.tolist()
        data.append({"object": "embedding", "index": i, "embedding": value})
    return {"object": "list", "data": data, "model": req.model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
