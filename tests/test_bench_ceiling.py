"""The figures of bench/contradiction_ceiling.py: precision at a recall, recall at a precision and
balanced accuracy over every threshold, with ties flagged together (the bench itself needs the
data and the model; these are its arithmetic)."""

from __future__ import annotations

import pytest

from tests.fixtures.bench_scripts import load_bench

CEILING = load_bench("contradiction_ceiling")


def test_a_perfect_ranking_reaches_both_targets() -> None:
    score = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0]
    positive = [True] * 5 + [False] * 5
    f = CEILING.curve_figures(score, positive)
    assert f == {"positives": 5, "precision_at_recall": 1.0, "recall_at_precision": 1.0, "average_precision": 1.0}


def test_tied_scores_are_flagged_together() -> None:
    # One score for all: the only threshold flags all ten, precision is the share of positives.
    f = CEILING.curve_figures([0.5] * 10, [True] * 3 + [False] * 7)
    assert f["precision_at_recall"] == 0.3
    assert f["recall_at_precision"] is None
    # A negative tied with the top positive cannot be left out by any threshold.
    f = CEILING.curve_figures([0.9, 0.9, 0.1, 0.1, 0.1, 0.1], [True, False, True, False, False, False])
    assert f["precision_at_recall"] == 0.5


def test_recall_at_precision_needs_five_flagged() -> None:
    score = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0]
    positive = [True, False, True, True, True, True, False, False, False, True]
    f = CEILING.curve_figures(score, positive)
    # The top one alone is precise (1.0, recall 1/6) but a single flag proves little; from five
    # flagged on, the best is 5/6 = 0.83, under 0.85.
    assert f["recall_at_precision"] is None
    # Recall 0.30 needs two of the six: the best threshold then flags six, five of them right.
    assert f["precision_at_recall"] == 0.8333


def test_balanced_accuracy_is_the_best_threshold() -> None:
    assert CEILING.best_balanced_accuracy([0.1, 0.2, 0.8, 0.9], [False, False, True, True]) == 1.0
    # Ranked backwards: no threshold beats flagging all or none.
    assert CEILING.best_balanced_accuracy([0.9, 0.8, 0.2, 0.1], [False, False, True, True]) == 0.5


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="no positive"):
        CEILING.curve_figures([0.1, 0.2], [False, False])
    with pytest.raises(ValueError, match="2 scores for 3 labels"):
        CEILING.curve_figures([0.1, 0.2], [True, False, False])
    with pytest.raises(ValueError, match="both classes"):
        CEILING.best_balanced_accuracy([0.1, 0.2], [True, True])


def _readings(flagged: list[bool], contradicted: list[float]) -> dict[str, object]:
    import numpy as np

    gold = [True, False] * (len(flagged) // 2)
    return {
        "keys": [("wice", f"claim {i}", int(not g)) for i, g in enumerate(gold)],
        "wice_gold": np.asarray(gold),
        "wice_flagged": np.asarray(flagged),
        "gold_contradicted": np.asarray(gold),
        "contradicted": np.asarray(contradicted),
    }


def test_balanced_accuracy_weighs_both_classes_and_a_one_class_draw_is_chance() -> None:
    assert CEILING.balanced_accuracy([True, True, True, False], [True, True, False, False]) == 0.75
    assert CEILING.balanced_accuracy([True, False], [True, True]) == 0.5


def test_a_bootstrap_interval_is_seeded_and_brackets_the_spread() -> None:
    import numpy as np

    values = np.arange(100, dtype=float)
    mean = CEILING.bootstrap_interval(lambda i: float(values[i].mean()), 100, draws=500, seed=1)
    assert mean == CEILING.bootstrap_interval(lambda i: float(values[i].mean()), 100, draws=500, seed=1)
    assert mean[0] < 49.5 < mean[1] and mean[1] - mean[0] < 20  # the standard error is about 2.9
    assert CEILING.bootstrap_interval(lambda i: 7.0, 10, draws=50) == (7.0, 7.0)
    with pytest.raises(ValueError, match="two items"):
        CEILING.bootstrap_interval(lambda i: 0.0, 1)


def test_a_paired_comparison_tells_a_real_difference_from_none() -> None:
    perfect = _readings([True, False] * 20, [0.9, 0.1] * 20)
    # Right on half of each class: balanced accuracy 0.5 against 1.0.
    worse = _readings([i % 4 < 2 for i in range(40)], [0.9 if i % 4 < 2 else 0.1 for i in range(40)])
    same = CEILING.paired_comparison(perfect, perfect, draws=200)
    assert same["wice_balanced_accuracy_difference"] == 0.0 and same["wice_interval_95"] == (0.0, 0.0)
    assert same["wice_claims_read_differently"] == 0
    better = CEILING.paired_comparison(perfect, worse, draws=200)
    assert better["wice_balanced_accuracy_difference"] == 0.5
    assert better["wice_interval_95"][0] > 0  # told apart from noise
    assert better["wice_claims_read_differently"] == 20
    assert better["contradicted_average_precision_difference"] > 0 and better["contradicted_interval_95"][0] > 0
    other_claims = dict(worse, keys=[("wice", "another claim", 0)] * 40)
    with pytest.raises(ValueError, match="different eval claims"):
        CEILING.paired_comparison(perfect, other_claims)
