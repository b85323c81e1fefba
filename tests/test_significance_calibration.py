"""Level and coverage of the leaderboard's statistics by seeded simulation (issue 45, items 1-3):
family-wise ties with the best, the clustered DeLong test with few videos, the seed mean's two
intervals. Bounds are exact (Clopper-Pearson) binomial intervals at 99 %."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fairforensics.evaluation.confidence import clustered_auc_covariance
from fairforensics.evaluation.predictions import Predictions
from fairforensics.evaluation.significance import (
    GIVEN_MODELS,
    OVER_SEEDS,
    clustered_delong_test,
    compare_with_best,
    logit_interval,
    seed_mean_intervals,
)


def _bounds(hits: int, n: int) -> tuple[float, float]:
    ci = stats.binomtest(hits, n).proportion_ci(0.99)
    return ci.low, ci.high


def _preds(y: np.ndarray, score: np.ndarray, video: np.ndarray, frame: np.ndarray) -> Predictions:
    n = len(y)
    return Predictions(
        dataset=np.full(n, "d", dtype=object), video_id=video.astype(str).astype(object),
        frame=frame, label=y, score=score,
        method=np.where(y == 1, "fake", "real").astype(object),
    )  # fmt: skip


def _equal_detectors(
    rng: np.random.Generator, k: int, videos: int, frames: int, video_sd: float
) -> dict[str, Predictions]:
    """``k`` exchangeable detectors (equal AUCs): a shared video look and class signal, each
    detector's own video effect (sd ``video_sd``) and frame noise."""
    video = np.repeat(np.arange(2 * videos), frames)
    frame = np.tile(np.arange(frames), 2 * videos)
    y = (video >= videos).astype(np.int64)
    shared = rng.normal(size=2 * videos)[video] + 0.8 * y
    return {
        f"d{i}": _preds(
            y,
            shared + video_sd * rng.normal(size=2 * videos)[video] + rng.normal(size=len(y)),
            video,
            frame,
        )
        for i in range(k)
    }


@pytest.mark.parametrize(("k", "n_sets"), [(2, 150), (3, 150), (5, 200), (10, 200)])
def test_ties_are_family_wise_with_equal_detectors(k: int, n_sets: int) -> None:
    """Null: all k detectors have the same AUC. Some detector is marked "not tied" with the
    (data-chosen) best in at most 5 % of data sets (50 videos a class). Holm over "best vs j"
    measured 11-12 % at k = 5 and 10 (issue 45): the 99 % lower bound would exceed 0.05."""
    rng = np.random.default_rng(100 + k)
    some = 0
    for _ in range(n_sets):
        out = compare_with_best(
            _equal_detectors(rng, k, 50, 1, 0.7), level="video", n_sim=2000
        )  # fmt: skip
        some += not all(c.tied for c in out.values())
    low, _ = _bounds(some, n_sets)
    assert low <= 0.05, (k, some / n_sets)


def test_ties_at_frame_level_need_the_clustering() -> None:
    """Frame level, 16 frames a video with strong per-detector video effects: treating the
    frames as independent would mark equal detectors "not tied" in most data sets."""
    rng = np.random.default_rng(7)
    n_sets, some = 120, 0
    for _ in range(n_sets):
        out = compare_with_best(_equal_detectors(rng, 3, 15, 16, 1.5), level="frame", n_sim=2000)
        some += not all(c.tied for c in out.values())
    low, _ = _bounds(some, n_sets)
    assert low <= 0.05, some / n_sets


def test_ties_find_a_worse_detector_and_are_one_sided_in_effect() -> None:
    """Power: a detector with a much lower AUC is marked not tied; an equal one is tied."""
    rng = np.random.default_rng(3)
    preds = _equal_detectors(rng, 3, 50, 4, 0.5)
    y, video, frame = preds["d0"].label, preds["d0"].video_id.astype(int), preds["d0"].frame
    preds["worse"] = _preds(y, rng.normal(size=len(y)), video, frame)
    out = compare_with_best(preds, level="frame", n_sim=4000)
    assert not out["worse"].tied and out["worse"].p_adjusted < 0.05
    assert out["worse"].p_adjusted >= out["worse"].p_value  # adjusted for the family


@pytest.mark.parametrize("videos", [2, 3, 4])
def test_delong_gives_no_p_below_five_videos(videos: int) -> None:
    rng = np.random.default_rng(videos)
    video = np.repeat(np.arange(2 * videos), 6)
    y = (video >= videos).astype(int)
    res = clustered_delong_test(y, rng.normal(size=len(y)) + y, rng.normal(size=len(y)), video)
    assert np.isnan(res.p_value) and f"fewer than 5 real videos ({videos})" in res.note
    assert np.isfinite(res.z)
    out = compare_with_best(
        {n: _preds(y, rng.normal(size=len(y)) + y, video, video * 0 + np.arange(len(y))) for n in "ab"},
        level="frame",
    )  # fmt: skip
    other = next(c for c in out.values() if not c.best)
    assert not other.tied and "fewer than 5" in other.note and np.isnan(other.p_value)


