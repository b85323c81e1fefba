"""A small version of scripts/bench_fairness_calibration.py (docs/fairness.md, "Calibration"):
clustered videos, a minority group with 6-12 real videos and a class mix that differs from the
majority's. The class-stratified permutation test keeps its level and the Wilson/MOVER interval
its coverage, where the tests used before issue 23 (group labels shuffled over all videos, a
percentile bootstrap of videos within each group) fail the same bounds. Seeded: deterministic."""

from __future__ import annotations

import numpy as np

from fairforensics.benchmarks.fairness_calibration import Scenario, calibrate, simulate
from fairforensics.fairness.gaps import group_gaps


def test_fpr_gap_keeps_its_level_where_the_old_statistics_did_not():
    # real share 0.8 in the majority (100 videos), 0.2 in the minority: the old test compared
    # the minority's 6-12 real videos with permuted groups of about 30
    sc = Scenario(real_share=(0.8, 0.2), majority_videos=100)
    res = calibrate(sc, 300, n_boot=100, n_perm=200, seed=0, metrics=("fpr",))["fpr"]
    assert res["null_reject"]["rate"] <= 0.07 < res["old_null_reject"]["rate"]
    assert res["old_null_reject"]["low"] > 0.07  # the old test's excess is not noise
    assert 0.92 <= res["null_cover"]["rate"] <= 0.99
    assert res["old_null_cover"]["rate"] < 0.92
    assert res["alt_cover"]["rate"] >= 0.9 and res["power"]["rate"] >= 0.5


def test_three_groups_keep_level_and_coverage():
    res = calibrate(Scenario(n_groups=3), 100, n_boot=100, n_perm=200, seed=1, metrics=("fnr",))
    assert res["fnr"]["null_reject"]["rate"] <= 0.1
    assert res["fnr"]["null_cover"]["rate"] >= 0.92 and res["fnr"]["power"]["rate"] >= 0.3


def test_simulated_data_sets_have_the_documented_design():
    rng = np.random.default_rng(0)
    y, s, g, vid, truth = simulate(Scenario(n_groups=3, real_share=(0.6, 0.2)), rng, True)
    per_video = {v: (g[vid == v][0], y[vid == v][0]) for v in np.unique(vid)}
    count = {
        (grp, c): sum(1 for v in per_video.values() if v == (grp, c))
        for grp in "abc"
        for c in (0, 1)
    }
    assert (count[("a", 0)], count[("a", 1)]) == (36, 24)
    assert 6 <= count[("b", 0)] <= 12 and count[("b", 1)] == 4 * count[("b", 0)]
    assert 6 <= count[("c", 1)] <= 12 and count[("c", 0)] == round(1.5 * count[("c", 1)])
    frames = np.bincount(vid)
    assert frames.min() >= 4 and frames.max() <= 16
    assert truth["fpr"] > 0.2 and truth["auc"] < 0  # b is harder under the alternative
    res = group_gaps(y, s, g, vid, metrics=("fpr",), n_boot=50, n_perm=50)
    assert res.gaps["fpr"].favoured in ("a", "c") and res.gaps["fpr"].p_value < 0.05
