"""`assistant bench budgets`' own rules: the budgets it accepts, the interleaved order it asks in, the knee."""

from __future__ import annotations

import argparse

import pytest

from evals.bench_budgets import knee, parse_budgets, schedule, summary


def test_budgets_are_whole_numbers_of_at_least_256_each_once():
    assert parse_budgets("1024, 2048,0") == [1024, 2048, 0]
    for bad in ("1024", "1024,1024", "1024,abc", "100,2048", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_budgets(bad)


def test_every_budget_asks_every_question_once_and_no_question_twice_in_a_row():
    order = schedule(5, [1, 2, 3])
    assert sorted(order) == sorted((i, b) for i in range(5) for b in (1, 2, 3))
    assert all(a[0] != b[0] for a, b in zip(order, order[1:]))
    for n in range(3):  # each pass mixes the budgets
        assert {b for _, b in order[n * 5:(n + 1) * 5]} == {1, 2, 3}


def row(budget, split, found, expected=2, wait=1000.0, cited=True):
    return {"budget": budget, "split": split, "facts_found": found, "facts_expected": expected, "wait_ms": wait,
            "right_file_cited": cited, "prompt_tokens": budget or 3000}


def test_the_knee_is_the_smallest_budget_as_good_on_the_tune_half_as_the_largest():
    rows = [row(1024, "tune", 1), row(2048, "tune", 2), row(0, "tune", 2), row(1024, "report", 2)]
    assert knee(rows, [1024, 2048, 0]) == 2048  # 0 is the window's: the largest
    rows += [row(1024, "tune", 2), row(2048, "tune", 1), row(0, "tune", 1)]
    assert knee(rows, [1024, 2048, 0]) == 1024


def test_a_summary_counts_facts_over_all_answers_and_the_waits_percentiles():
    s = summary([row(1024, "tune", 1, wait=1000.0), row(1024, "tune", 2, wait=3000.0, cited=False)])
    assert s["fact_recall"] == 0.75 and s["right_file_cited"] == 0.5 and s["answers"] == 2
    assert s["ttft_ms_p50"] == 2000.0 and s["ttft_ms_p90"] > 2000.0
