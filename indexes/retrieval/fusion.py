"""Fusing dense and lexical candidates into one ranking (pure functions, no I/O).

Two methods, both measured on SciFact train (see `assistant eval retrieval`):
- reciprocal-rank fusion: needs ranks only, robust, but ignores how far apart scores are;
- a linear mix of normalised scores: `w * dense + (1 - w) * lexical` after min-max or z-score
  normalisation over the candidate pool. It needs both scores for every candidate, which the
  retriever provides (exact cosine from the stored vectors, BM25 from a second FTS5 lookup).
"""

from __future__ import annotations

import math
from typing import Literal

Normalisation = Literal["minmax", "zscore"]


def rrf(rankings: list[list[int]], k: float) -> dict[int, float]:
    """Reciprocal-rank fusion: sum of 1 / (k + rank) over the rankings an id appears in."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, cid in enumerate(ranking, start=1):
            scores[cid] = scores.get(cid, 0.0) + 1.0 / (k + rank)
    return scores


def normalise(scores: dict[int, float], method: Normalisation = "minmax") -> dict[int, float]:
    """Scores mapped onto a common scale: [0, 1] (min-max) or mean 0 / sd 1 (z-score).

    A constant list (one candidate, or all tied) maps to 1.0 (min-max) or 0.0 (z-score): the side
    then cannot reorder anything, which is the honest outcome.
    """
    if not scores:
        return {}
    values = list(scores.values())
    if method == "minmax":
        lo, hi = min(values), max(values)
        span = hi - lo
        return {cid: ((s - lo) / span if span > 0 else 1.0) for cid, s in scores.items()}
    if method == "zscore":
        mean = sum(values) / len(values)
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        return {cid: ((s - mean) / sd if sd > 0 else 0.0) for cid, s in scores.items()}
    raise ValueError(f"unknown normalisation {method!r}: use 'minmax' or 'zscore'")


def linear_mix(
    dense: dict[int, float],
    lexical: dict[int, float],
    dense_weight: float,
    method: Normalisation = "minmax",
) -> dict[int, float]:
    """`w * norm(dense) + (1 - w) * norm(lexical)` over the union of candidates.

    Callers should give every candidate a score on both sides; a candidate missing from one side gets
    that side's minimum (after normalisation), i.e. it is treated as the least relevant there.
    """
    if not 0.0 <= dense_weight <= 1.0:
        raise ValueError("dense_weight must be between 0 and 1")
    nd, nl = normalise(dense, method), normalise(lexical, method)
    floor_d = min(nd.values(), default=0.0)
    floor_l = min(nl.values(), default=0.0)
    ids = set(nd) | set(nl)
    return {
        cid: dense_weight * nd.get(cid, floor_d) + (1.0 - dense_weight) * nl.get(cid, floor_l) for cid in ids
    }


def ranked(scores: dict[int, float]) -> list[int]:
    """Ids best first; ties broken by id so results are deterministic."""
    return sorted(scores, key=lambda cid: (-scores[cid], cid))
