"""ACC lost to threshold transfer, with an interval clustered by video (issue 48, item 4): the
leaderboard's ``acc_lost`` cells.

``acc lost = ACC at the test set's own EER threshold - ACC at the given threshold`` (the run's
validation threshold where it has one), as ``tables/threshold_transfer``
(:func:`evaluation.calibration.section.threshold_transfer_rows`) defines it. The own EER
threshold is an oracle chosen on the test labels, so its own sampling noise belongs in the
interval: each bootstrap replicate draws the videos with replacement within class (``n - 1`` of
``n``, :func:`evaluation.confidence.stratified_multiplicities`), re-chooses the EER threshold on
the replicate (:class:`evaluation.confidence.UnitWeightedCurve`, exactly
:func:`evaluation.metrics.eer` on the repeated rows) and takes both ACCs at it and at the given
threshold (multiplicity weights, no rows copied): exactly the values of all the rows sorted once,
but not O(rows) a replicate (issue 47). Each ACC comes from per-video counts of the rows above
its threshold, the EER crossing from the rows of a window around the full sample's
(:class:`_Window`) plus per-video counts above it; a replicate whose crossing is not inside
takes the full computation. With several seeds (the same test videos) a replicate draws the
videos once for all seeds and takes the mean of their ACC lost:
the interval of the mean the cell shows, with the trained models held fixed. Percentile
interval; withheld under the small-group rule (fewer than 5 videos of a class).
"""

from __future__ import annotations

import math
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
        self.thr, self.last = ranked.thr, ranked.last
        self.n_videos = n_videos
        self.window: _Window | None = None

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
        """(ACC lost, ACC at ``threshold``) with the EER threshold of the weighted rows: the
        reference, O(rows), and the fallback of :meth:`replicates`."""
        own = self.curve.summary(weights, ())["eer_threshold"]
        given, at_own = self.acc(weights, (threshold, own))
        return at_own - given, given

    def counts_above(self, k: int) -> np.ndarray:
        """Per video: its rows and its fake rows among the ``k`` highest scored, ``[n, 2]``."""
        v, n = self.videos[:k], self.n_videos
        fakes = np.bincount(v, weights=self.pos[:k], minlength=n)
        return np.stack([np.bincount(v, minlength=n), fakes.astype(np.int64)], axis=1)

    def replicates(self, block: np.ndarray, threshold: float) -> np.ndarray:
        """ACC lost of each row of ``block`` (video multiplicities), exactly :meth:`acc_lost`'s:
        both ACCs from per-video counts (O(videos)), the EER threshold from the rows of a
        window around the full sample's (:class:`_Window`), else :meth:`acc_lost`."""
        if self.window is None:
            own = self.curve.summary(np.ones(self.n_videos, dtype=np.int64), ())["eer_threshold"]
            # a replicate's crossing moves by about rows / sqrt(videos) (clustered sampling)
            half = 4 * len(self.videos) // max(1, math.isqrt(self.n_videos))
            self.window = _Window(self, self._row(own), max(64, half))
        k = self._row(threshold)
        totals = block @ np.hstack([self.counts_above(len(self.videos)), self.counts_above(k)])
        n, n_fake, calls, tp = totals.T
        given = (tp + (n - n_fake) - (calls - tp)) / n
        out = np.empty(len(block))
        for r, weights in enumerate(block):
            found = self.window.eer_acc(weights, int(n[r]), int(n_fake[r]))
            if found is None:
                out[r] = self.acc_lost(weights, threshold)[0]
                if self.window.widen():
                    self.window = _Window(self, self.window.center, 2 * self.window.half)
            else:
                out[r] = found[1] - float(given[r])
        return out

    def _row(self, threshold: float) -> int:
        """How many rows score >= ``threshold``."""
        return int(np.searchsorted(self.neg_scores, -threshold, side="right"))


class _Window:
    """The distinct scores ``a..b-1`` of :class:`_Sorted` around a row, the rows of their tie
    blocks and each video's counts above them: a replicate's EER threshold and the ACC there
    from these rows alone, when its EER crossing lies strictly inside (else None)."""

    def __init__(self, rows: _Sorted, center: int, half: int) -> None:
        self.rows, self.center, self.half = rows, center, half
        self.tried = self.misses = 0
        last = rows.last
        self.a = max(1, int(np.searchsorted(last, center - half)))
        self.b = min(len(last), int(np.searchsorted(last, center + half)) + 1)
        self.start = int(last[self.a - 1]) + 1
        self.end = int(last[self.b - 1]) + 1 if self.b > self.a else self.start
        self.above = rows.counts_above(self.start)
        self.videos = rows.videos[self.start : self.end]
        self.pos = rows.pos[self.start : self.end].astype(np.int64)
        self.ends = last[self.a : self.b] - self.start  # each distinct score's last row

    def widen(self) -> bool:
        """Count a replicate it could not tell: whether to double the width (more than 1 in
        20 of them, and the window is not all the rows yet)."""
        self.misses += 1
        whole = self.a == 1 and self.b == len(self.rows.last)
        return not whole and self.misses * 20 > max(self.tried, 20)

    def eer_acc(self, weights: np.ndarray, n: int, n_fake: int) -> tuple[float, float] | None:
        """The replicate's EER threshold (``UnitWeightedCurve.summary``'s, bit for bit) and the
        ACC there, given its total and fake rows; None when the window cannot tell."""
        self.tried += 1
        n_real = n - n_fake
        base_all, base_fake = (int(x) for x in weights @ self.above)
        if n_fake <= 0 or n_real <= 0 or base_all <= 0 or self.b <= self.a:
            return None
        w = weights.take(self.videos)
        called, hits = np.cumsum(w), np.cumsum(w * self.pos)
        tot, tps = base_all + called[self.ends], base_fake + hits[self.ends]
        # (1 - TPR) - FPR of the points a+1..b (_eer_point); it never increases, so a crossing
        # at the first of them may lie above the window
        d = (1.0 - tps / n_fake) - (tot - tps) / n_real
        i = int(np.argmax(d <= 0))
        if d[i] > 0 or i == 0:
            return None
        thr = self.rows.thr[self.a :]
        if d[i] == 0:
            own = float(thr[i])
        else:
            d0, d1 = float(d[i - 1]), float(d[i])
            weight = d0 / (d0 - d1)
            k = int(np.searchsorted(tot, tot[i - 1]))  # the first score with point j-1's counts
            if k == 0 and base_all == tot[0]:
                return None
            t0 = float(thr[k])
            own = t0 + weight * (float(thr[i]) - t0)
        k = self.rows._row(own) - self.start
        if not 0 <= k <= len(w):
            return None
        tp = base_fake + (int(hits[k - 1]) if k else 0)
        calls = base_all + (int(called[k - 1]) if k else 0)
        return own, float((tp + n_real - (calls - tp)) / n)


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
        np.mean(list(seeds))
        for block in stratified_multiplicities(rng, label, n_boot)
        for seeds in zip(*(rows.replicates(block, t) for rows, t in sorted_rows), strict=True)
    ]
    low, high = percentile_interval(np.asarray(replicates), confidence)
    return AccLost(value, given, low, high)
