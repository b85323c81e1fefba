"""Issue 47, same answers of the faster statistics at scale: the permutation test's per-group
AUC/EER from rows ranked once (:class:`evaluation.sorted_subsets.SortedSubsets`), the bootstrap
curve of the weighted rows (:class:`evaluation.confidence.UnitWeightedCurve`), and the
calibration and threshold-transfer sections on integer video codes. Each is compared with the
computation it replaced on the seeded synthetic sets of ``tests/stats_reference.py`` (with and
without tied scores): bit for bit, except the bootstrap AP (within 1e-15, summed over the fakes
rather than the thresholds)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairforensics.evaluation.calibration.metrics import calibration_summary
from fairforensics.evaluation.calibration.run import calibration_rows, level_codes, level_scores
from fairforensics.evaluation.calibration.section import threshold_transfer_rows
from fairforensics.evaluation.confidence import (
    UnitWeightedCurve,
    eer_of_counts,
    proportion_interval,
    weighted_ranking_metrics,
)
from fairforensics.evaluation.metrics import _rank, _summarize, eer, video_scores
from fairforensics.evaluation.predictions import Predictions
from fairforensics.evaluation.sorted_subsets import SortedSubsets
from tests.stats_reference import synthetic

SETS = [(seed, ties) for seed in (0, 1, 2) for ties in (False, True)]


def reference_auc_eer(scores: np.ndarray, positive: np.ndarray) -> tuple[float, float]:
    """The per-subset AUC/EER before (``confidence.sorted_subset_auc_eer``): rows given in
    descending score order, tie blocks found by comparing the scores."""
    if not len(scores):
        return float("nan"), float("nan")
    last = np.flatnonzero(np.r_[scores[1:] != scores[:-1], True])
    cum = np.cumsum(positive)
    tps = cum[last]
    fps = last + 1 - tps
    if tps[-1] <= 0 or fps[-1] <= 0:
        return float("nan"), float("nan")
    d_fp = np.diff(fps, prepend=0)
    both = tps + np.r_[0, tps[:-1]]
    auc = float(int(np.dot(d_fp, both)) / (2 * int(tps[-1]) * int(fps[-1])))
    return auc, eer_of_counts(cum, None, last)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize(("seed", "ties"), SETS)
def test_sorted_subsets_give_the_reference_numbers(seed: int, ties: bool) -> None:
    y, s, *_ = synthetic(seed, ties=ties)
    order = np.argsort(s, kind="stable")[::-1]
    scores, positive = s[order], y[order].astype(np.int64)
    subsets = SortedSubsets(scores, positive)
    rng = np.random.default_rng(seed)
    for n_groups in (2, 3, 5):
        row_group = rng.integers(0, n_groups, len(y)).astype(np.uint8)
        for g in range(n_groups + 1):  # the last group is empty
            rows = row_group == g
            got = subsets.auc_eer(row_group, g)
            want = reference_auc_eer(scores[rows], positive[rows])
            assert all(map(_same, got, want)), (n_groups, g, got, want)
            if rows.any() and np.isfinite(got[0]):  # and the 0/1 weighting of all rows
                weighted = weighted_ranking_metrics(positive, scores, [rows.astype(float)])
                assert got[1] == weighted["eer"][0]
                assert got[0] == pytest.approx(weighted["auc"][0], abs=1e-15)
    one_class = np.where(positive == 1, 0, 1).astype(np.uint8)  # group 0: the fakes only
    assert all(map(math.isnan, subsets.auc_eer(one_class, 0)))


def test_sorted_subsets_need_descending_scores() -> None:
    with pytest.raises(ValueError, match="descending"):
        SortedSubsets(np.array([0.1, 0.5]), np.array([0, 1]))


@pytest.mark.parametrize(("seed", "ties"), SETS)
def test_bootstrap_curve_equals_the_weighted_rows(seed: int, ties: bool) -> None:
    y, s, *_, units, _ = synthetic(seed, ties=ties)
    codes = np.unique(units, return_inverse=True)[1]
    n_units = int(codes.max()) + 1
    ranked = _rank(y, s, 0.5)
    curve = UnitWeightedCurve(ranked, codes, n_units)
    rng = np.random.default_rng(seed)
    targets = (0.01, 0.1, 0.5)
    for b in range(30):
        counts = np.bincount(rng.integers(0, n_units, n_units), minlength=n_units)
        if b % 5 == 4:  # whole stretches of the curve undrawn
            counts[rng.integers(0, n_units, n_units // 2)] = 0
        if b == 3:  # one class only: ranking metrics undefined
            counts[np.unique(codes[y == 1])] = 0
        got = curve.summary(counts, targets)
        want = _summarize(ranked, counts[codes].astype(np.float64), targets)
        assert set(got) == set(want)
        for key, value in want.items():
            if key in ("auc", "ap"):
                assert got[key] == pytest.approx(value, rel=1e-15, abs=1e-15, nan_ok=True)
            else:
                assert _same(got[key], value), (b, key, got[key], value)
        assert _same(curve.eer(counts), want["eer"])


def _predictions(seed: int) -> Predictions:
    y, s, gender, _, units, method = synthetic(seed, n_videos=60, frames=5)
    return Predictions(
        dataset=np.full(len(y), "syn"), video_id=units.astype(str), frame=np.zeros(len(y), int),
        label=y, score=s, method=method.astype(str),
    )  # fmt: skip


def test_level_codes_order_videos_as_their_keys() -> None:
    pred = _predictions(0)
    codes, keys = pred.video_codes()
    y, s, frame_codes = level_codes(pred, "frame")
    assert np.array_equal(keys[frame_codes], pred.video_key)
    vy, vs, vcodes = level_codes(pred, "video")
    want = video_scores(pred.label, pred.score, pred.video_key, reduce="mean")
    assert np.array_equal(vy, want[0]) and np.array_equal(vs, want[1])
    assert np.array_equal(keys[vcodes], want[2])
    assert np.array_equal(level_scores(pred, "video")[2], want[2])
    assert np.array_equal(level_scores(pred, "frame")[2], pred.video_key)


def _reference_transfer(pred: Predictions, threshold: float, level: str) -> dict:
    """The threshold-transfer figures before: intervals clustered by the video keys."""
    if level == "frame":
        y, s, units = pred.label, pred.score, pred.video_key
    else:
        y, s, units = video_scores(pred.label, pred.score, pred.video_key, reduce="mean")
    out = {}
    for t, tag in ((threshold, "given"), (eer(y, s)[1], "own EER")):
        fake = s >= t
        for name, events, rows in (
            ("fpr", fake, y == 0),
            ("fnr", ~fake, y == 1),
            ("acc", fake == (y == 1), np.ones(len(y), bool)),
        ):
            out[f"{name} ({tag})"] = float(events[rows].mean())
            low, high = proportion_interval(events[rows], units[rows])
            out[f"{name}_low ({tag})"], out[f"{name}_high ({tag})"] = low, high
    out["n_real_videos"] = len(np.unique(units[y == 0]))
    out["n_fake_videos"] = len(np.unique(units[y == 1]))
    return out


@pytest.mark.parametrize("level", ["frame", "video"])
def test_calibration_sections_on_codes_equal_those_on_keys(level: str) -> None:
    pred = _predictions(1)
    row = threshold_transfer_rows(pred, "syn", 0.5, "default", level)
    for key, value in _reference_transfer(pred, 0.5, level).items():
        assert row[key] == value, key
    (got,) = [r for r in calibration_rows(pred, "syn", n_boot=200) if r["level"] == level]
    y, s, units = level_scores(pred, level)  # the video keys, as the rows were computed before
    want = calibration_summary(y, s, units, n_boot=200)
    assert {k: got[k] for k in want} == want


def test_sorted_subsets_by_hand() -> None:
    """AUCs counted pair by pair: a first tie block holding both classes (its trapezoid from
    the origin), subsets of one fake and one real, and subsets of one class."""
    scores = np.array([0.9, 0.9, 0.5, 0.1, 0.1])
    positive = np.array([1, 0, 1, 0, 1])
    subsets = SortedSubsets(scores, positive)
    # fakes 0.9, 0.5, 0.1 against reals 0.9, 0.1: 1/2 + 1 + 0 + 1 + 0 + 1/2 = 3 of 6 pairs
    assert subsets.auc_eer(np.zeros(5, dtype=np.uint8), 0)[0] == 0.5
    row_group = np.array([0, 0, 1, 1, 2], dtype=np.uint8)
    assert subsets.auc_eer(row_group, 0) == (0.5, reference_auc_eer(scores[:2], positive[:2])[1])
    assert subsets.auc_eer(row_group, 1) == (1.0, 0.0)  # one fake above one real
    assert all(map(math.isnan, subsets.auc_eer(row_group, 2)))  # a fake alone
    reals = np.array([1, 0, 1, 0, 1], dtype=np.uint8)  # group 0: the reals only
    assert all(map(math.isnan, subsets.auc_eer(reals, 0)))
    again = SortedSubsets(scores, positive)  # fresh buffers give the same numbers
    for g in (0, 1):
        assert again.auc_eer(row_group, g) == subsets.auc_eer(row_group, g)


def test_sorted_subsets_refuse_unsorted_scores_and_lengths() -> None:
    with pytest.raises(ValueError, match="^scores must be sorted in descending order$"):
        SortedSubsets(np.array([0.9, 0.1, 0.5]), np.array([0, 1, 0]))  # not below the first
    with pytest.raises(ValueError, match="^scores and positive must have one entry per row$"):
        SortedSubsets(np.array([0.9, 0.5]), np.array([0, 1, 0]))
