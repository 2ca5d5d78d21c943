"""Concurrent questions share embedding passes where the model batches them, run side by side where
it does not (int8 ONNX), and each gets its own vector back."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from assistant.query_batching import BatchingEmbedder

QUESTIONS = [
    "How do I book a flight?", "When is payday?", "Who fixes broken laptops?", "Where is the parking garage?",
    "How much annual leave do I get?", "What is the dress code?", "How do I reset my password?",
    "Can I work from home on Fridays?", "Where are the fire exits?", "How are expenses refunded?",
    "What does the onboarding week cover?", "Which holidays are paid?", "How do I order business cards?",
    "Who approves overtime?", "Is there a gym discount?", "How do I report a security incident?",
]  # fmt: skip


@pytest.fixture(scope="module")
def torch_embedder():
    """The packaged MiniLM with questions on torch, which embeds a batch in one forward pass."""
    from indexes.embed import Embedder

    emb = Embedder(query_runtime="torch")
    assert emb.batches_queries
    return emb


def ask_together(batching: BatchingEmbedder) -> dict[str, np.ndarray]:
    start = threading.Barrier(len(QUESTIONS))

    def ask(q: str) -> np.ndarray:
        start.wait()
        return batching.embed_query(q)

    with ThreadPoolExecutor(len(QUESTIONS)) as pool:
        return dict(zip(QUESTIONS, pool.map(ask, QUESTIONS)))


def test_concurrent_queries_are_batched_and_match_one_by_one(torch_embedder):
    embedder = torch_embedder
    batching = BatchingEmbedder(embedder)
    alone = {q: embedder.embed_query(q) for q in QUESTIONS}
    vectors = ask_together(batching)
    assert batching.batches < len(QUESTIONS), "questions that arrived together shared forward passes"
    solo = np.stack([alone[q] for q in QUESTIONS])
    for i, q in enumerate(QUESTIONS):
        sims = solo @ vectors[q]
        assert int(np.argmax(sims)) == i and sims[i] > 0.99, "each caller gets the vector of its own question"
    assert batching.dim == embedder.dim and batching.name == embedder.name


def test_int8_questions_run_in_their_own_threads_with_their_own_vectors(embedder):
    """The default int8 encoder runs each question alone: nothing is queued, every vector is exactly
    the one the question gets alone."""
    assert not embedder.batches_queries
    batching = BatchingEmbedder(embedder)
    alone = {q: embedder.embed_query(q) for q in QUESTIONS}
    vectors = ask_together(batching)
    assert batching.batches == 0
    assert all(np.array_equal(vectors[q], alone[q]) for q in QUESTIONS)


def test_a_lone_query_runs_at_once_and_failures_reach_the_caller(torch_embedder):
    batching = BatchingEmbedder(torch_embedder)
    v = batching.embed_query("Where is the travel desk?")
    assert v.shape == (torch_embedder.dim,) and batching.batches == 1

    class Broken:
        def embed_queries(self, texts):
            raise RuntimeError("model unloaded")

    broken = BatchingEmbedder(Broken())
    with pytest.raises(RuntimeError, match="model unloaded"):
        broken.embed_query("anything")
    with pytest.raises(RuntimeError, match="model unloaded"):  # and the next caller is not stuck
        broken.embed_query("anything else")