@pytest.mark.parametrize(("videos", "hard", "seed"), [(5, True, 5), (20, False, 20)])
def test_delong_level_with_few_videos(videos: int, hard: bool, seed: int) -> None:
    """Null: both scorings have the same AUC (exchangeable given class and video), mixed
    within-video correlations, 8-32 frames a video; hard 0/1 scores at 5 videos. The t
    reference keeps the level (the normal one rejected 9.7 % at 5 videos with hard scores)."""
    rng = np.random.default_rng(seed)
    n_sets, rejected = 500, 0
    for _ in range(n_sets):
        frames = rng.integers(8, 33, 2 * videos)
        video = np.repeat(np.arange(2 * videos), frames)
        y = (video >= videos).astype(int)
        rho = rng.uniform(0, 1)
        shared = rng.normal(size=2 * videos)[video] + y
        a, b = (
            shared + rho * rng.normal(size=2 * videos)[video] + rng.normal(size=len(y))
            for _ in range(2)
        )
        if hard:
            a, b = (a > 0.5).astype(float), (b > 0.5).astype(float)
        rejected += clustered_delong_test(y, a, b, video).p_value < 0.05
    low, high = _bounds(rejected, n_sets)
    assert low <= 0.05 <= high, rejected / n_sets


def _seeded_runs(
    rng: np.random.Generator, n_seeds: int, videos: int, d0: float, tau: float
) -> tuple[list[Predictions], float, float]:
    """Video-level scores of ``n_seeds`` trained models: model s separates the classes by
    d_s ~ N(d0, tau); a shared video look (sd 1) and the model's own noise (sd 1). Returns the
    runs, the mean over these models of their population AUC (the target given the models) and
    the mean over training seeds (the target over seeds)."""
    y = np.repeat([0, 1], videos)
    video = np.arange(2 * videos)
    look = rng.normal(size=2 * videos)
    d = rng.normal(d0, tau, n_seeds)
    runs = [_preds(y, look + ds * y + rng.normal(size=2 * videos), video, video * 0) for ds in d]
    given = float(np.mean(stats.norm.cdf(d / 2)))  # AUC = Phi(d / sqrt(2 * (1 + 1)))
    over = float(stats.norm.cdf(d0 / np.sqrt(4 + tau**2)))
    return runs, given, over


@pytest.mark.parametrize("n_seeds", [2, 3, 5])
def test_seed_intervals_cover_their_targets(n_seeds: int) -> None:
    """Each named interval covers its own target: given the models 95 %, told apart from 99 %
    (the 99 % binomial interval of 300 data sets holds 0.95 and lies below 0.99); over seeds at
    least 95 %. The interval given the models read as an over-seeds interval covers far less
    (issue 45: 46-57 %)."""
    rng = np.random.default_rng(40 + n_seeds)
    n_sets = 300
    hits = {GIVEN_MODELS: 0, OVER_SEEDS: 0, "given, read over seeds": 0}
    for _ in range(n_sets):
        runs, given, over = _seeded_runs(rng, n_seeds, 100, 1.2, 0.3)
        ci = {k: v["auc"] for k, v in seed_mean_intervals(runs, level="video", n_boot=2).items()}
        hits[GIVEN_MODELS] += ci[GIVEN_MODELS].low <= given <= ci[GIVEN_MODELS].high
        hits[OVER_SEEDS] += ci[OVER_SEEDS].low <= over <= ci[OVER_SEEDS].high
        hits["given, read over seeds"] += ci[GIVEN_MODELS].low <= over <= ci[GIVEN_MODELS].high
    low, high = _bounds(hits[GIVEN_MODELS], n_sets)
    assert low <= 0.95 <= high and high < 0.99, hits[GIVEN_MODELS] / n_sets
    # over seeds: t with S - 1 degrees of freedom on a variance that also counts each seed's
    # own test noise is conservative (measured 0.99-1.0 here), never below 0.95
    _, high = _bounds(hits[OVER_SEEDS], n_sets)
    assert high >= 0.95, hits[OVER_SEEDS] / n_sets
    assert hits["given, read over seeds"] / n_sets < 0.9, hits["given, read over seeds"] / n_sets


def test_over_seeds_interval_is_test_plus_between_seed_variance() -> None:
    """The over-seeds interval by hand: AUC on the logit scale with the clustered test-set
    variance of the mean + the seeds' sample variance / S and a t quantile with S - 1 df; ACC
    with the bootstrap variance of the mean + the seeds' variance / S. One seed: none."""
    rng = np.random.default_rng(9)
    runs, _, _ = _seeded_runs(rng, 3, 30, 1.0, 0.4)
    out = seed_mean_intervals(runs, level="video", n_boot=200, seed=1)
    y = runs[0].label
    aucs, cov = clustered_auc_covariance(y, [r.score for r in runs], np.arange(len(y)))
    var = cov.sum() / 9 + np.var(aucs, ddof=1) / 3
    mean = aucs.mean()
    half = stats.t.ppf(0.975, 2) * np.sqrt(var) / (mean * (1 - mean))
    logit = np.log(mean / (1 - mean))
    expected = 1 / (1 + np.exp(-(logit - half))), 1 / (1 + np.exp(-(logit + half)))
    got = out[OVER_SEEDS]["auc"]
    assert (got.low, got.high) == pytest.approx(expected, rel=1e-12)
    given = out[GIVEN_MODELS]["auc"]
    assert (given.low, given.high) == pytest.approx(logit_interval(mean, cov.sum() / 9), rel=1e-12)
    assert got.high - got.low > given.high - given.low
    # ACC: from the bootstrap replicates (same seed, same replicates as the given interval)
    accs = [float(np.mean((r.score >= 0.5) == y)) for r in runs]
    acc = out[OVER_SEEDS]["acc"]
    assert acc.value == pytest.approx(np.mean(accs))
    assert acc.high - acc.value > stats.t.ppf(0.975, 2) * np.std(accs, ddof=1) / np.sqrt(3) * 0.999
    one = seed_mean_intervals(runs[:1], level="video", n_boot=20)[OVER_SEEDS]["auc"]
    assert np.isnan(one.low) and "one seed" in one.note
