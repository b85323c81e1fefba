"""Intervals of the issue-38 leaderboard: cross-group AUCs, Lin et al.'s gaps by resampled
counts, and the interval of a seeded cell's mean over seeds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fairforensics.evaluation.metrics import auc
from fairforensics.evaluation.predictions import Predictions
from fairforensics.evaluation.significance import seed_mean_ci
from fairforensics.fairness.leaderboard_metrics import (
    cross_group_aucs,
    lin_from_counts,
    lin_intervals,
)
from fairforensics.fairness.metrics import lin_metrics


def test_cross_group_auc_hand_case_and_small_groups() -> None:
    # group a: fakes 0.9, 0.4; reals 0.5 ; group b: fakes 0.8; reals 0.3, 0.6
    y = [1, 1, 0, 1, 0, 0]
    s = [0.9, 0.4, 0.5, 0.8, 0.3, 0.6]
    g = ["a", "a", "a", "b", "b", "b"]
    out = cross_group_aucs(y, s, g, units=range(6))
    assert out[("a", "b")].value == pytest.approx(3 / 4)  # 0.9 > both; 0.4 > 0.3 only
    assert out[("b", "a")].value == 1.0 and out[("a", "a")].value == 0.5
    assert out[("a", "b")].value == auc([1, 1, 0, 0], [0.9, 0.4, 0.3, 0.6])
    assert np.isnan(out[("a", "b")].low) and "fewer than 5 fake videos of a" in out[("a", "b")].note


def test_cross_group_auc_interval_coverage() -> None:
    """Null in words: none; coverage. With scores normal, fakes of a shifted by 1 above the
    reals of b (true xAUC = Phi(1 / sqrt(2))), frames clustered in videos (10 fake videos of a,
    10 real of b), the 95 % interval covers the truth about 95 % of the time: within the
    binomial 99 % interval of 400 draws (the plain normal interval: 0.88, outside it)."""
    rng = np.random.default_rng(0)
    truth = stats.norm.cdf(1 / np.sqrt(2))
    covered, n_rep = 0, 400
    for _ in range(n_rep):
        videos = np.repeat(np.arange(40), 3)
        label = (np.arange(40) % 2)[videos]
        group = np.where(np.arange(40) % 4 < 2, "a", "b")[videos]
        look = rng.normal(0, 0.7, 40)[videos]  # a video's frames share their look
        s = label * 1.0 + look + rng.normal(0, np.sqrt(1 - 0.49), len(videos))
        est = cross_group_aucs(label, s, group, videos)[("a", "b")]
        covered += est.low <= truth <= est.high
    low, high = stats.binomtest(covered, n_rep).proportion_ci(0.99)
    assert low <= 0.95 <= high, covered / n_rep


def test_lin_from_counts_equals_lin_metrics() -> None:
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 200)
    s = rng.random(200)
    g = rng.choice(["x", "y", "z"], 200)
    y[g == "z"] = 1  # a group without reals: no part in the FPR terms
    point = lin_metrics(y, s, g, 0.4)
    counts = np.array(
        [
            [np.sum((g == k) & (y == 0)), np.sum((g == k) & (y == 1)),
             np.sum((g == k) & (y == 0) & (s >= 0.4)), np.sum((g == k) & (y == 1) & (s < 0.4))]
            for k in ("x", "y", "z")
        ]
    )  # fmt: skip
    fast = lin_from_counts(counts)
    for k, v in fast.items():
        assert float(v) == pytest.approx(point[k]), k


def test_lin_intervals_small_group_rule_and_seeding() -> None:
    rng = np.random.default_rng(2)
    videos = np.repeat(np.arange(48), 2)
    y = (np.arange(48) % 2)[videos]
    g = np.where(np.arange(48) % 4 < 2, "f", "m")[videos]
    s = 0.3 + 0.4 * y + rng.normal(0, 0.2, len(videos))
    a = lin_intervals(y, s, g, videos, threshold=0.5, n_boot=100, seed=3)
    assert a == lin_intervals(y, s, g, videos, threshold=0.5, n_boot=100, seed=3)
    for k, est in a.items():
        assert est.low <= est.value <= est.high or est.value == 0, k
    few = lin_intervals(y[:16], s[:16], g[:16], videos[:16], n_boot=10)
    assert np.isnan(few["F_DP"].low) and "fewer than 5" in few["F_DP"].note


def _pred(y: np.ndarray, s: np.ndarray, videos: np.ndarray) -> Predictions:
    return Predictions(
        dataset=["d"] * len(y), video_id=[f"v{v}" for v in videos],
        frame=np.arange(len(y)) % 2, label=y, score=s, method=["m"] * len(y),
    )  # fmt: skip


def test_seed_mean_interval_coverage() -> None:
    """Coverage of the interval of a seeded cell (the mean AUC over two seeds' models, held
    fixed): two "models" score normal videos with a per-model shift, so the true mean AUC is
    known; the 95 % interval covers it about 95 % of the time (within the binomial 99 %
    interval of 150 draws)."""
    rng = np.random.default_rng(4)
    shifts = (1.0, 1.4)  # two seeds' models
    truth = np.mean([stats.norm.cdf(d / np.sqrt(2)) for d in shifts])
    covered, n_rep = 0, 150
    for _ in range(n_rep):
        videos = np.repeat(np.arange(60), 2)
        y = (np.arange(60) % 2)[videos]
        z = rng.normal(size=60)[videos]  # video-level scores, both frames alike
        preds = [_pred(y, d * y + z, videos) for d in shifts]
        ci = seed_mean_ci(preds, level="video", n_boot=1)
        covered += ci["auc"].low <= truth <= ci["auc"].high
    low, high = stats.binomtest(covered, n_rep).proportion_ci(0.99)
    assert low <= 0.95 <= high, covered / n_rep
    point = seed_mean_ci(preds, level="frame", n_boot=10)["auc"].value
    assert point == pytest.approx(np.mean([auc(y, d * y + z) for d in shifts]))
