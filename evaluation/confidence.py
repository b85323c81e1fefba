"""Uncertainty of the metrics: bootstrap confidence intervals over videos, and DeLong's test.

Bootstrap (Efron & Tibshirani, percentile method): frames of one video are correlated, so a
replicate resamples *videos* with replacement and keeps all frames of each drawn video. A
replicate is a weighting of the frames by their video's multiplicity, so the scores are sorted
once and each replicate costs one pass (exactly equal to concatenating the drawn videos).
Replicates that draw a single class give NaN ranking metrics and are left out of that metric's
interval (its note says how many); with fewer than 5 videos of a needed class, or more than half
of the replicates undefined, the interval itself is undefined and its note says why.

DeLong, DeLong & Clarke-Pearson (Biometrics 1988) compare two correlated AUCs measured on the same
samples; the covariance uses the fast mid-rank algorithm of Sun & Xu (IEEE SPL 2014).

Shared helpers for clustered resampling elsewhere (fairness gaps): :func:`bootstrap_multiplicities`
(vectorised draws of units), :func:`weighted_ranking_metrics` (AUC/EER of many weightings from
one sort), :func:`percentile_interval`, and McNemar's exact test of paired before/after outcomes
(:func:`mcnemar_exact`).

Proportions (accuracy, precision, recall, error rates, flip and violation rates) get Wilson score
intervals on the effective number of trials (:func:`clustered_wilson`, :func:`proportion_interval`)
rather than bootstrap ones: a percentile bootstrap of a share that is 100 % on the sample
resamples to 100 % every time, the zero-width ``100.0 [100.0, 100.0]``.

One small-group rule for every interval shown (here, in :mod:`fairness.gaps`, the paired changes
of :mod:`fairness.paired` and the metamorphic tables): none is shown for a quantity measured on
fewer than :data:`MIN_INTERVAL_UNITS` units (videos; a face without a video is its own unit) of
what it counts, and the note of :func:`few_units_note` says why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from fairforensics.evaluation.metrics import (
    SingleClassError,
    _count_summary,
    _need_both,
    _rank,
    _Ranked,
    _ranking_keys,
    _summarize,
    check_scores,
    factorize,
    reduce_by_code,
)


@dataclass(frozen=True)
class Interval:
    """A point estimate and its bootstrap confidence interval; ``note`` says why the interval
    is undefined (NaN) or how many replicates were left out, ``n_undefined`` counts those."""

    value: float
    low: float
    high: float
    n_undefined: int = 0
    note: str = ""

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


#: Fewest units (videos) of what a quantity counts for its interval to be shown.
MIN_INTERVAL_UNITS = 5


def check_interval_settings(n_boot: int, confidence: float, min_units: int) -> None:
    """A clear error for settings of the fairness intervals that none can use: negative
    replicates, a confidence outside (0, 1), or ``min_units`` below 2 (an interval needs
    variation)."""
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if min_units < 2:
        raise ValueError(f"min_units must be >= 2 (an interval needs variation), got {min_units}")


def too_few_units(n_units: int, min_units: int = MIN_INTERVAL_UNITS) -> bool:
    """The small-group rule: no interval is shown for a quantity on fewer than ``min_units``
    units (videos) of what it counts."""
    return n_units < min_units


def few_units_note(n_units: int, what: str, min_units: int = MIN_INTERVAL_UNITS) -> str:
    """Why :func:`too_few_units` hides an interval (``"fewer than 5 real videos (3)"``), or
    ``""`` when it is shown."""
    return f"fewer than {min_units} {what} ({n_units})" if too_few_units(n_units, min_units) else ""


#: Classes each metric of :func:`evaluation.metrics.summarize` needs (0 real, 1 fake);
#: ACC needs videos of any class.
_NEEDS = {"acc": (), "recall": (1,)}


def bootstrap_ci(
    y_true: Sequence,
    y_score: Sequence,
    video_ids: Sequence,
    *,
    level: str = "frame",
    reduce: str = "mean",
    threshold: float = 0.5,
    fpr_targets: Sequence[float] = (0.01, 0.1),
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    min_units: int = MIN_INTERVAL_UNITS,
) -> dict[str, Interval]:
    """Intervals of every :func:`evaluation.metrics.summarize` metric: Wilson score intervals
    of the proportions (ACC, precision, recall) on the effective number of frames or videos
    (:func:`clustered_wilson`), percentile bootstrap intervals of the others.

    ``level="frame"`` scores frames, ``"video"`` scores videos (frame scores reduced with
    ``reduce``); either way the resampling unit is the video (``video_ids``, unique across
    datasets and methods). Seeded: the same inputs give the same intervals.

    Undefined rather than misleading: an interval is NaN, with the reason in ``note``, when the
    data hold fewer than ``min_units`` videos of a class the metric needs (ACC: of all videos;
    recall: fakes; the rest: both classes; :func:`few_units_note`), when a proportion counts
    nothing (precision without fake decisions), or when more than half of the replicates leave it
    undefined (e.g. drew one class); otherwise ``n_undefined`` replicates were left out. Nothing
    is logged here: callers summarise the notes once.
    """
    if level not in ("frame", "video"):
        raise ValueError(f"level must be 'frame' or 'video', got {level!r}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be positive, got {n_boot}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    y_true, y_score = check_scores(y_true, y_score)
    if len(video_ids) != len(y_true):
        raise ValueError("video_ids must have one entry per frame")
    codes, uniq = unit_codes(video_ids)
    video_label = np.zeros(len(uniq), dtype=np.int64)
    video_label[codes] = y_true
    per_class = np.bincount(video_label, minlength=2)
    if level == "video":
        y_true, y_score = reduce_by_code(y_true, y_score, codes, reduce)
        codes = np.arange(len(uniq))
    n_videos = len(uniq)
    ranked = _rank(y_true, y_score, threshold)
    point = _summarize(ranked, None, fpr_targets)
    rng = np.random.default_rng(seed)
    reps = np.empty((n_boot, len(point)))
    curve = UnitWeightedCurve(ranked, codes, n_videos)
    for b in range(n_boot):
        counts = np.bincount(rng.integers(0, n_videos, n_videos), minlength=n_videos)
        summary = curve.summary(counts, fpr_targets)
        reps[b] = [summary[name] for name in point]
    shares = _proportion_counts(y_true, y_score, codes, n_videos, threshold)
    out: dict[str, Interval] = {}
    for j, name in enumerate(point):
        needs = _NEEDS.get(name, (0, 1))
        if needs:
            note = "; ".join(
                filter(
                    None,
                    (few_units_note(per_class[k], f"{_CLASS[k]} videos", min_units) for k in needs),
                )
            )
        else:
            note = few_units_note(n_videos, "videos", min_units)
        if note:
            out[name] = Interval(point[name], float("nan"), float("nan"), 0, note)
        elif name in shares:
            low, high = clustered_wilson(*shares[name], confidence)
            why = "" if np.isfinite(low) else _NO_TRIALS[name]
            out[name] = Interval(point[name], low, high, 0, why)
        else:
            low, high, note = bootstrap_interval(reps[:, j], confidence, "bootstrap replicates")
            bad = int(n_boot - np.isfinite(reps[:, j]).sum())
            out[name] = Interval(point[name], low, high, bad, note)
    return out


def unit_codes(units: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """:func:`evaluation.metrics.factorize` (codes in the order of the units as strings), in C
    for an integer array (e.g. video codes)."""
    arr = np.asarray(units)
    if arr.dtype.kind not in "iu":
        return factorize(units)
    uniq, inverse = np.unique(arr, return_inverse=True)
    order = np.argsort(uniq.astype(str), kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[inverse.ravel()], uniq[order].astype(object)


class UnitWeightedCurve:
    """The confusion counts and ROC curve of the rows weighted by their unit's multiplicity,
    from one sort: those of :func:`evaluation.metrics._summarize` with the weights
    ``counts[codes]``, in a few passes over sorted integer arrays (reused buffers).

    The sorted rows are split once into the fakes and the reals, each in score order, and every
    threshold (a block of equal scores) knows how many of each lie at or above it; a replicate
    then needs the cumulative weights of the two streams only (integer sums, so exact). The AUC
    is the trapezoid sum in integers, ``sum over reals of w (TP above + TP through its block)``;
    the EER, its threshold and TPR@FPR come from bisection on the thresholds' counts."""

    def __init__(self, ranked: _Ranked, codes: np.ndarray, n_units: int) -> None:
        self.thr, self.last = ranked.thr, ranked.last
        sorted_codes = codes[ranked.order]
        fake = ranked.pos > 0
        n = len(fake)
        by_unit = np.bincount(codes * 4 + ranked.cm_index, minlength=4 * n_units)
        self.confusion = by_unit.reshape(n_units, 4).astype(np.float64)
        self.codes_fake, self.codes_real = sorted_codes[fake], sorted_codes[~fake]
        fakes_through = np.cumsum(fake)  # fakes at or above each sorted row
        # per threshold: the numbers of fakes and reals at or above it
        self.kp = fakes_through[self.last] if n else np.zeros(0, dtype=np.int64)
        self.kn = self.last + 1 - self.kp
        block = np.zeros(n, dtype=np.int64)
        block[self.last[:-1] + 1] = 1
        block = np.cumsum(block)  # each sorted row's threshold
        above = np.r_[0, self.kp][block]  # fakes strictly above the row's block
        # reals: fakes above (a) and through (b) their block; fakes: reals through theirs
        self.real_above = above[~fake]
        tied = np.flatnonzero(self.kp[block[~fake]] != self.real_above)
        self.tied_reals, self.tied_through = tied, self.kp[block[~fake]][tied]
        self.fake_through = self.kp[block[fake]]
        self.fake_reals = self.kn[block[fake]]
        # a fake's own rank among the fakes + 1 is its TP count when it ties with no fake
        self._own = bool(np.array_equal(self.fake_through, np.arange(1, len(self.codes_fake) + 1)))
        n1, n0 = len(self.codes_fake), len(self.codes_real)
        self._tp, self._fp = np.zeros(n1 + 1, dtype=np.int64), np.zeros(n0 + 1, dtype=np.int64)
        self._w1, self._w0 = np.empty(n1, dtype=np.int64), np.empty(n0, dtype=np.int64)
        self._g0, self._g1 = np.empty(n0, dtype=np.int64), np.empty(n1, dtype=np.int64)
        self._f = [np.empty(n1, dtype=np.float64) for _ in range(2)]

    def _cumulative(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cumulative weights of the fakes and of the reals in score order, from 0 (buffers):
        at threshold k, TP = ``tp[kp[k]]`` and FP = ``fp[kn[k]]``."""
        np.take(counts, self.codes_fake, out=self._w1, mode="clip")  # codes are in range
        np.take(counts, self.codes_real, out=self._w0, mode="clip")
        np.cumsum(self._w1, out=self._tp[1:])
        np.cumsum(self._w0, out=self._fp[1:])
        return self._tp, self._fp

    def _point(self, tp: np.ndarray, fp: np.ndarray) -> Callable[[int], tuple[float, float]]:
        """FPR and (1 - TPR) - FPR of point ``j`` (0 the origin), as :func:`eer_of_counts`."""
        n_tp, n_fp, kp, kn = float(tp[-1]), float(fp[-1]), self.kp, self.kn

        def point(j: int) -> tuple[float, float]:
            if j == 0:
                return 0.0, 1.0
            fpr = float(fp[kn[j - 1]]) / n_fp
            return fpr, (1.0 - float(tp[kp[j - 1]]) / n_tp) - fpr

        return point

    def eer(self, counts: np.ndarray) -> float:
        """EER of one replicate: bit for bit that of :func:`weighted_ranking_metrics`."""
        tp, fp = self._cumulative(counts)
        if not len(self.kp) or tp[-1] <= 0 or fp[-1] <= 0:
            return float("nan")
        return _eer_point(self._point(tp, fp), len(self.kp))[0]

    def _total(self, tp: np.ndarray, fp: np.ndarray, k: int) -> int:
        """Weighted rows at or above threshold ``k``."""
        return int(tp[self.kp[k]]) + int(fp[self.kn[k]])

    def _first(self, ok: Callable[[int], bool]) -> int:
        """The first threshold for which the monotone ``ok`` holds (their number if none)."""
        lo, hi = 0, len(self.kp)
        while lo < hi:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def summary(self, counts: np.ndarray, fpr_targets: Sequence[float]) -> dict[str, float]:
        """:func:`evaluation.metrics.summarize` of one replicate: the proportions, AUC, EER, its
        threshold and TPR@FPR bit for bit, AP within 1e-15 (summed over the fakes rather than
        the thresholds)."""
        out = _count_summary(counts @ self.confusion)
        tp, fp = self._cumulative(counts)
        n_tp, n_fp = int(tp[-1]), int(fp[-1])
        if not len(self.kp) or n_tp <= 0 or n_fp <= 0:
            return out | dict.fromkeys(_ranking_keys(fpr_targets), float("nan"))
        # AUC: trapezoids summed in integers, divided once
        np.take(tp, self.real_above, out=self._g0, mode="clip")
        area = 2 * int(np.dot(self._w0, self._g0))
        if len(self.tied_reals):
            gain = tp[self.tied_through] - self._g0[self.tied_reals]
            area += int(np.dot(self._w0[self.tied_reals], gain))
        out["auc"] = float(area / (2 * n_tp * n_fp))
        # AP: each fake's weight times the precision at its threshold
        through = tp[1:] if self._own else tp.take(self.fake_through)
        np.take(fp, self.fake_reals, out=self._g1, mode="clip")
        np.add(self._g1, through, out=self._g1)
        np.maximum(self._g1, 1, out=self._g1)
        prec, weight = self._f
        np.divide(through, self._g1, out=prec)
        np.copyto(weight, self._w1)
        out["ap"] = float(np.dot(weight, prec)) / n_tp
        point = self._point(tp, fp)
        out["eer"], weight_eer, j = _eer_point(point, len(self.kp))
        # on the curve of drawn thresholds (_curve): point j is one of them (its predecessor
        # has a positive difference), its predecessor there the first with point j-1's counts
        top = float(self.thr[self._first(lambda k: self._total(tp, fp, k) > 0)])
        if np.isnan(weight_eer):
            out["eer_threshold"] = min(float(self.thr[j - 1]), top)
        else:
            rows = self._total(tp, fp, j - 2) if j >= 2 else 0
            first = self._first(lambda k: self._total(tp, fp, k) >= rows)
            t0 = min(float(np.inf if j < 2 or rows == 0 else self.thr[first]), top)
            out["eer_threshold"] = t0 + weight_eer * (float(self.thr[j - 1]) - t0)
        for x in fpr_targets:  # the last point with FPR <= x (FPR never decreases)
            lo = self._first(lambda k, x=x: float(fp[self.kn[k]]) / n_fp > x + 1e-12)
            out[f"tpr@fpr={x:g}"] = float(tp[self.kp[lo - 1]]) / n_tp if lo else 0.0
        return out


def eer_of_counts(tps: np.ndarray, rows: np.ndarray | None, at: np.ndarray) -> float:
    """EER of the ROC curve whose cumulative positive and total counts at its thresholds are
    ``tps[at]`` and ``rows[at]`` (``rows`` None: ``at + 1``, unit weights), equal to
    :func:`evaluation.metrics.eer` on the rows (bit for bit: the same operations on the same
    values); NaN when a class is missing.

    ``(1 - TPR) - FPR`` never increases along the curve (rounding is monotone), so the first
    point where it is <= 0 is found by bisection, without the curve's arrays. Thresholds of
    weight 0 repeat their predecessor's point and change nothing."""
    if not len(at):
        return float("nan")

    def point(j: int) -> tuple[float, float]:  # (FPR, 1 - TPR - FPR) of point j, 0 = origin
        if j == 0:
            return 0.0, 1.0
        k = int(at[j - 1])
        tp = float(tps[k])
        fp = float((k + 1 if rows is None else rows[k]) - tps[k])
        fpr = fp / n_fp
        return fpr, (1.0 - tp / n_tp) - fpr

    k_end = int(at[-1])
    n_tp = float(tps[k_end])
    n_fp = float((k_end + 1 if rows is None else rows[k_end]) - tps[k_end])
    if n_tp <= 0 or n_fp <= 0:
        return float("nan")
    return _eer_point(point, len(at))[0]


def _eer_point(point: Callable[[int], tuple[float, float]], n: int) -> tuple[float, float, int]:
    """EER, the interpolation weight and the point ``i`` of :func:`evaluation.metrics._eer_from_curve`
    found by bisection (``point(j)``: FPR and (1 - TPR) - FPR of point j, 0 the origin)."""
    lo, hi = 0, n  # the last point has TPR = FPR = 1: its difference is -1
    while lo < hi:
        mid = (lo + hi) // 2
        if point(mid)[1] <= 0:
            hi = mid
        else:
            lo = mid + 1
    f1, d1 = point(lo)
    if d1 == 0 or lo == 0:
        return f1, float("nan"), lo
    f0, d0 = point(lo - 1)
    w = d0 / (d0 - d1)
    return f0 + w * (f1 - f0), w, lo


_CLASS = ("real", "fake")
#: Why a proportion's interval is undefined when nothing is counted.
_NO_TRIALS = {"acc": "no rows", "precision": "no fake decisions", "recall": "no fakes"}


def _proportion_counts(
    y_true: np.ndarray, y_score: np.ndarray, codes: np.ndarray, n_units: int, threshold: float
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per unit (video) the successes and trials of ACC, precision and recall."""
    fake, decided_fake = y_true == 1, y_score >= threshold
    counted = {
        "acc": (decided_fake == fake, np.ones(len(y_true), dtype=bool)),
        "precision": (fake, decided_fake),
        "recall": (decided_fake, fake),
    }
    return {
        name: (
            np.bincount(codes, weights=success & rows, minlength=n_units),
            np.bincount(codes, weights=rows, minlength=n_units),
        )
        for name, (success, rows) in counted.items()
    }


@dataclass(frozen=True)
class DeLongResult:
    """Two AUCs on the same samples, their difference, its standard error, z and two-sided p."""

    auc_a: float
    auc_b: float
    diff: float
    se: float
    z: float
    p_value: float


def _structural_components(
    pos: np.ndarray, neg: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """AUC and DeLong's placement values V10 (per positive) and V01 (per negative), by mid-ranks."""
    m, n = len(pos), len(neg)
    tx = stats.rankdata(pos)
    ty = stats.rankdata(neg)
    tz = stats.rankdata(np.concatenate([pos, neg]))
    v10 = (tz[:m] - tx) / n
    v01 = 1.0 - (tz[m:] - ty) / m
    return float(v10.mean()), v10, v01


def _placements(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's placement values by mid-ranks: V10 per positive, V01 per negative."""
    pos = y == 1
    n1, n0 = int(pos.sum()), int((~pos).sum())
    rank_all = stats.rankdata(s)
    v10 = (rank_all[pos] - stats.rankdata(s[pos])) / n0
    v01 = 1.0 - (rank_all[~pos] - stats.rankdata(s[~pos])) / n1
    return v10, v01


def clustered_auc_covariance(
    y_true: Sequence, scores: Sequence[Sequence], clusters: Sequence | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """AUCs of several score vectors on the same items and their covariance matrix, with each
    class's placement values summed per cluster (Obuchowski 1997; DeLong 1988 with one item per
    cluster; ``k / (k - 1)`` small-sample factor). Clusters must be class-pure (a video is real
    or fake); needs two clusters of each class."""
    y = check_scores(y_true, scores[0])[0]
    s = [check_scores(y, v)[1] for v in scores]
    clusters = np.arange(len(y)) if clusters is None else np.asarray(clusters)
    if len(clusters) != len(y):
        raise ValueError("clusters must have one entry per item")
    pos = y == 1
    comps = [_placements(y, v) for v in s]
    aucs = np.array([c[0].mean() if len(c[0]) else np.nan for c in comps])
    cov = np.zeros((len(s), len(s)))
    for k_class, rows, n in ((0, pos, int(pos.sum())), (1, ~pos, int((~pos).sum()))):
        codes, uniq = factorize(clusters[rows])
        k = len(uniq)
        if k < 2:
            raise ValueError("the paired DeLong test needs at least two videos of each class")
        sums = np.vstack([np.bincount(codes, weights=c[k_class], minlength=k) for c in comps])
        sizes = np.bincount(codes, minlength=k)
        centred = sums - sizes[None, :] * aucs[:, None]
        cov += k / (k - 1) * (centred @ centred.T) / n**2
    return aucs, cov


def clustered_auc_variance(
    y_true: np.ndarray, y_score: np.ndarray, clusters: np.ndarray
) -> tuple[float, float, int]:
    """AUC, its variance and the smaller number of clusters of a class, for samples clustered
    in class-pure clusters (a video's frames): :func:`clustered_auc_covariance` of one score
    (Obuchowski's nonparametric estimator). NaN variance with fewer than two clusters of a
    class."""
    y_true, y_score = check_scores(y_true, y_score)
    _need_both(y_true, "AUC")
    clusters = np.asarray(clusters)
    pos = y_true == 1
    fewest = min(len(np.unique(clusters[pos])), len(np.unique(clusters[~pos])))
    if fewest < 2:
        return float(_placements(y_true, y_score)[0].mean()), float("nan"), int(fewest)
    aucs, cov = clustered_auc_covariance(y_true, [y_score], clusters)
    return float(aucs[0]), float(cov[0, 0]), int(fewest)


def delong_variance(y_true: Sequence, y_score: Sequence) -> tuple[float, float]:
    """AUC and its DeLong variance ``var(V10)/m + var(V01)/n``."""
    y_true, y_score = check_scores(y_true, y_score)
    _need_both(y_true, "DeLong")
    a, v10, v01 = _structural_components(y_score[y_true == 1], y_score[y_true == 0])
    return a, float(np.var(v10, ddof=1) / len(v10) + np.var(v01, ddof=1) / len(v01))


def delong_test(y_true: Sequence, score_a: Sequence, score_b: Sequence) -> DeLongResult:
    """DeLong's test of ``AUC_a == AUC_b`` for two detectors scored on the same samples.

    Needs at least two samples of each class. If the difference has zero variance (identical
    rankings) ``z`` is 0 and ``p`` is 1 when the AUCs are equal.
    """
    y_true, score_a = check_scores(y_true, score_a)
    _, score_b = check_scores(y_true, score_b)
    _need_both(y_true, "DeLong")
    pos, neg = y_true == 1, y_true == 0
    if pos.sum() < 2 or neg.sum() < 2:
        raise SingleClassError("DeLong's test needs at least two samples of each class")
    auc_a, a10, a01 = _structural_components(score_a[pos], score_a[neg])
    auc_b, b10, b01 = _structural_components(score_b[pos], score_b[neg])
    s10 = np.cov(np.vstack([a10, b10]))
    s01 = np.cov(np.vstack([a01, b01]))
    cov = s10 / pos.sum() + s01 / neg.sum()
    var = float(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1])
    diff = auc_a - auc_b
    if var <= 1e-300:
        z = 0.0 if diff == 0 else float(np.sign(diff) * np.inf)
    else:
        z = diff / np.sqrt(var)
    p = float(2.0 * stats.norm.sf(abs(z)))
    return DeLongResult(auc_a, auc_b, diff, float(np.sqrt(max(var, 0.0))), float(z), p)


def bootstrap_multiplicities(
    rng: np.random.Generator,
    n_units: int,
    n_boot: int,
    max_cells: int = 1 << 21,
    draws: int | None = None,
) -> Iterator[np.ndarray]:
    """Blocks ``[reps, n_units]`` of how often each unit is drawn in each bootstrap replicate.

    A replicate draws ``draws`` units (default ``n_units``) with replacement; the blocks
    together hold ``n_boot`` replicates, each block at most ``max_cells`` entries (so memory
    does not grow with n_boot).
    """
    if n_units < 1 or n_boot < 1:
        raise ValueError(f"need at least one unit and one replicate, got {n_units} and {n_boot}")
    draws = n_units if draws is None else draws
    per_block = max(1, max_cells // max(n_units, draws, 1))
    done = 0
    while done < n_boot:
        reps = min(per_block, n_boot - done)
        drawn = rng.integers(0, n_units, (reps, draws)) + (np.arange(reps) * n_units)[:, None]
        yield np.bincount(drawn.ravel(), minlength=reps * n_units).reshape(reps, n_units)
        done += reps


def stratified_multiplicities(
    rng: np.random.Generator, strata: np.ndarray, n_boot: int, minus_one: bool = True
) -> Iterator[np.ndarray]:
    """Blocks ``[reps, n_units]`` of a bootstrap stratified by ``strata`` (e.g. group x class).

    With ``minus_one`` each stratum of ``n_h >= 2`` units draws ``n_h - 1`` of them with
    replacement, the with-replacement bootstrap of McCarthy & Snowden (1985; Rao & Wu 1988 with
    ``m_h = n_h - 1``): the variance of a mean over the replicates is then the unbiased
    ``s^2 / n_h`` instead of ``(n_h - 1) / n_h`` of it, which matters with 5-12 videos.
    Otherwise it draws ``n_h``. A stratum of one unit keeps it in every replicate.

    Every stratum's blocks hold the same replicates (the block size of the largest stratum), so
    they line up whatever the strata's sizes; the draws are those of one
    :func:`bootstrap_multiplicities` per stratum, block by block in stratum order.
    """
    strata = np.asarray(strata)
    if not strata.size:
        return
    codes = np.unique(strata, return_inverse=True)[1].ravel()
    members = np.split(np.argsort(codes, kind="stable"), np.cumsum(np.bincount(codes))[:-1])
    cut = 1 if minus_one else 0
    draws = [max(len(m) - cut, 1) for m in members]
    widths = [max(len(m), d) for m, d in zip(members, draws, strict=True)]
    per_block = max(1, (1 << 21) // max(widths))  # bootstrap_multiplicities' default max_cells
    blocks = [
        bootstrap_multiplicities(rng, len(m), n_boot, max_cells=per_block * w, draws=d)
        for m, d, w in zip(members, draws, widths, strict=True)
    ]
    for parts in zip(*blocks, strict=True):
        out = np.zeros((len(parts[0]), len(strata)), dtype=np.int64)
        for m, part in zip(members, parts, strict=True):
            out[:, m] = part if len(m) > 1 else 1
        yield out


def weighted_ranking_metrics(
    y_true: np.ndarray, y_score: np.ndarray, weights: Iterable[np.ndarray]
) -> dict[str, np.ndarray]:
    """AUC and EER of the samples weighted by each row of ``weights`` (one sort for all rows).

    A weighting by multiplicity equals scoring the repeated samples (a bootstrap replicate); a
    0/1 weighting scores a subset (a permuted group). NaN where a weighting leaves one class.
    """
    ranked = _rank(np.asarray(y_true, dtype=np.int64), np.asarray(y_score, dtype=np.float64))
    aucs, eers = [], []
    for w in weights:
        out = _summarize(ranked, np.asarray(w, dtype=np.float64), ())
        aucs.append(out["auc"])
        eers.append(out["eer"])
    return {"auc": np.asarray(aucs, dtype=np.float64), "eer": np.asarray(eers, dtype=np.float64)}


def weighted_ranking_matrix(
    y_true: np.ndarray, y_score: np.ndarray, weights: np.ndarray, block: int = 256
) -> dict[str, np.ndarray]:
    """:func:`weighted_ranking_metrics` for a ``[reps, n]`` array of weightings, vectorised
    (equal up to rounding): AUC by the trapezoid rule and EER interpolated as
    :func:`evaluation.metrics.eer`, per row; NaN where a row leaves one class."""
    y = np.asarray(y_true, dtype=np.int64)
    s = np.asarray(y_score, dtype=np.float64)
    w_all = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    order = np.argsort(s)[::-1]
    sorted_s = s[order]
    last = np.r_[np.flatnonzero(sorted_s[1:] != sorted_s[:-1]), len(s) - 1]
    pos = y[order].astype(np.float64)
    aucs, eers = [], []
    for start in range(0, len(w_all), block):
        w = w_all[start : start + block][:, order]
        tps = np.cumsum(w * pos, axis=1)[:, last]
        fps = np.cumsum(w * (1.0 - pos), axis=1)[:, last]
        p_tot, n_tot = tps[:, -1:], fps[:, -1:]
        ok = (p_tot[:, 0] > 0) & (n_tot[:, 0] > 0)
        zero = np.zeros((len(w), 1))
        with np.errstate(invalid="ignore", divide="ignore"):
            fpr = np.hstack([zero, fps]) / n_tot
            tpr = np.hstack([zero, tps]) / p_tot
        auc = np.sum(np.diff(fpr, axis=1) * (tpr[:, 1:] + tpr[:, :-1]) / 2.0, axis=1)
        diff = (1.0 - tpr) - fpr
        i = np.argmax(diff <= 0, axis=1)
        rows = np.arange(len(w))
        d1, f1 = diff[rows, i], fpr[rows, i]
        prev = np.maximum(i - 1, 0)
        d0, f0 = diff[rows, prev], fpr[rows, prev]
        with np.errstate(invalid="ignore", divide="ignore"):
            interp = f0 + d0 / (d0 - d1) * (f1 - f0)
        eer = np.where((d1 == 0) | (i == 0), f1, interp)
        aucs.append(np.where(ok, auc, np.nan))
        eers.append(np.where(ok, eer, np.nan))
    return {"auc": np.concatenate(aucs), "eer": np.concatenate(eers)}


#: A bootstrap interval is undefined when more than this share of its replicates is.
MAX_UNDEFINED_SHARE = 0.5


def bootstrap_interval(
    samples: np.ndarray, confidence: float = 0.95, what: str = "replicates"
) -> tuple[float, float, str]:
    """Percentile interval of the defined (finite) replicates, and a note.

    More than :data:`MAX_UNDEFINED_SHARE` of the replicates undefined: ``(NaN, NaN, reason)``;
    some undefined: the interval and a note saying how many were left out; none: note ``""``.
    """
    samples = np.asarray(samples, dtype=np.float64)
    bad = int(samples.size - np.isfinite(samples).sum())
    if samples.size == 0:
        return float("nan"), float("nan"), f"no {what}"
    if bad > MAX_UNDEFINED_SHARE * samples.size:
        return float("nan"), float("nan"), f"{bad} of {samples.size} {what} undefined"
    low, high = percentile_interval(samples, confidence)
    note = f"{bad} of {samples.size} {what} undefined, left out" if bad else ""
    return low, high, note


def wilson_interval(
    p: np.ndarray | float, n: np.ndarray | float, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a proportion ``p`` observed on ``n`` (possibly effective,
    non-integer) trials; NaN where ``n <= 0`` or ``p`` is NaN."""
    p = np.asarray(p, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    z = stats.norm.ppf(0.5 + confidence / 2.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2.0 * n)) / denom
        half = z / denom * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    bad = ~(n > 0) | np.isnan(p)
    return np.where(bad, np.nan, centre - half), np.where(bad, np.nan, centre + half)


def cluster_icc(errors: np.ndarray, sizes: np.ndarray, strata: np.ndarray) -> float:
    """ANOVA estimate of the intra-cluster correlation of a binary outcome, clusters (videos)
    nested in strata (groups), each stratum around its own rate (Ridout, Demetrio & Firth,
    Biometrics 1999); clipped to [0, 1]. NaN where it cannot be estimated (no variation, or
    no stratum with two clusters); the caller then assumes the worst (1)."""
    errors = np.asarray(errors, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    codes = np.unique(np.asarray(strata), return_inverse=True)[1]
    n_total, k = sizes.sum(), len(sizes)
    n_strata = int(codes.max()) + 1 if k else 0
    if k - n_strata < 1 or n_total - k < 1:
        return float("nan")
    stratum_n = np.bincount(codes, weights=sizes)
    stratum_rate = np.bincount(codes, weights=errors) / stratum_n
    rate = errors / sizes
    msb = np.sum(sizes * (rate - stratum_rate[codes]) ** 2) / (k - n_strata)
    msw = np.sum(errors * (1.0 - rate)) / (n_total - k)
    m0 = (n_total - np.sum(sizes**2 / stratum_n[codes])) / (k - n_strata)
    denom = msb + (m0 - 1.0) * msw
    if denom <= 0:
        return float("nan")
    return float(np.clip((msb - msw) / denom, 0.0, 1.0))


def effective_size(sizes: np.ndarray, icc: float) -> float:
    """Kish's effective sample size of clustered binary outcomes: ``N / deff`` with the design
    effect ``deff = 1 + (m_w - 1) icc``, ``m_w = sum m^2 / N`` (size-weighted mean cluster
    size); an unknown (NaN) ``icc`` counts as 1, giving ``N^2 / sum m^2`` (about the number of
    clusters)."""
    sizes = np.asarray(sizes, dtype=np.float64)
    n_total = sizes.sum()
    if n_total <= 0:
        return 0.0
    m_w = np.sum(sizes**2) / n_total
    rho = 1.0 if not np.isfinite(icc) else icc
    return float(n_total / (1.0 + (m_w - 1.0) * rho))


def mover_interval(
    terms: Sequence[tuple[float, float, float, float]], constant: float = 0.0
) -> tuple[float, float, float]:
    """Estimate and interval of ``constant + sum c_k p_k`` for independent estimates ``p_k``
    with intervals ``(l_k, u_k)``: terms are ``(c_k, p_k, l_k, u_k)``. MOVER (Zou & Donner
    2008; with Wilson intervals of two proportions it is Newcombe's 1998 hybrid score interval
    of their difference). NaN when a term with ``c_k != 0`` is undefined."""
    used = [t for t in terms if t[0] != 0]
    if any(not np.isfinite(v) for t in used for v in t):
        return float("nan"), float("nan"), float("nan")
    est = constant + sum(c * p for c, p, _, _ in used)
    down = sum((c * p - min(c * lo, c * hi)) ** 2 for c, p, lo, hi in used)
    up = sum((max(c * lo, c * hi) - c * p) ** 2 for c, p, lo, hi in used)
    return float(est), float(est - np.sqrt(down)), float(est + np.sqrt(up))


def percentile_interval(samples: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the finite ``samples``; (NaN, NaN) when there are none."""
    finite = np.asarray(samples, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return float(low), float(high)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979) of a family of tests; NaN entries (tests
    not made) stay NaN and are not counted in the family.

    ``p_adjusted < alpha`` rejects with a family-wise error rate of at most ``alpha`` whatever
    the dependence between the tests (the paired changes of one run share their videos, so no
    independence or positive-dependence assumption is safe): the i-th smallest of ``m`` p-values
    is multiplied by ``m - i + 1``, then made non-decreasing and capped at 1.
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    made = np.flatnonzero(np.isfinite(p))
    order = made[np.argsort(p[made], kind="stable")]
    m = len(order)
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


def mcnemar_exact(n_01: int, n_10: int) -> float:
    """Two-sided exact McNemar p-value of paired before/after outcomes.

    ``n_01`` and ``n_10`` are the discordant pairs (changed one way, changed the other way);
    under "no change in the marginal rate" each discordant pair goes either way with
    probability 1/2, so the p-value is the binomial test of ``n_01`` out of ``n_01 + n_10``.
    1.0 when there is no discordant pair.
    """
    if n_01 < 0 or n_10 < 0:
        raise ValueError(f"counts must be >= 0, got {n_01} and {n_10}")
    if n_01 + n_10 == 0:
        return 1.0
    return float(stats.binomtest(int(n_01), int(n_01 + n_10), 0.5).pvalue)


def clustered_wilson(
    successes: np.ndarray, trials: np.ndarray, confidence: float = 0.95
) -> tuple[float, float]:
    """Wilson score interval of the proportion ``sum(successes) / sum(trials)``, one entry per
    cluster (a video's frames): on Kish's effective number of trials (:func:`effective_size`,
    ICC by :func:`cluster_icc`), so correlated frames of one video count less than independent
    ones; clusters of one trial each (photos, videos) give the plain Wilson interval. Unlike a
    percentile bootstrap it never collapses to a point: 30 of 30 gives [88.6 %, 100 %].
    NaN without trials."""
    successes = np.asarray(successes, dtype=np.float64)
    trials = np.asarray(trials, dtype=np.float64)
    used = trials > 0
    successes, trials = successes[used], trials[used]
    total = trials.sum()
    if total <= 0:
        return float("nan"), float("nan")
    icc = cluster_icc(successes, trials, np.zeros(len(trials), dtype=np.int64))
    low, high = wilson_interval(successes.sum() / total, effective_size(trials, icc), confidence)
    return float(low), float(high)


def proportion_interval(
    events: np.ndarray, units: Sequence, confidence: float = 0.95
) -> tuple[float, float]:
    """:func:`clustered_wilson` of the share of True ``events``, clustered by ``units`` (e.g.
    the video of each face); NaN when there is no event."""
    events = np.asarray(events, dtype=bool)
    if len(events) != len(units):
        raise ValueError("units must have one entry per event")
    if events.size == 0:
        return float("nan"), float("nan")
    codes, uniq = factorize(units)
    return coded_proportion_interval(events, codes, len(uniq), confidence)


def coded_proportion_interval(
    events: np.ndarray, codes: np.ndarray, n_units: int, confidence: float = 0.95
) -> tuple[float, float]:
    """:func:`proportion_interval` with the units as integer codes ``0..n_units-1`` (codes
    without events are left out, so any subset of rows gives the units it holds, in code
    order)."""
    per_unit = np.bincount(codes, weights=events, minlength=n_units)
    return clustered_wilson(per_unit, np.bincount(codes, minlength=n_units), confidence)
