"""Ranking metrics against cases computed by hand."""

import math

import pytest

from evals.metrics import dcg, hit_at_k, mrr_at_k, ndcg_at_k, percentile, recall_at_k, retrieval_metrics

RANKING = ["a", "b", "c", "d"]
QRELS = {"b": 2, "d": 1, "e": 1}  # graded; "e" was never retrieved


def test_ndcg_with_graded_relevance():
    # DCG: b (gain 2) at rank 2, d (gain 1) at rank 4. Ideal: gains 2, 1, 1 at ranks 1, 2, 3.
    dcg_run = 2 / math.log2(3) + 1 / math.log2(5)
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(RANKING, QRELS, 10) == pytest.approx(dcg_run / ideal)
    assert ndcg_at_k(RANKING, QRELS, 10) == pytest.approx(0.540585, abs=1e-6)


def test_ndcg_cut_at_k_uses_the_ideal_top_k_only():
    # At k=2 only b counts in the run; the ideal top 2 has gains 2 and 1.
    assert ndcg_at_k(RANKING, QRELS, 2) == pytest.approx((2 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert ndcg_at_k(["b", "d", "e"], QRELS, 10) == pytest.approx(1.0)
    many = {f"d{i}": 1 for i in range(12)}
    assert ndcg_at_k([f"d{i}" for i in range(12)], many, 10) == pytest.approx(1.0)


def test_ndcg_ignores_non_positive_grades():
    assert ndcg_at_k(["x", "b"], {"x": 0, "b": 1}, 10) == pytest.approx(1 / math.log2(3))
    assert ndcg_at_k(["x"], {"x": 0}, 10) == 0.0


def test_recall_mrr_hit():
    assert recall_at_k(RANKING, QRELS, 10) == pytest.approx(2 / 3)
    assert recall_at_k(RANKING, QRELS, 1) == 0.0
    assert recall_at_k(RANKING, QRELS, 2) == pytest.approx(1 / 3)
    assert mrr_at_k(RANKING, QRELS, 10) == 0.5
    assert mrr_at_k(RANKING, QRELS, 1) == 0.0
    assert hit_at_k(RANKING, "c", 3) == 1.0 and hit_at_k(RANKING, "d", 3) == 0.0


def test_dcg_positions_start_at_one():
    assert dcg([3.0]) == 3.0
    assert dcg([0.0, 1.0]) == pytest.approx(1 / math.log2(3))


def test_mean_over_judged_queries_and_missing_runs_count_as_zero():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"z": 0}}
    runs = {"q1": ["a"], "q3": ["z"]}  # q2 has no run; q3 has nothing relevant and is not averaged
    m = retrieval_metrics(runs, qrels)
    assert m == {"ndcg@10": 0.5, "recall@10": 0.5, "recall@100": 0.5, "mrr@10": 0.5}


def test_percentile_interpolates():
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 99) == pytest.approx(3.97)
    assert percentile([], 50) == 0.0
