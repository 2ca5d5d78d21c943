"""A file's bytes to chunks ready to embed: parse, split, and the text embedded for each chunk.

A leaf of the ingest package: the parser process (`ingest.parse_pool`) imports it without the store or
sqlmodel, and the in-process path (`ingest.prepare`) calls the same functions.
"""

from __future__ import annotations

import copy
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Protocol

import numpy as np

from indexes.records import NewChunk
from ingest.elements import Parsed
from ingest.formats.ocr import OcrOptions
from ingest.parse import parse
from ingest.sources import SourceFile
from ingest.split import HEADING_SEP, split
from ingest.wiki import place_in_wiki


class EmbedderLike(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def count_tokens(self, text: str) -> int: ...


class TokenCounter:
    """Counts tokens as the embedder does, with a tokenizer of its own.

    A Hugging Face fast tokenizer keeps its padding and truncation settings in shared state, so
    counting tokens in the parsing thread with the embedder's own tokenizer while it encodes a batch
    in another thread breaks that batch. Loading the tokenizer alone is also much faster than loading
    the model, which a run with nothing to embed never needs.
    """

    _cache: dict[str, Any] = {}  # model path -> its tokenizer, loaded once per process
    _lock = threading.Lock()

    def __init__(self, embedder: EmbedderLike) -> None:
        self.embedder = embedder
        self._tokenizer = None

    @classmethod
    def for_model(cls, model_path: str | Path) -> "TokenCounter":
        """A counter for the model in this folder, where no embedder is loaded (the parsing process)."""
        return cls(SimpleNamespace(model_path=Path(model_path)))

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            key = str(getattr(self.embedder, "model_path", id(self.embedder)))
            with self._lock:
                if key not in self._cache:
                    self._cache[key] = self._load()
                self._tokenizer = self._cache[key]
        return self._tokenizer

    def _load(self):
        path = getattr(self.embedder, "model_path", None)
        if path is not None:
            try:
                from transformers import AutoTokenizer

                tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
                tok.model_max_length = 1_000_000_000  # counting only: no "sequence too long" warnings
                return tok
            except (OSError, ValueError, ImportError):
                pass
        return copy.deepcopy(self.embedder.tokenizer)

    @property
    def _backend(self):
        """The Rust tokenizer under a fast one, without truncation: counting through it skips ~50 µs of
        Python per call, and splitting counts thousands of pieces a file. None for slow tokenizers."""
        if not hasattr(self, "_backend_tokenizer"):
            backend = getattr(self.tokenizer, "backend_tokenizer", None)
            if backend is not None:
                backend = copy.deepcopy(backend)
                backend.no_truncation()
                backend.no_padding()
            self._backend_tokenizer = backend
        return self._backend_tokenizer

    def __call__(self, text: str) -> int:
        backend = self._backend
        if backend is not None:
            return len(backend.encode(text, add_special_tokens=False).ids)
        return len(self.tokenizer(text, add_special_tokens=False, truncation=False)["input_ids"])


def embed_text(title: str, chunk: NewChunk, count_tokens: Callable[[str], int], max_seq: int) -> str:
    """The chunk as embedded: title, heading path and symbol first, when they fit the model's window."""
    context = HEADING_SEP.join(x for x in (title, chunk.heading_path, chunk.symbol) if x)
    room = max_seq - 2 - chunk.n_tokens
    if context and count_tokens(context) + 2 > room:
        context = title if title and count_tokens(title) + 2 <= room else ""
    return f"{context}\n\n{chunk.text}" if context else chunk.text


def parse_and_split(source: SourceFile, data: bytes, chunk_tokens: int, overlap_tokens: int,
                    count_tokens: Callable[[str], int], max_seq: int,
                    ocr: OcrOptions | None = None) -> tuple[Parsed, list[NewChunk], list[str]]:
    """The CPU-heavy part of a file: parsed (its elements dropped once split), its chunks, and the text
    embedded for each chunk. Raises ParseError."""
    parsed = parse(source, data, ocr)
    place_in_wiki(source, parsed, data)  # a wiki export's page: its path in the wiki is its title
    chunks = split(parsed.elements, count_tokens, chunk_tokens=chunk_tokens, overlap_tokens=overlap_tokens,
                   anchors=parsed.anchors)
    texts = [embed_text(parsed.title, c, count_tokens, max_seq) for c in chunks]
    parsed.elements = []
    return parsed, chunks, texts
