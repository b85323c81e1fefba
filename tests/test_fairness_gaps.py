"""Signed group gaps: null coverage of the bootstrap intervals, permutation p-values, units,
the class-ratio check, and intervals of FDR-AUC / ABF-AUC."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fairforensics.evaluation.confidence import (
    MIN_INTERVAL_UNITS,
    bootstrap_multiplicities,
    few_units_note,
    mcnemar_exact,
    proportion_interval,
    too_few_units,
    weighted_ranking_metrics,
)
from fairforensics.evaluation.metrics import auc, eer
from fairforensics.fairness.gaps import curve_auc_intervals, group_gaps
from fairforensics.fairness.metrics import bias_factor, bias_factor_pair


def test_null_intervals_cover_zero_at_the_nominal_rate():
    """200 data sets with random group membership (true gap 0): the 95 % intervals of the
    signed ACC difference cover 0 between 90 % and 99 % of the time."""
    covered = 0
    for k in range(200):
        rng = np.random.default_rng(1000 + k)
        n = 80
        y = rng.integers(0, 2, n)
        s = np.clip(0.3 * y + rng.normal(0.35, 0.2, n), 0, 1)
        g = rng.choice(["female", "male"], n)
        gap = group_gaps(y, s, g, metrics=("acc",), n_boot=200, n_perm=0, seed=k).gaps["acc"]
        covered += gap.low <= 0.0 <= gap.high
    assert 0.90 <= covered / 200 <= 0.99


def test_null_intervals_with_video_clusters_cover_zero():
    """Frames of one video share its label and most of its score: resampling videos keeps the
    nominal coverage (resampling frames would give too narrow intervals)."""
    covered = 0
    for k in range(100):
        rng = np.random.default_rng(k)
        n_vid, frames = 48, 5
        vy = np.tile([0, 1], n_vid // 2)
        vs = 0.3 * vy + rng.normal(0.35, 0.2, n_vid)
        y = np.repeat(vy, frames)
        s = np.clip(np.repeat(vs, frames) + rng.normal(0, 0.02, n_vid * frames), 0, 1)
        g = np.repeat(np.tile(["a", "a", "b", "b"], n_vid // 4), frames)  # 12 videos a cell
        ids = np.repeat(np.arange(n_vid), frames)
        gap = group_gaps(y, s, g, ids, metrics=("acc",), n_boot=200, n_perm=0, seed=k)
        covered += gap.gaps["acc"].low <= 0.0 <= gap.gaps["acc"].high
    assert 0.90 <= covered / 100 <= 1.0


def test_all_fake_model_is_a_class_ratio_effect():
    """The issue's example: every face called fake, FPR 1 and FNR 0 in both groups."""
    y = np.array([0] * 7 + [1] * 38 + [0] * 3 + [1] * 42)
    g = np.array(["female"] * 45 + ["male"] * 45)
    s = np.full(len(y), 0.9)
    res = group_gaps(y, s, g, n_boot=300, n_perm=300, seed=0)
    acc = res.gaps["acc"]
    assert acc.group_a == "female" and acc.group_b == "male"
    assert acc.diff == pytest.approx(38 / 45 - 42 / 45)
    assert abs(acc.diff) == pytest.approx(bias_factor(y, (s >= 0.5).astype(int), g))
    assert acc.favoured == "male"
    # 3 male real faces: too few for an interval, and the output says so
    assert np.isnan(acc.low) and acc.note == "male: fewer than 5 real videos (3)"  # the group
    assert res.notes["male"]["fpr"] == "fewer than 5 real videos (3)"
    assert "fpr" not in res.notes["female"]
    small = group_gaps(y, s, g, n_boot=300, n_perm=0, min_units=3).gaps["acc"]
    assert small.low <= small.diff <= small.high and small.note == ""
    assert res.gaps["fpr"].diff == 0 and res.gaps["fnr"].diff == 0
    assert (res.gaps["fpr"].group_a, res.gaps["fpr"].group_b) == ("female", "male")
    assert res.gaps["fpr"].p_value == 1.0 and res.gaps["fnr"].p_value == 1.0
    assert res.class_ratio["verdict"].startswith("class-ratio effect: error rates equal")
    assert res.class_ratio["mix_part"] == pytest.approx(acc.diff)
    assert res.class_ratio["rate_part"] == pytest.approx(0.0)


