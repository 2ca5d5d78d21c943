"""Fusion of dense and lexical scores: pure functions, checked by hand."""

import pytest

from indexes.retrieval.ranking import linear_mix, normalise, ranked, rrf


def test_rrf_sums_reciprocal_ranks():
    scores = rrf([[1, 2], [2, 3]], k=5)
    assert scores == pytest.approx({1: 1 / 6, 2: 1 / 7 + 1 / 6, 3: 1 / 7})
    assert ranked(scores) == [2, 1, 3]


def test_minmax_and_zscore():
    assert normalise({1: 2.0, 2: 4.0, 3: 3.0}, "minmax") == {1: 0.0, 2: 1.0, 3: 0.5}
    z = normalise({1: 1.0, 2: 3.0}, "zscore")
    assert z == pytest.approx({1: -1.0, 2: 1.0})
    assert normalise({7: 5.0}, "minmax") == {7: 1.0}
    assert normalise({7: 5.0, 8: 5.0}, "zscore") == {7: 0.0, 8: 0.0}
    with pytest.raises(ValueError):
        normalise({1: 1.0}, "rank")


def test_linear_mix_weights_both_sides():
    dense = {1: 0.9, 2: 0.5, 3: 0.1}
    lexical = {1: 0.0, 2: 10.0, 3: 5.0}
    mixed = linear_mix(dense, lexical, 0.5)
    # min-max: dense {1: 1, 2: .5, 3: 0}; lexical {1: 0, 2: 1, 3: .5}
    assert mixed == pytest.approx({1: 0.5, 2: 0.75, 3: 0.25})
    assert ranked(linear_mix(dense, lexical, 1.0)) == [1, 2, 3]
    assert ranked(linear_mix(dense, lexical, 0.0)) == [2, 3, 1]


def test_a_candidate_missing_on_one_side_gets_that_sides_minimum():
    mixed = linear_mix({1: 0.8, 2: 0.4}, {2: 3.0, 3: 1.0}, 0.5)
    # dense: 1 -> 1.0, 2 -> 0.0, 3 missing -> 0.0; lexical: 2 -> 1.0, 3 -> 0.0, 1 missing -> 0.0
    assert mixed == pytest.approx({1: 0.5, 2: 0.5, 3: 0.0})
    assert ranked(mixed) == [1, 2, 3]  # ties broken by id
    with pytest.raises(ValueError):
        linear_mix({1: 1.0}, {}, 1.5)
