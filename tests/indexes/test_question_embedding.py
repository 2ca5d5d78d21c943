"""Concurrent questions share embedding passes, and each gets its own vector back."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from indexes.embedding.batching import BatchingEmbedder

QUESTIONS = [
    "How do I book a flight?", "When is payday?", "Who fixes broken laptops?", "Where is the parking garage?",
    "How much annual leave do I get?", "What is the dress code?", "How do I reset my password?",
    "Can I work from home on Fridays?", "Where are the fire exits?", "How are expenses refunded?",
    "What does the onboarding week cover?", "Which holidays are paid?", "How do I order business cards?",
    "Who approves overtime?", "Is there a gym discount?", "How do I report a security incident?",
]  # fmt: skip


def test_concurrent_queries_are_batched_and_match_one_by_one(embedder):
    batching = BatchingEmbedder(embedder, lanes=1)
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


def test_batches_run_on_as_many_lanes_as_the_embedder_allows_and_no_more():
    class Slow:  # a one-thread runtime that releases the GIL: time.sleep stands for its run
        def __init__(self) -> None:
            self.running = self.most = 0
            self.lock = threading.Lock()

        def embed_queries(self, texts):
            with self.lock:
                self.running += 1
                self.most = max(self.most, self.running)
            time.sleep(0.05)
            with self.lock:
                self.running -= 1
            return np.array([[float(len(t)), 1.0] for t in texts])

        def query_lanes(self) -> int:
            return 3

    slow = Slow()
    batching = BatchingEmbedder(slow)
    start = threading.Barrier(len(QUESTIONS))

    def ask(q: str) -> np.ndarray:
        start.wait()
        return batching.embed_query(q)

    with ThreadPoolExecutor(len(QUESTIONS)) as pool:
        vectors = list(pool.map(ask, QUESTIONS))
    assert batching.lanes == 3 and slow.most == 3, "three batches at once, as the embedder said, never a fourth"
    assert [v[0] for v in vectors] == [float(len(q)) for q in QUESTIONS], "each caller gets its own question's vector"
    assert batching.batches < len(QUESTIONS), "questions that waited for a lane went in one batch"


def test_the_embedder_runs_onnx_questions_on_half_the_cores_and_torch_batches_alone(embedder, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    if embedder.query_encoder is not None:
        assert embedder.query_lanes() == 16 // (2 * embedder.query_threads)
    monkeypatch.setattr(embedder, "query_runtime", "torch")
    monkeypatch.delattr(embedder, "query_encoder", raising=False)  # the cached encoder: built again for torch
    assert embedder.query_encoder is None and embedder.query_lanes() == 1


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
