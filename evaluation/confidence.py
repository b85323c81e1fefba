"""Uncertainty of the metrics: bootstrap confidence intervals over videos, and DeLong's test.

Bootstrap (Efron & Tibshirani, percentile method): frames of one video are correlated, so a
replicate resamples *videos* with replacement and keeps all frames of each drawn video. A
replicate is a weighting of the frames by their video's multiplicity, so the scores are sorted
once and each replicate costs one pass (exactly equal to concatenating the drawn videos).
Replicates that draw a single class give NaN ranking metrics and are left out of that metric's
interval (a warning says how many).

DeLong, DeLong & Clarke-Pearson (Biometrics 1988) compare two correlated AUCs measured on the same
samples; the covariance uses the fast mid-rank algorithm of Sun & Xu (IEEE SPL 2014).

Shared helpers for clustered resampling elsewhere (fairness gaps): :func:`bootstrap_multiplicities`
(vectorised draws of units), :func:`weighted_ranking_metrics` (AUC/EER of many weightings from
one sort), :func:`percentile_interval`, :func:`bootstrap_proportion`, and McNemar's exact test
of paired before/after outcomes (:func:`mcnemar_exact`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from fairforensics.evaluation.metrics import (
    SingleClassError,
    _need_both,
    _rank,
    _summarize,
    check_scores,
    factorize,
    reduce_by_code,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Interval:
    """A point estimate and its bootstrap confidence interval."""

    value: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


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
) -> dict[str, Interval]:
    """Percentile bootstrap intervals of every :func:`evaluation.metrics.summarize` metric.

    ``level="frame"`` scores frames, ``"video"`` scores videos (frame scores reduced with
    ``reduce``); either way the resampling unit is the video (``video_ids``, unique across
    datasets and methods). Seeded: the same inputs give the same intervals.
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
    codes, uniq = factorize(video_ids)
    if level == "video":
        y_true, y_score = reduce_by_code(y_true, y_score, codes, reduce)
        codes = np.arange(len(uniq))
    n_videos = len(uniq)
    ranked = _rank(y_true, y_score, threshold)
    point = _summarize(ranked, None, fpr_targets)
    rng = np.random.default_rng(seed)
    reps = np.empty((n_boot, len(point)))
    for b in range(n_boot):
        counts = np.bincount(rng.integers(0, n_videos, n_videos), minlength=n_videos)
        reps[b] = list(_summarize(ranked, counts[codes].astype(np.float64), fpr_targets).values())
    alpha = (1.0 - confidence) / 2.0
    out: dict[str, Interval] = {}
    _warn_undefined(point, reps, level, n_videos)
    for j, name in enumerate(point):
        col = reps[:, j][np.isfinite(reps[:, j])]
        if len(col) == 0:
            out[name] = Interval(point[name], float("nan"), float("nan"))
            continue
        low, high = np.quantile(col, [alpha, 1.0 - alpha])
        out[name] = Interval(point[name], float(low), float(high))
    return out


def _warn_undefined(point: dict[str, float], reps: np.ndarray, level: str, n_videos: int) -> None:
    """One warning for every metric whose replicates were partly undefined (not one per metric)."""
    lost: dict[int, list[str]] = {}
    for j, name in enumerate(point):
        n = int((~np.isfinite(reps[:, j])).sum())
        if n and np.isfinite(point[name]):
            lost.setdefault(n, []).append(name)
    if lost:
        parts = "; ".join(f"{n} for {', '.join(names)}" for n, names in sorted(lost.items()))
        log.warning(
            "bootstrap over %d videos (%s level): of %d replicates, undefined (one class drawn) "
            "and left out of the interval: %s",
            n_videos, level, len(reps), parts,
        )  # fmt: skip


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
    rng: np.random.Generator, n_units: int, n_boot: int, max_cells: int = 1 << 21
) -> Iterator[np.ndarray]:
    """Blocks ``[reps, n_units]`` of how often each unit is drawn in each bootstrap replicate.

    A replicate draws ``n_units`` units with replacement; the blocks together hold ``n_boot``
    replicates, each block at most ``max_cells`` entries (so memory does not grow with n_boot).
    """
    if n_units < 1 or n_boot < 1:
        raise ValueError(f"need at least one unit and one replicate, got {n_units} and {n_boot}")
    per_block = max(1, max_cells // n_units)
    done = 0
    while done < n_boot:
        reps = min(per_block, n_boot - done)
        drawn = rng.integers(0, n_units, (reps, n_units)) + (np.arange(reps) * n_units)[:, None]
        yield np.bincount(drawn.ravel(), minlength=reps * n_units).reshape(reps, n_units)
        done += reps


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


def percentile_interval(samples: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the finite ``samples``; (NaN, NaN) when there are none."""
    finite = np.asarray(samples, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return float(low), float(high)


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


def bootstrap_proportion(
    events: np.ndarray,
    units: Sequence,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of the share of True ``events``, resampling ``units`` (e.g. videos)."""
    events = np.asarray(events, dtype=bool)
    if len(events) != len(units):
        raise ValueError("units must have one entry per event")
    if events.size == 0 or n_boot < 1:
        return float("nan"), float("nan")
    codes, uniq = factorize(units)
    per_unit = np.stack(
        [np.bincount(codes, weights=events, minlength=len(uniq)), np.bincount(codes)], axis=1
    )
    rng = np.random.default_rng(seed)
    shares = []
    for block in bootstrap_multiplicities(rng, len(uniq), n_boot):
        sums = block @ per_unit
        shares.append(sums[:, 0] / sums[:, 1])
    return percentile_interval(np.concatenate(shares), confidence)