def test_a_real_gap_is_detected_and_signed():
    rng = np.random.default_rng(5)
    n = 400
    g = np.repeat(["female", "male"], n // 2)
    y = rng.integers(0, 2, n)
    noise = np.where(g == "female", 0.35, 0.12)  # females much harder
    s = np.clip(0.5 * y + 0.25 + rng.normal(0, 1, n) * noise, 0, 1)
    res = group_gaps(y, s, g, n_boot=300, n_perm=300, seed=1)
    acc = res.gaps["acc"]
    assert acc.diff < 0 and acc.favoured == "male"
    assert acc.high < 0  # the interval excludes 0
    assert acc.p_value < 0.01
    assert res.gaps["auc"].favoured == "male" and res.gaps["auc"].p_value < 0.05
    assert res.gaps["eer"].favoured == "male"
    assert "not only a class-ratio effect" in res.class_ratio["verdict"]
    lo, hi = res.group_ci["female"]["acc"]
    assert lo <= res.values["female"]["acc"] <= hi


def test_no_gap_gives_a_large_p_value():
    rng = np.random.default_rng(3)
    n = 300
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + rng.normal(0.35, 0.2, n), 0, 1)
    g = rng.permutation(np.repeat(["a", "b"], n // 2))
    assert group_gaps(y, s, g, metrics=("acc",), n_perm=400, seed=0).gaps["acc"].p_value > 0.05


def test_three_groups_use_the_widest_pair_and_a_global_test():
    rng = np.random.default_rng(7)
    n = 600
    g = np.repeat(["a", "b", "c"], n // 3)
    y = rng.integers(0, 2, n)
    noise = np.select([g == "a", g == "b"], [0.1, 0.2], 0.4)
    s = np.clip(0.5 * y + 0.25 + rng.normal(0, 1, n) * noise, 0, 1)
    res = group_gaps(y, s, g, metrics=("acc", "fnr"), n_boot=200, n_perm=200, seed=0)
    acc = res.gaps["acc"]
    value, low_group, high_group = bias_factor_pair(y, (s >= 0.5).astype(int), g)
    assert {acc.group_a, acc.group_b} == {low_group, high_group} == {"a", "c"}
    assert acc.spread == pytest.approx(value) == pytest.approx(abs(acc.diff))
    assert acc.diff > 0 and acc.favoured == "a"
    assert acc.p_value < 0.01


def test_small_groups_are_reported_but_not_ranked(caplog):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 105)
    s = rng.random(105)
    g = np.array(["a"] * 50 + ["b"] * 50 + ["tiny"] * 5)
    res = group_gaps(y, s, g, metrics=("acc",), n_boot=50, n_perm=50, min_group_size=10)
    assert res.groups == ["a", "b", "tiny"] and res.ranked == ["a", "b"]
    assert "tiny" in res.values and {res.gaps["acc"].group_a, res.gaps["acc"].group_b} == {
        "a",
        "b",
    }
    assert "fewer than 10 rows" in caplog.text
    with pytest.raises(ValueError, match="at least two groups"):
        group_gaps(y, s, g, min_group_size=60)


def test_seeded_and_bad_input():
    rng = np.random.default_rng(1)
    y, s = rng.integers(0, 2, 60), rng.random(60)
    g = rng.choice(["x", "y"], 60)
    one = group_gaps(y, s, g, n_boot=50, n_perm=50, seed=4)
    assert one == group_gaps(y, s, g, n_boot=50, n_perm=50, seed=4)
    off = group_gaps(y, s, g, n_boot=0, n_perm=0)
    assert np.isnan(off.gaps["acc"].low) and np.isnan(off.gaps["acc"].p_value)
    with pytest.raises(ValueError, match="unknown gap metrics"):
        group_gaps(y, s, g, metrics=("bogus",))
    with pytest.raises(ValueError, match="units must have one entry per sample"):
        group_gaps(y, s, g, units=np.arange(59))
    for bad, says in [({"n_boot": -1}, "n_boot must be >= 0, got -1"),
                      ({"n_perm": -1}, "n_perm must be >= 0, got -1"),
                      ({"confidence": 0.0}, r"confidence must be in \(0, 1\), got 0.0"),
                      ({"min_units": 1}, "min_units must be >= 2")]:  # fmt: skip
        with pytest.raises(ValueError, match=says):
            group_gaps(y, s, g, **bad)


def test_weighted_ranking_metrics_equal_the_repeated_samples():
    rng = np.random.default_rng(2)
    y, s = rng.integers(0, 2, 40), np.round(rng.random(40), 1)
    mult = next(bootstrap_multiplicities(rng, 40, 3))
    got = weighted_ranking_metrics(y, s, mult)
    for k, w in enumerate(mult):
        rows = np.repeat(np.arange(40), w)
        assert got["auc"][k] == pytest.approx(auc(y[rows], s[rows]))
        assert got["eer"][k] == pytest.approx(eer(y[rows], s[rows])[0])
    assert mult.sum(axis=1).tolist() == [40, 40, 40]


def test_curve_auc_intervals_contain_the_point_value():
    from fairforensics.fairness.abf import DEFAULT_XS, POOLED, curve_auc, fairness_curves

    rng = np.random.default_rng(4)
    n = 200
    y = rng.integers(0, 2, n)
    g = rng.choice(["f", "m"], n)
    s = np.clip(0.5 * y + 0.25 + rng.normal(0, 0.2, n), 0, 1)
    ci = curve_auc_intervals(
        y, s, g, None, xs=DEFAULT_XS, threshold_groups=[POOLED, "f"], n_boot=60
    )
    c = fairness_curves(y, s, g, DEFAULT_XS)
    low, high = ci[POOLED]["fdr_auc"]
    assert low <= curve_auc(DEFAULT_XS, c.fdr) <= high
    assert ci["f"]["abf_auc"][0] <= ci["f"]["abf_auc"][1]


def test_mcnemar_exact_by_hand():
    # 1 of 7 discordant pairs one way: p = 2 * (C(7,0) + C(7,1)) / 2^7 = 16 / 128
    assert mcnemar_exact(1, 6) == pytest.approx(0.125)
    assert mcnemar_exact(6, 1) == pytest.approx(0.125)
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(2, 2) == 1.0 and mcnemar_exact(0, 0) == 1.0
    with pytest.raises(ValueError, match=">= 0"):
        mcnemar_exact(-1, 2)


def test_proportion_interval_is_wilson_and_never_zero_width():
    """Issue 29, item 7: 30 of 30 is not ``100.0 [100.0, 100.0]``."""
    z2 = stats.norm.ppf(0.975) ** 2
    low, high = proportion_interval(np.ones(30, bool), np.arange(30))
    assert (low, high) == pytest.approx((30 / (30 + z2), 1.0))  # by hand: 0.8865
    assert low == pytest.approx(0.8865, abs=1e-4)
    for k, n in ((0, 7), (3, 10), (17, 40), (29, 30)):  # independent faces: scipy's Wilson
        events = np.arange(n) < k
        ref = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert proportion_interval(events, np.arange(n)) == pytest.approx((ref.low, ref.high))
    # three videos of ten identical frames: about three trials, not thirty
    clustered = proportion_interval(np.ones(30, bool), np.repeat([0, 1, 2], 10))
    assert clustered == pytest.approx((3 / (3 + z2), 1.0))
    with pytest.raises(ValueError, match="one entry per event"):
        proportion_interval(np.ones(3, bool), [0, 1])
    assert np.isnan(proportion_interval(np.ones(0, bool), [])).all()


def test_one_small_group_rule():
    assert MIN_INTERVAL_UNITS == 5 and too_few_units(4) and not too_few_units(5)
    assert few_units_note(3, "real videos") == "fewer than 5 real videos (3)"
    assert few_units_note(5, "real videos") == ""


def test_class_ratio_verdicts_without_shared_classes_or_tests():
    # each group holds one class: no error rate can be compared
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    s = np.array([0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.3])
    g = np.array(["a"] * 4 + ["b"] * 4)
    res = group_gaps(y, s, g, n_boot=20, n_perm=20)
    assert res.class_ratio["verdict"].startswith("cannot be told apart from a class-ratio")
    # unequal error rates but no permutation test: no verdict on significance
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    s = rng.random(200)
    g = np.array(["a"] * 80 + ["b"] * 120)
    off = group_gaps(y, s, g, n_boot=0, n_perm=0)
    assert "not tested: permutations off" in off.class_ratio["verdict"]
    same_mix = group_gaps(np.tile([0, 1], 50), rng.random(100), np.repeat(["a", "b"], 50))
    assert same_mix.class_ratio["verdict"].startswith("not a class-ratio effect: same")


def test_interval_helpers_against_outside_references():
    from scipy import stats

    from fairforensics.evaluation.confidence import (
        cluster_icc,
        effective_size,
        mover_interval,
        wilson_interval,
    )

    # Wilson score interval = scipy's
    ref = stats.binomtest(7, 30).proportion_ci(0.95, method="wilson")
    assert np.allclose(wilson_interval(7 / 30, 30), (ref.low, ref.high))
    # Newcombe (Stat Med 1998) Table II, example (a): 56/70 - 48/80, method 10: 0.0524, 0.3339
    (la, ua), (lb, ub) = wilson_interval(56 / 70, 70), wilson_interval(48 / 80, 80)
    est, low, high = mover_interval([(1.0, 56 / 70, la, ua), (-1.0, 48 / 80, lb, ub)])
    assert est == pytest.approx(0.2) and (round(low, 4), round(high, 4)) == (0.0524, 0.3339)
    # ICC: identical frames within each video -> 1; independent frames -> about 0
    assert cluster_icc([0, 4, 4, 0], [4, 4, 4, 4], [0, 0, 1, 1]) == 1.0
    rng = np.random.default_rng(0)
    errors = rng.binomial(20, 0.3, 400)
    assert abs(cluster_icc(errors, np.full(400, 20), np.zeros(400))) < 0.02
    assert np.isnan(cluster_icc([0, 0], [5, 5], [0, 1]))  # no stratum with two videos
    # Kish: 10 videos of 8 frames with ICC 1 are worth 10 frames, with ICC 0 all 80
    assert effective_size(np.full(10, 8), 1.0) == pytest.approx(10)
    assert effective_size(np.full(10, 8), 0.0) == pytest.approx(80)
    assert effective_size(np.full(10, 8), np.nan) == pytest.approx(10)


def test_clustered_auc_variance_is_delong_per_video():
    from fairforensics.evaluation.confidence import clustered_auc_variance, delong_variance

    rng = np.random.default_rng(3)
    y = np.repeat([0, 1], 12)
    s = rng.normal(y, 1.0)
    auc1, var1, k = clustered_auc_variance(y, s, np.arange(24))
    assert (auc1, var1) == pytest.approx(delong_variance(y, s)) and k == 12
    # every video shown as 6 identical frames: the same AUC and variance (6x the frames are
    # not 6x the information), where DeLong on the frames would shrink it about 6 times
    yy, ss, vid = np.repeat(y, 6), np.repeat(s, 6), np.repeat(np.arange(24), 6)
    auc6, var6, _ = clustered_auc_variance(yy, ss, vid)
    assert (auc6, var6) == pytest.approx((auc1, var1))
    assert delong_variance(yy, ss)[1] < var1 / 4
