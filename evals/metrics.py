"""Ranking metrics with their standard (trec_eval / BEIR) definitions. Pure functions.

`ranking` is a list of document ids best first; `qrels` maps document id -> graded relevance, where a
grade above 0 means relevant. Gains are linear in the grade (trec_eval's nDCG, which BEIR reports).
"""

from __future__ import annotations

import math
from statistics import mean


def dcg(gains: list[float]) -> float:
    """Discounted cumulative gain: sum of gain_i / log2(i + 1), positions counted from 1."""
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranking: list[str], qrels: dict[str, int], k: int) -> float:
    """DCG of the top k divided by the DCG of the best possible top k (0 when nothing is relevant)."""
    ideal = dcg(sorted((float(g) for g in qrels.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    gains = [float(max(qrels.get(doc, 0), 0)) for doc in ranking[:k]]
    return dcg(gains) / ideal


def recall_at_k(ranking: list[str], qrels: dict[str, int], k: int) -> float:
    """Share of the relevant documents found in the top k."""
    relevant = {doc for doc, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mrr_at_k(ranking: list[str], qrels: dict[str, int], k: int) -> float:
    """1 / rank of the first relevant document within the top k, else 0."""
    for rank, doc in enumerate(ranking[:k], start=1):
        if qrels.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def hit_at_k(ranking: list[str], relevant: str, k: int) -> float:
    """1.0 when the relevant item is among the top k, else 0.0."""
    return 1.0 if relevant in ranking[:k] else 0.0


def retrieval_metrics(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """nDCG@10, recall@10, recall@100 and MRR@10 averaged over the queries that have relevant documents.

    A query in qrels without a run counts as a run that found nothing (a retriever may not skip queries).
    """
    judged = [q for q, rels in qrels.items() if any(g > 0 for g in rels.values())]
    if not judged:
        return {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    return {
        "ndcg@10": mean(ndcg_at_k(runs.get(q, []), qrels[q], 10) for q in judged),
        "recall@10": mean(recall_at_k(runs.get(q, []), qrels[q], 10) for q in judged),
        "recall@100": mean(recall_at_k(runs.get(q, []), qrels[q], 100) for q in judged),
        "mrr@10": mean(mrr_at_k(runs.get(q, []), qrels[q], 10) for q in judged),
    }


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile (0-100) with linear interpolation between closest ranks."""
    if not values:
        return 0.0
    xs = sorted(values)
    pos = (len(xs) - 1) * p / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
