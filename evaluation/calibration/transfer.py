"""ACC lost to threshold transfer, with an interval clustered by video (issue 48, item 4): the
leaderboard's ``acc_lost`` cells.

``acc lost = ACC at the test set's own EER threshold - ACC at the given threshold`` (the run's
validation threshold where it has one), as ``tables/threshold_transfer``
(:func:`evaluation.calibration.section.threshold_transfer_rows`) defines it. The own EER
threshold is an oracle chosen on the test labels, so its own sampling noise belongs in the
interval: each bootstrap replicate draws the videos with replacement within class (``n - 1`` of
``n``, :func:`evaluation.confidence.stratified_multiplicities`), re-chooses the EER threshold on
the replicate (:class:`evaluation.confidence.UnitWeightedCurve`, exactly
:func:`evaluation.metrics.eer` on the repeated rows) and takes both ACCs from cumulative sums of
the rows sorted once (multiplicity weights, no rows copied). With several seeds (the same test
videos) a replicate draws the videos once for all seeds and takes the mean of their ACC lost:
the interval of the mean the cell shows, with the trained models held fixed. Percentile
interval; withheld under the small-group rule (fewer than 5 videos of a class).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fairforensics.evaluation.confidence import (
    UnitWeightedCurve,
    few_units_note,
    percentile_interval,
    stratified_multiplicities,
)
from fairforensics.evaluation.metrics import _rank, factorize, video_scores
from fairforensics.evaluation.predictions import Predictions


@dataclass(frozen=True)
class AccLost:
    """ACC lost (mean over seeds), ACC at the given threshold, their interval and why none."""

    value: float
    acc_given: float
    low: float = float("nan")
    high: float = float("nan")
    note: str = ""


class _Sorted:
    """One seed's rows sorted by score (highest first) with each row's video, for ACC at any
    threshold and the EER threshold under video multiplicities."""

    def __init__(self, y: np.ndarray, s: np.ndarray, videos: np.ndarray, n_videos: int) -> None:
        ranked = _rank(y, s)
        self.curve = UnitWeightedCurve(ranked, videos, n_videos)
        self.neg_scores = -s[ranked.order]  # ascending
        self.videos = videos[ranked.order]
        self.pos = ranked.pos

    def acc(self, weights: np.ndarray, thresholds: Sequence[float]) -> list[float]:
        """ACC (fake when score >= threshold) of the rows weighted by their video's weight."""
        w = weights[self.videos]
        called = np.cumsum(w)
        hits = np.cumsum(w * self.pos)
        n, n_fake = called[-1], hits[-1]
        out = []
        for t in thresholds:
            k = int(np.searchsorted(self.neg_scores, -t, side="right"))  # rows scored >= t
            tp, fake_calls = (hits[k - 1], called[k - 1]) if k else (0.0, 0.0)
            out.append(float((tp + (n - n_fake) - (fake_calls - tp)) / n))
        return out

    def acc_lost(self, weights: np.ndarray, threshold: float) -> tuple[float, float]:
        """(ACC lost, ACC at ``threshold``) with the EER threshold of the weighted rows."""
        own = self.curve.summary(weights, ())["eer_threshold"]
        given, at_own = self.acc(weights, (threshold, own))
        return at_own - given, given


def _level_rows(
    pred: Predictions, level: str, reduce: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels, scores and video keys at ``level`` (a video's score reduced as ``test`` does)."""
    if level == "frame":
        return pred.label, pred.score, np.asarray(pred.video_key, dtype=object)
    return video_scores(pred.label, pred.score, pred.video_key, reduce=reduce)


def acc_lost(
    preds: Sequence[Predictions],
    thresholds: Sequence[float],
    *,
    level: str = "frame",
    reduce: str = "mean",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> AccLost:
    """ACC lost of one detector on one test set, the mean over its seeds (each at its own
    threshold), with its interval (module docstring); ``n_boot`` 0: none. Seeded."""
    sorted_rows, keys = [], None
    for pred, t in zip(preds, thresholds, strict=True):
        y, s, key = _level_rows(pred, level, reduce)
        if len(np.unique(y)) < 2:
            raise ValueError("ACC lost needs both classes (an EER threshold)")
        codes, uniq = factorize(key)
        if keys is None:
            keys, label = uniq, np.zeros(len(uniq), dtype=np.int64)
            label[codes] = y
        elif not np.array_equal(uniq, keys):
            raise ValueError("the seeds' predictions hold different videos")
        sorted_rows.append((_Sorted(y, s, codes, len(keys)), float(t)))
    ones = np.ones(len(keys), dtype=np.int64)
    points = [rows.acc_lost(ones, t) for rows, t in sorted_rows]
    value, given = (float(np.mean(v)) for v in zip(*points, strict=True))
    counts = np.bincount(label, minlength=2)
    note = "; ".join(
        filter(None, (few_units_note(int(counts[c]), f"{w} videos") for c, w in enumerate(
            ("real", "fake"))))
    )  # fmt: skip
    if note or not n_boot:
        return AccLost(value, given, note=note or "intervals off")
    rng = np.random.default_rng(seed)
    replicates = [
        np.mean([rows.acc_lost(w, t)[0] for rows, t in sorted_rows])
        for block in stratified_multiplicities(rng, label, n_boot)
        for w in block
    ]
    low, high = percentile_interval(np.asarray(replicates), confidence)
    return AccLost(value, given, low, high)
