"""Calibration within groups (issue 48, item 3): per-group ECE against an independent loop, the
signed gap and its joint interval, the small-group rule, the report's and the fairness board's
columns, and a small seeded coverage simulation with exact binomial bounds."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from fairforensics.benchmarks.fairness_board import fairness_table
from fairforensics.benchmarks.group_calibration_coverage import (
    Scenario,
    coverage,
    population_ece,
)
from fairforensics.evaluation.confidence import stratified_multiplicities
from fairforensics.evaluation.leaderboard import Entry
from fairforensics.evaluation.predictions import Predictions
from fairforensics.fairness.group_calibration import group_calibration
from fairforensics.fairness.report import (
    ReportConfig,
    fairness_report,
    format_summary,
    write_report,
)


def ece_by_loop(y, s, n_bins=15):
    """An independent ECE: a plain loop over equal-width bins (the last one closed)."""
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        inside = [(yi, si) for yi, si in zip(y, s, strict=True)
                  if lo <= si < hi or (b == n_bins - 1 and si == 1)]  # fmt: skip
        if inside:
            share = sum(yi for yi, _ in inside) / len(inside)
            conf = sum(si for _, si in inside) / len(inside)
            total += len(inside) / len(y) * abs(share - conf)
    return total


def _videos(rng, groups, scale, frames=4):
    """Frames of videos ``[(group, label), ...]``: a video effect on the logit; group ``g``'s
    scores over-confident by ``scale[g]`` (1: calibrated at frame level with equal classes)."""
    y, s, g, vid = [], [], [], []
    for v, (group, label) in enumerate(groups):
        z = (2 * label - 1) * 1.0 + rng.normal(0, 0.8) + rng.normal(0, 0.5, frames)
        y += [label] * frames
        s += list(1 / (1 + np.exp(-scale[group] * z * 2 / 0.89)))  # log-odds 2z/v
        g += [group] * frames
        vid += [f"v{v}"] * frames
    return np.array(y), np.array(s), np.array(g, dtype=object), np.array(vid, dtype=object)


def test_hand_case_and_independent_loop():
    # a: two bins, gaps 0.15 and 0.35 -> 0.25; b: one bin of mean 0.8, all fake -> 0.2
    y = [0, 0, 1, 0, 1, 1]
    s = [0.1, 0.2, 0.8, 0.9, 0.9, 0.7]
    g = ["a"] * 4 + ["b"] * 2
    res = group_calibration(y, s, g, n_bins=2, n_boot=0)
    assert res.ece == pytest.approx({"a": 0.25, "b": 0.2})
    assert (res.gap.group_a, res.gap.group_b) == ("a", "b")
    assert res.gap.diff == pytest.approx(0.05) and "a: fewer than 5 real videos (3)" in res.gap.note
    rng = np.random.default_rng(3)
    y, s, g, vid = _videos(rng, [(k, v % 2) for v, k in enumerate("abc" * 10)],
                           {"a": 1.0, "b": 2.0, "c": 0.6})  # fmt: skip
    res = group_calibration(y, s, g, vid, n_boot=50)
    for name in "abc":
        assert res.ece[name] == pytest.approx(ece_by_loop(y[g == name], s[g == name]), abs=1e-12)
    # the gap is between the groups furthest apart, a - b in sorted order
    lo, hi = min(res.ece, key=res.ece.get), max(res.ece, key=res.ece.get)
    a, b = sorted((lo, hi))
    assert (res.gap.group_a, res.gap.group_b) == (a, b)
    assert res.gap.diff == pytest.approx(res.ece[a] - res.ece[b])


def test_gap_sign_and_joint_interval():
    rng = np.random.default_rng(0)
    design = [(k, v // 2 % 2) for v, k in enumerate("ab" * 80)]
    y, s, g, vid = _videos(rng, design, {"a": 1.0, "b": 4.0})  # b over-confident
    res = group_calibration(y, s, g, vid, n_boot=400, seed=1)
    gap = res.gap
    assert gap.diff < 0 and gap.low <= gap.diff <= gap.high and gap.high < 0
    # the interval of the difference, not two intervals side by side: narrower than the
    # difference of the ends of the groups' intervals
    (la, ha), (lb, hb) = res.ci["a"], res.ci["b"]
    assert gap.high - gap.low < 0.85 * ((ha - lb) - (la - hb))
    again = group_calibration(y, s, g, vid, n_boot=400, seed=1)
    assert again.gap == gap  # seeded


def test_small_group_rule():
    rng = np.random.default_rng(1)
    design = [("a", v % 2) for v in range(20)] + [("b", 0)] * 3 + [("b", 1)] * 8
    design += [("c", 1)]  # one video: under min_group_size, reported, not ranked
    y, s, g, vid = _videos(rng, design, {"a": 1.0, "b": 1.0, "c": 1.0})
    res = group_calibration(y, s, g, vid, n_boot=100, min_group_size=5)
    assert res.ranked == ["a", "b"] and "c" in res.ece
    assert res.notes["b"] == "fewer than 5 real videos (3)"
    assert np.isnan(res.ci["b"]).all() and np.isfinite(res.ci["a"]).all()
    assert (res.gap.group_a, res.gap.group_b) == ("a", "b") and np.isnan(res.gap.low)
    assert res.gap.note == "b: fewer than 5 real videos (3)"
    with pytest.raises(ValueError, match="two groups of >= 50 rows"):
        group_calibration(y, s, g, vid, min_group_size=50)


def _predictions(seed=0):
    rng = np.random.default_rng(seed)
    design = [(k, v // 2 % 2) for v, k in enumerate(["female", "male"] * 12)]
    y, s, g, vid = _videos(rng, design, {"female": 2.5, "male": 1.0}, frames=3)
    return Predictions(
        dataset=["d"] * len(y), video_id=list(vid), frame=np.tile(np.arange(3), len(design)),
        label=y, score=s, method=np.where(y == 1, "DF", "real"), attributes={"gender": list(g)},
    )  # fmt: skip


def test_report_columns_summary_and_table(tmp_path):
    pred = _predictions()
    cfg = ReportConfig(bootstrap=100, permutations=0, curve_bootstrap=0, figures=False)
    reports = fairness_report(pred, ["gender"], cfg)
    cal = reports["gender"].calibration
    female = pred.attributes["gender"] == "female"
    assert cal.ece["female"] == pytest.approx(ece_by_loop(pred.label[female], pred.score[female]))
    write_report(reports, tmp_path, figures=False)
    with (tmp_path / "group_metrics.csv").open(newline="") as fh:
        rows = {r["group"]: r for r in csv.DictReader(fh)}
    low, value, high = (float(rows["female"][k]) for k in ("ece_low", "ece", "ece_high"))
    assert low <= value <= high and value == pytest.approx(cal.ece["female"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    summary = summary["rows"][0] if isinstance(summary, dict) else summary[0]
    assert summary["ece_gap"] == pytest.approx(cal.gap.diff)
    assert summary["ece_gap_low"] <= summary["ece_gap"] <= summary["ece_gap_high"]
    assert summary["ece_gap_of"] == "female - male"
    table = (tmp_path / "calibration_gaps.csv").read_text()
    assert "group_a,group_b" in table and "female,male" in table
    assert {p.suffix for p in tmp_path.glob("calibration_gaps.*")} == {".csv", ".md", ".json"}
    assert "ECE (15 bins): female" in format_summary(reports)
    video = fairness_report(pred, ["gender"], ReportConfig(level="video", bootstrap=0,
                            permutations=0, curve_bootstrap=0))["gender"]  # fmt: skip
    assert video.calibration.gap.note == "intervals off"
    assert video.groups["male"]["ece"] != pytest.approx(cal.ece["male"])  # video scores


def test_fairness_board_ece_gap_column():
    pred = _predictions(1)
    entry = Entry("xception", "d", "d", [pred], thresholds=[0.5], chosen_by=["default"])
    table = fairness_table([entry], "d", "gender", n_boot=100)
    record = table.records()[0]
    j = table.columns.index("ECE gap")
    assert j == table.columns.index("FNR gap") + 1
    assert record["ECE gap"] == pytest.approx(
        group_calibration(
            pred.label, pred.score, pred.attributes["gender"], pred.video_key, n_boot=0
        ).gap.diff
    )
    info = table.details[(0, j)]
    assert info["low"] <= record["ECE gap"] <= info["high"]


def test_population_ece_and_coverage_smoke():
    """A small version of ``scripts/bench_group_calibration.py --coverage``: the gap's interval
    covers the true gap, under the null (0) and the alternative (one group over-confident),
    within exact binomial bounds of a rate that is not far below 95 %."""
    sc = Scenario()
    assert population_ece(sc, 1.0) == pytest.approx(0.0, abs=1e-9)  # calibrated: ECE 0
    assert population_ece(sc, 3.0) > population_ece(sc, 1.5) > 0.03
    res = coverage(sc, 120, n_boot=150, seed=0)
    null, alt = res["null"], res["alternative"]
    assert null["true_gap"] == 0 and alt["true_gap"] < -0.03
    assert null["cover"]["high"] >= 0.93 and alt["cover"]["high"] >= 0.88
    assert null["excludes_0"]["low"] <= 0.05  # the false alarm rate is not above 5 %
    assert alt["excludes_0"]["rate"] > null["excludes_0"]["rate"]  # some power


def _reference_intervals(y, s, g, vid, n_boot, seed, confidence, n_bins=15):
    """Per group the basic interval of the ECE (clipped at 0), and that of ``ECE_a - ECE_b``
    at the Bonferroni confidence of the ranked pairs, from replicates built by hand: the
    multiplicities of :func:`stratified_multiplicities` over the videos (sorted, each one
    group and class) stratified by group x class, each group's ECE by the plain loop on the
    rows repeated by their video's multiplicity."""
    names = sorted(set(g))
    videos = sorted(set(vid))
    video_of = {v: i for i, v in enumerate(videos)}
    strata = np.zeros(len(videos), dtype=np.int64)
    for gi, yi, vi in zip(g, y, vid, strict=True):
        strata[video_of[vi]] = names.index(gi) * 2 + yi
    rows = np.array([video_of[v] for v in vid])
    reps = {name: [] for name in names}
    rng = np.random.default_rng(seed)
    for block in stratified_multiplicities(rng, strata, n_boot):
        for weights in block:
            times = weights[rows]
            for name in names:
                keep = g == name
                ys, ss = np.repeat(y[keep], times[keep]), np.repeat(s[keep], times[keep])
                reps[name].append(ece_by_loop(ys, ss, n_bins))
    point = {name: ece_by_loop(y[g == name], s[g == name], n_bins) for name in names}

    def basic(x, r, conf):
        alpha = (1 - conf) / 2
        q_lo, q_hi = np.quantile(r, [alpha, 1 - alpha])
        return 2 * x - q_hi, 2 * x - q_lo

    ci = {}
    for name in names:
        low, high = basic(point[name], np.array(reps[name]), confidence)
        ci[name] = (max(0.0, low), max(0.0, high))
    ordered = sorted(names, key=lambda k: (point[k], k))
    a, b = sorted((ordered[0], ordered[-1]))
    pairs = len(names) * (len(names) - 1) // 2
    diff_reps = np.array(reps[a]) - np.array(reps[b])
    gap = basic(point[a] - point[b], diff_reps, 1 - (1 - confidence) / pairs)
    return ci, (a, b), gap


