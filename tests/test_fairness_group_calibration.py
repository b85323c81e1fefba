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
    for bad, says in [({"n_bins": 0}, "n_bins must be >= 1, got 0"),
                      ({"n_boot": -1}, "n_boot must be >= 0, got -1"),
                      ({"confidence": 1.0}, r"confidence must be in \(0, 1\), got 1.0"),
                      ({"min_units": 1}, "min_units must be >= 2")]:  # fmt: skip
        with pytest.raises(ValueError, match=says):
            group_calibration(y, s, g, vid, **bad)


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
