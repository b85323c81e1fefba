"""The cross-group AUC's bootstrap-t interval (issue 45, item 4): replicates by multiplicity
weights equal copied rows, coverage near 1 with 20 videos of a class, and the notes of the
intervals it withholds. The full table: ``scripts/bench_xauc.py`` (docs/evaluation.md)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fairforensics.evaluation.confidence import clustered_auc_variance
from fairforensics.fairness.leaderboard_metrics import _Side, _weighted_auc, cross_group_aucs

ALL = ("all", "all")


def clustered_data(
    rng: np.random.Generator, n_videos: int, xauc: float, sd_video: float = 0.7
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n_videos`` fake and as many real videos of 8-32 frames; frame score = shift (fakes) +
    the video's effect + the frame's, both normal: the true P(fake frame > real frame) is
    ``Phi(shift / sqrt(2 (sd_video^2 + sd_frame^2)))`` = ``xauc``."""
    sd_frame = 0.7
    shift = stats.norm.ppf(xauc) * np.sqrt(2 * (sd_video**2 + sd_frame**2))
    frames = rng.integers(8, 33, 2 * n_videos)
    video = np.repeat(np.arange(2 * n_videos), frames)
    label = (np.arange(2 * n_videos) % 2)[video]
    effect = rng.normal(0, sd_video, 2 * n_videos)[video]
    return label, label * shift + effect + rng.normal(0, sd_frame, len(video)), video


def test_weights_equal_copied_videos() -> None:
    """A replicate's AUC and variance by multiplicity weights are those of the data set with
    each video's frames copied that often (the clustered estimator on the copies)."""
    rng = np.random.default_rng(3)
    y, s, video = clustered_data(rng, 7, 0.8)
    s = np.round(s, 1)  # ties across classes count one half
    fake_u = np.unique(video[y == 1], return_inverse=True)[1]
    real_u = np.unique(video[y == 0], return_inverse=True)[1]
    fake = _Side.of(s[y == 1], fake_u, s[y == 0], real_u)
    real = _Side.of(s[y == 0], real_u, s[y == 1], fake_u)
    w = rng.integers(0, 3, (1, 7)).astype(float)
    v = rng.integers(0, 3, (1, 7)).astype(float)
    w[0, 0], v[0, 0] = 1, 2  # at least two videos of each class
    w[0, 1] = v[0, 1] = 1
    auc_w, var_w = _weighted_auc(fake, real, w, v)
    rows, clusters = [], []
    for side, units, mult in ((1, fake_u, w[0]), (0, real_u, v[0])):
        idx = np.flatnonzero(y == side)
        for unit, times in enumerate(mult.astype(int)):
            for copy in range(times):
                rows.append(idx[units == unit])
                clusters.append(np.full((units == unit).sum(), f"{side}/{unit}/{copy}"))
    rows_all = np.concatenate(rows)
    auc, var, _ = clustered_auc_variance(y[rows_all], s[rows_all], np.concatenate(clusters))
    assert auc_w[0] == pytest.approx(auc) and var_w[0] == pytest.approx(var)


@pytest.mark.parametrize(("xauc", "n_sets"), [(0.99, 400), (0.8, 200)])
def test_coverage_near_one_with_20_videos(xauc: float, n_sets: int) -> None:
    """Coverage; no null. The 95 % interval of the cross-group AUC covers the true xAUC in
    95 % of data sets of 20 fake and 20 real videos (frames clustered in videos): 0.95 lies in
    the binomial 99 % interval of the covered count. The normal logit interval with the
    clustered variance covered 0.875 of these 400 sets at 0.99 (binomial 99 % interval
    [0.83, 0.91]: it fails)."""
    rng = np.random.default_rng(11)
    covered = 0
    for k in range(n_sets):
        y, s, video = clustered_data(rng, 20, xauc)
        est = cross_group_aucs(y, s, np.full(len(y), "all"), video, n_boot=200, seed=k)[ALL]
        covered += est.low <= xauc <= est.high
    low, high = stats.binomtest(covered, n_sets).proportion_ci(0.99)
    assert low <= 0.95 <= high, covered / n_sets


