"""Concurrent questions share embedding passes, and each gets its own vector back."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from assistant.answers.question_embedding import BatchingEmbedder

QUESTIONS = [
    "How do I book a flight?", "When is payday?", "Who fixes broken laptops?", "Where is the parking garage?",
    "How much annual leave do I get?", "What is the dress code?", "How do I reset my password?",
    "Can I work from home on Fridays?", "Where are the fire exits?", "How are expenses refunded?",
    "What does the onboarding week cover?", "Which holidays are paid?", "How do I order business cards?",
    "Who approves overtime?", "Is there a gym discount?", "How do I report a security incident?",
]  # fmt: skip


def test_concurrent_queries_are_batched_and_match_one_by_one(embedder):
    batching = BatchingEmbedder(embedder)
    alone = {q: embedder.embed_query(q) for q in QUESTIONS}
    start = threading.Barrier(len(QUESTIONS))

    def ask(q: str) -> np.ndarray:
        start.wait()
        return batching.embed_query(q)

    with ThreadPoolExecutor(len(QUESTIONS)) as pool:
        vectors = dict(zip(QUESTIONS, pool.map(ask, QUESTIONS)))
    assert batching.batches < len(QUESTIONS), "questions that arrived together shared forward passes"
    solo = np.stack([alone[q] for q in QUESTIONS])
    for i, q in enumerate(QUESTIONS):
        sims = solo @ vectors[q]
        assert int(np.argmax(sims)) == i and sims[i] > 0.99, "each caller gets the vector of its own question"
    assert batching.dim == embedder.dim and batching.name == embedder.name


def test_a_lone_query_runs_at_once_and_failures_reach_the_caller(embedder):
    batching = BatchingEmbedder(embedder)
    v = batching.embed_query("Where is the travel desk?")
    assert v.shape == (embedder.dim,) and batching.batches == 1

    class Broken:
        def embed_queries(self, texts):
            raise RuntimeError("model unloaded")

    broken = BatchingEmbedder(Broken())
    with pytest.raises(RuntimeError, match="model unloaded"):
        broken.embed_query("anything")
    with pytest.raises(RuntimeError, match="model unloaded"):  # and the next caller is not stuck
        broken.embed_query("anything else")