@pytest.mark.parametrize(("n_groups", "confidence"), [(3, 0.9), (4, 0.95)])
def test_intervals_equal_a_reference_bootstrap_by_loop(n_groups, confidence):
    """Each group's interval and the gap's, simultaneous over the ranked pairs (Bonferroni:
    3 pairs of 3 groups, 6 of 4), equal those of a bootstrap written out by hand."""
    rng = np.random.default_rng(11)
    names = "abcd"[:n_groups]
    design = [(k, v // n_groups % 2) for v, k in enumerate(names * 12)]
    scale = {"a": 1.0, "b": 3.0, "c": 0.5, "d": 2.0}
    y, s, g, vid = _videos(rng, design, scale, frames=2)
    res = group_calibration(y, s, g, vid, n_boot=60, seed=4, confidence=confidence)
    ci, ends, gap = _reference_intervals(y, s, g, vid, 60, 4, confidence)
    assert (res.gap.group_a, res.gap.group_b) == ends
    assert (res.gap.ece_a, res.gap.ece_b) == (res.ece[ends[0]], res.ece[ends[1]])
    assert (res.gap.low, res.gap.high) == pytest.approx(gap, abs=1e-12)
    for name in names:
        assert res.ci[name] == pytest.approx(ci[name], abs=1e-12)
        assert 0 <= res.ci[name][0] < res.ci[name][1] < 1
    assert (res.groups, res.ranked) == (list(names), list(names))
    assert (res.n_bins, res.n_boot, res.confidence) == (15, 60, confidence)
    assert res.as_dict()["gap"]["diff"] == res.gap.diff


def test_gap_fields_without_an_interval_and_notes_of_both_ends():
    # the hand case of test_hand_case_and_independent_loop, a's class counts short
    y = [0, 0, 1, 0, 1, 1]
    s = [0.1, 0.2, 0.8, 0.9, 0.9, 0.7]
    g = ["a"] * 4 + ["b"] * 2
    for n_boot in (0, 20):  # intervals off, and on but withheld
        gap = group_calibration(y, s, g, n_boot=n_boot, n_bins=2).gap
        assert (gap.ece_a, gap.ece_b, gap.diff) == pytest.approx((0.25, 0.2, 0.05))
        assert np.isnan(gap.low) and np.isnan(gap.high)
        assert gap.note == (
            "a: fewer than 5 real videos (3); fewer than 5 fake videos (1); "
            "b: fewer than 5 real videos (0); fewer than 5 fake videos (2)"
        )
    # both classes short in a, and the group's own threshold of units
    res = group_calibration(y, s, g, n_bins=2, n_boot=20, min_units=3)
    assert res.notes == {"a": "fewer than 3 fake videos (1)",
                         "b": "fewer than 3 real videos (0); fewer than 3 fake videos (2)"}  # fmt: skip
    # a group of real rows only: its fake count is 0, not an index error
    res = group_calibration([0, 0, 0, 0, 1], [0.1, 0.2, 0.3, 0.4, 0.9], list("aaaab"), n_boot=0)
    assert res.notes["a"] == "fewer than 5 real videos (4); fewer than 5 fake videos (0)"
    # one bin: ECE = |share of fakes - mean score| of the group
    res = group_calibration(y, s, g, n_bins=1, n_boot=0)
    assert res.ece == pytest.approx({"a": abs(0.25 - 0.5), "b": abs(1 - 0.8)})


def test_arguments_defaults_and_refusals():
    rng = np.random.default_rng(2)
    design = [(k, v // 2 % 2) for v, k in enumerate("ab" * 10)] + [("c", 1)]
    y, s, g, vid = _videos(rng, design, {"a": 1.0, "b": 2.0, "c": 1.0}, frames=2)
    res = group_calibration(y, s, g, vid)
    explicit = group_calibration(y, s, g, vid, n_boot=1000, seed=0, min_group_size=1)
    np.testing.assert_equal(res.as_dict(), explicit.as_dict())  # NaN equal to NaN
    assert res.n_boot == 1000 and res.ranked == ["a", "b", "c"]  # c's 2 rows are ranked
    assert group_calibration(y, s, g, vid, n_boot=0, min_group_size=2).ranked == ["a", "b", "c"]
    assert group_calibration(y, s, g, vid, n_boot=0, min_group_size=3).ranked == ["a", "b"]
    assert group_calibration(y, s, g, vid, n_boot=0, min_units=2).notes["c"] == (
        "fewer than 2 real videos (0); fewer than 2 fake videos (1)"
    )
    for bad, message in [({"n_bins": 0}, r"^n_bins must be >= 1, got 0$"),
                         ({"n_boot": -1}, r"^n_boot must be >= 0, got -1$"),
                         ({"confidence": 0.0}, r"^confidence must be in \(0, 1\), got 0.0$"),
                         ({"confidence": 1.0}, r"^confidence must be in \(0, 1\), got 1.0$"),
                         ({"confidence": 1.5}, r"^confidence must be in \(0, 1\), got 1.5$")]:  # fmt: skip
        with pytest.raises(ValueError, match=message):
            group_calibration(y, s, g, vid, **bad)
    with pytest.raises(ValueError, match=r"^min_units must be >= 2 .*got 1$"):
        group_calibration(y, s, g, vid, min_units=1)
    with pytest.raises(ValueError, match=r"^units must have one entry per sample \(42\), got 3$"):
        group_calibration(y, s, g, vid[:3])
    with pytest.raises(ValueError, match=r"sizes \{'a': 20, 'b': 20, 'c': 2\}$"):
        group_calibration(y, s, g, vid, min_group_size=21)
