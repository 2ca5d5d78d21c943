"""An optional cross-encoder stage: reads (question, passage) pairs together and re-scores the best few.

Off unless a local model directory is configured (a sentence-transformers CrossEncoder, e.g. an
MS MARCO MiniLM cross-encoder). It costs one transformer pass per candidate, so only the top
`rerank_candidates` fused hits go through it.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path


class CrossEncoderReranker:
    """Scores passages against a query with a local cross-encoder model on the CPU."""

    def __init__(self, model_path: str | Path, *, batch_size: int = 16, max_length: int = 512) -> None:
        self.model_path = Path(model_path)
        if not self.model_path.is_dir():
            raise FileNotFoundError(f"reranker model directory not found: {self.model_path}")
        self.batch_size = batch_size
        self.max_length = max_length

    @cached_property
    def model(self):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import CrossEncoder

        return CrossEncoder(str(self.model_path), device="cpu", max_length=self.max_length)

    def scores(self, query: str, passages: list[str]) -> list[float]:
        """One relevance score per passage (higher is more relevant), in the given order."""
        if not passages:
            return []
        out = self.model.predict(
            [(query, p) for p in passages], batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        return [float(s) for s in out.reshape(len(passages), -1)[:, -1]]