def test_withheld_intervals_say_why() -> None:
    """Complete separation and zero variance give no interval and a note; the small-group rule
    names the class; n_boot 0 turns intervals off; the same seed gives the same interval."""
    rng = np.random.default_rng(2)
    y, s, video = clustered_data(rng, 10, 0.8)
    g = np.full(len(y), "all")
    apart = cross_group_aucs(y, s + 100 * y, g, video)[ALL]
    assert apart.value == 1.0 and np.isnan(apart.low) and "complete separation" in apart.note
    flat = cross_group_aucs(y, np.zeros(len(y)), g, video)[ALL]
    assert flat.value == 0.5 and np.isnan(flat.high)
    assert flat.note == "variance 0: every video's placement is the same"
    below = cross_group_aucs(y, s - 100 * y, g, video)[ALL]
    assert below.value == 0.0 and "AUC 0: complete separation" in below.note
    # with the small-group rule off, two videos of a class are the fewest with an interval
    for n_real, interval in ((1, False), (2, True)):
        keep = (y == 1) | (video < 2 * n_real)
        est = cross_group_aucs(y[keep], s[keep], g[keep], video[keep], min_units=1)[ALL]
        assert np.isfinite(est.low) == interval
        assert est.note == ("" if interval else "fewer than two videos of a class")
    keep = (video < 8) & (video != 6)  # 4 fake videos (1, 3, 5, 7), 3 real (0, 2, 4)
    few = cross_group_aucs(y[keep], s[keep], g[keep], video[keep])[ALL]
    assert few.note == "fewer than 5 fake videos of all (4); fewer than 5 real videos of all (3)"
    assert np.isnan(few.low) and np.isnan(few.high) and 0 <= few.value <= 1
    enough = cross_group_aucs(y[keep], s[keep], g[keep], video[keep], min_units=3)[ALL]
    assert not enough.note and enough.low < enough.high
    off = cross_group_aucs(y, s, g, video, n_boot=0)[ALL]
    assert np.isnan(off.low) and off.note == "intervals off"
    one = cross_group_aucs(y, s, g, video, n_boot=300, seed=4)[ALL]
    two = cross_group_aucs(y, s, g, video, n_boot=300, seed=4)[ALL]
    assert one == two and one.low < one.value < one.high and not one.note
    # the defaults are 1000 replicates and seed 0
    assert (
        cross_group_aucs(y, s, g, video)[ALL]
        == cross_group_aucs(y, s, g, video, n_boot=1000, seed=0)[ALL]
    )
    # a group without fakes: its pairs as the fakes' side are NaN and say why
    groups = np.where((y == 0) & (video % 4 == 0), "b", "a")
    out = cross_group_aucs(y, s, groups, video)
    assert set(out) == {("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")}
    for pair in (("b", "a"), ("b", "b")):
        assert np.isnan(out[pair].value) and np.isnan(out[pair].low)
        assert out[pair].note == f"no fakes of b or no reals of {pair[1]}"


@pytest.mark.parametrize("frames_per_block", [None, 15])
def test_interval_equals_a_bootstrap_t_of_copied_videos(frames_per_block: int | None) -> None:
    """The interval, recomputed from its definition: the same multiplicities (one block, or
    blocks of 15 replicates drawn fakes then reals in turn, as memory bounds them on large
    data), each replicate's videos copied and scored by the clustered estimator, t on the
    logit of ``(A k + 1/2) / (k + 1)``, order statistics of t."""
    from fairforensics.evaluation.confidence import bootstrap_multiplicities
    from fairforensics.fairness.leaderboard_metrics import xauc_interval

    rng = np.random.default_rng(8)
    y, s, video = clustered_data(rng, 6, 0.9)
    # units are numbered as evaluation.metrics.factorize orders them: by their text
    fake_u = np.unique(video[y == 1].astype(str), return_inverse=True)[1]
    real_u = np.unique(video[y == 0].astype(str), return_inverse=True)[1]
    if frames_per_block is None:
        est = cross_group_aucs(y, s, np.full(len(y), "all"), video, n_boot=40, seed=3)[ALL]
        low_high = (est.low, est.high)
        w_blocks = v_blocks = {}
    else:  # 15 replicates a block: 15 x all frames cells
        cells = frames_per_block * len(y)
        _, *low_high, _ = xauc_interval(
            s[y == 1], fake_u, s[y == 0], real_u,
            n_boot=40, confidence=0.95, rng=np.random.default_rng(3), max_cells=cells,
        )  # fmt: skip
        w_blocks = {"max_cells": frames_per_block * 6}
        v_blocks = {"max_cells": frames_per_block * 6}
    draw = np.random.default_rng(3)
    pairs = list(
        zip(
            bootstrap_multiplicities(draw, 6, 40, **w_blocks),
            bootstrap_multiplicities(draw, 6, 40, **v_blocks),
            strict=True,
        )
    )
    assert len(pairs) == (1 if frames_per_block is None else 3)
    w = np.vstack([p[0] for p in pairs])
    v = np.vstack([p[1] for p in pairs])
    k = 36

    def logit_se(a: float, var: float) -> tuple[float, float]:
        shrunk = (a * k + 0.5) / (k + 1)
        return np.log(shrunk / (1 - shrunk)), np.sqrt(var) / (shrunk * (1 - shrunk))

    auc, var, _ = clustered_auc_variance(y, s, video)
    centre, se = logit_se(auc, var)
    ts = []
    for r in range(40):
        rows, clusters = [], []
        for side, units, mult in ((1, fake_u, w[r]), (0, real_u, v[r])):
            idx = np.flatnonzero(y == side)
            for unit, times in enumerate(mult):
                for copy in range(times):
                    rows.append(idx[units == unit])
                    clusters += [f"{side}/{unit}/{copy}"] * int((units == unit).sum())
        rows_all = np.concatenate(rows)
        a, var_r, _ = clustered_auc_variance(y[rows_all], s[rows_all], np.array(clusters))
        theta, se_r = logit_se(a, var_r)
        ts.append(0.0 if theta == centre else (theta - centre) / se_r)
    tails = [(1 - 0.95) / 2, (1 + 0.95) / 2]  # as computed there (0.025 + 2e-17: 2nd of 40)
    t_low, t_high = np.quantile(ts, tails, method="inverted_cdf")
    expit = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    assert low_high[0] == pytest.approx(expit(centre - t_high * se))
    assert low_high[1] == pytest.approx(expit(centre - t_low * se))
