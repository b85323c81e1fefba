"""Calibration of P(fake): expected and maximum calibration error over bins (Guo et al. 2017,
"On calibration of modern neural networks", Sec. 2), Brier score, negative log-likelihood, the
reliability diagram's bins, and an interval of the ECE clustered by video.

A score is calibrated when, among the samples scored ``s``, a share ``s`` is fake. The ECE
estimates the gap: the scores are cut into bins (15 of equal width by default, or of equal mass
with ``strategy="quantile"``) and ``ECE = sum_b n_b / n * |mean(y)_b - mean(s)_b|``; the MCE is
the largest such gap over non-empty bins. Frames of one video are not independent samples, so
the ECE's interval resamples videos (each with all its frames), stratified by class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from sklearn.metrics import brier_score_loss, log_loss

from fairforensics.evaluation.confidence import (
    MIN_INTERVAL_UNITS,
    few_units_note,
    stratified_multiplicities,
)
from fairforensics.evaluation.metrics import check_scores

STRATEGIES = ("uniform", "quantile")
Strategy = Literal["uniform", "quantile"]
#: probabilities are clipped to [EPS, 1 - EPS] for the log-likelihood (a score of exactly 0 or 1
#: that is wrong would otherwise cost an infinite NLL)
EPS = 1e-7


@dataclass(frozen=True)
class ReliabilityBins:
    """The bins of a reliability diagram: edges (n_bins + 1), and per bin the number of samples,
    the mean score (confidence in "fake") and the share of fakes (NaN in an empty bin)."""

    edges: np.ndarray
    counts: np.ndarray
    mean_score: np.ndarray
    fake_share: np.ndarray

    @property
    def gaps(self) -> np.ndarray:
        """|fake share - mean score| per bin (NaN in an empty bin)."""
        return np.abs(self.fake_share - self.mean_score)


def bin_edges(y_score: np.ndarray, n_bins: int, strategy: Strategy) -> np.ndarray:
    """``n_bins + 1`` edges on [0, 1]: equal width, or the scores' quantiles (equal mass)."""
    if n_bins < 1:
        raise ValueError(f"n_bins must be at least 1, got {n_bins}")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy={strategy!r}: expected one of {', '.join(STRATEGIES)}")
    if strategy == "uniform":
        return np.linspace(0.0, 1.0, n_bins + 1)
    edges = np.quantile(y_score, np.linspace(0.0, 1.0, n_bins + 1))
    edges[0], edges[-1] = 0.0, 1.0
    return edges


def bin_of(y_score: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bin of each score: bins are ``[e_k, e_k+1)``, the last one closed (a score of 1)."""
    return np.clip(np.searchsorted(edges, y_score, side="right") - 1, 0, len(edges) - 2)


def reliability_bins(
    y_true: Sequence,
    y_score: Sequence,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    sample_weight: Sequence | None = None,
) -> ReliabilityBins:
    """Per-bin counts, mean scores and shares of fakes (the reliability diagram)."""
    y, s = check_scores(y_true, y_score)
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    edges = bin_edges(s, n_bins, strategy)
    b = bin_of(s, edges)
    counts = np.bincount(b, weights=w, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_score = np.bincount(b, weights=w * s, minlength=n_bins) / counts
        fake_share = np.bincount(b, weights=w * y, minlength=n_bins) / counts
    return ReliabilityBins(edges, counts, mean_score, fake_share)


def ece(
    y_true: Sequence,
    y_score: Sequence,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    sample_weight: Sequence | None = None,
) -> float:
    """Expected calibration error of P(fake): ``sum_b n_b / n |share of fakes_b - mean score_b|``."""
    bins = reliability_bins(
        y_true, y_score, n_bins=n_bins, strategy=strategy, sample_weight=sample_weight
    )
    filled = bins.counts > 0
    return float(np.sum(bins.counts[filled] * bins.gaps[filled]) / bins.counts.sum())


def mce(
    y_true: Sequence, y_score: Sequence, *, n_bins: int = 15, strategy: Strategy = "uniform"
) -> float:
    """Maximum calibration error: the largest |share of fakes - mean score| of a non-empty bin."""
    bins = reliability_bins(y_true, y_score, n_bins=n_bins, strategy=strategy)
    return float(np.max(bins.gaps[bins.counts > 0]))


def brier(y_true: Sequence, y_score: Sequence) -> float:
    """Brier score: the mean squared difference between P(fake) and the label."""
    y, s = check_scores(y_true, y_score)
    return float(brier_score_loss(y, s, pos_label=1))


def nll(y_true: Sequence, y_score: Sequence) -> float:
    """Mean negative log-likelihood of the labels under P(fake) (scores clipped to [1e-7, 1-1e-7])."""
    y, s = check_scores(y_true, y_score)
    return float(log_loss(y, np.clip(s, EPS, 1 - EPS), labels=[0, 1]))


def video_bin_sums(
    y: np.ndarray, s: np.ndarray, videos: np.ndarray, bins: np.ndarray, n_bins: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per video and bin: the sum of (label - score) and the number of rows, as V x n_bins."""
    n_videos = int(videos.max()) + 1
    cell = videos * n_bins + bins
    size = n_videos * n_bins
    diff = np.bincount(cell, weights=y - s, minlength=size).reshape(n_videos, n_bins)
    rows = np.bincount(cell, minlength=size).astype(float).reshape(n_videos, n_bins)
    return diff, rows


def ece_bootstrap(
    y_true: Sequence,
    y_score: Sequence,
    clusters: Sequence,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """The ECE and its basic (reverse-percentile) bootstrap interval over videos.

    Videos are resampled with all their rows, stratified by class (a video's label), as
    multinomial counts (weights, :func:`evaluation.confidence.stratified_multiplicities`), never
    copies of rows. The bins stay those of the data. The
    basic interval ``[2 ECE - q_hi, 2 ECE - q_lo]`` corrects the ECE's upward bias of small
    samples to first order (a percentile interval of a positively biased statistic misses a
    small true ECE); it is clipped at 0.
    """
    (result,) = ece_bootstraps(
        [(y_true, y_score, clusters)], n_bins=n_bins, strategy=strategy, n_boot=n_boot,
        confidence=confidence, seed=seed,
    )  # fmt: skip
    return result


def ece_bootstraps(
    sets: Sequence[tuple[Sequence, Sequence, Sequence]],
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[tuple[float, float, float]]:
    """:func:`ece_bootstrap` of each ``(y_true, y_score, clusters)`` of ``sets``, each with the
    same ``seed``: sets whose videos have the same labels in the same order (a test set's frames
    and its videos, one row a video) draw the same video weights, so they are drawn once and
    used for all of them; the results are those of one :func:`ece_bootstrap` per set."""
    parts = []
    for y_true, y_score, clusters in sets:
        y, s = check_scores(y_true, y_score)
        _, videos = np.unique(np.asarray(clusters), return_inverse=True)
        edges = bin_edges(s, n_bins, strategy)
        diff, rows = video_bin_sums(y, s, videos, bin_of(s, edges), n_bins)
        point = float(np.abs(diff.sum(0)).sum() / rows.sum())
        video_label = np.zeros(len(diff), dtype=np.int64)
        video_label[videos] = y
        parts.append((point, diff, rows, video_label))
    groups: list[list[int]] = []  # sets with equal video labels: the same draws
    for i, (*_, video_label) in enumerate(parts):
        same = next((g for g in groups if np.array_equal(parts[g[0]][3], video_label)), None)
        if same is None:
            groups.append([i])
        else:
            same.append(i)
    replicates: list[list[np.ndarray]] = [[] for _ in parts]
    for group in groups:
        rng = np.random.default_rng(seed)
        for counts in stratified_multiplicities(rng, parts[group[0]][3], n_boot, minus_one=False):
            for i in group:
                _, diff, rows, _ = parts[i]
                replicates[i].append(np.abs(counts @ diff).sum(1) / (counts @ rows).sum(1))
    out = []
    for (point, *_), reps in zip(parts, replicates, strict=True):
        low, high = basic_interval(point, np.concatenate(reps), confidence)
        out.append((point, max(0.0, low), max(0.0, high)))
    return out


def basic_interval(
    point: float, replicates: np.ndarray, confidence: float = 0.95
) -> tuple[float, float]:
    """The basic (reverse-percentile) bootstrap interval ``[2 point - q_hi, 2 point - q_lo]``:
    it moves a biased statistic's interval against its bias, to first order."""
    alpha = (1 - confidence) / 2
    lo_q, hi_q = np.quantile(replicates, [alpha, 1 - alpha])
    return float(2 * point - hi_q), float(2 * point - lo_q)


def calibration_summary(
    y_true: Sequence,
    y_score: Sequence,
    clusters: Sequence,
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, float | int | str | None]:
    """ECE with its interval clustered by video, MCE, Brier and NLL of one set of scores; the
    interval is withheld (with a note) under the small-group rule (fewer than 5 videos of a
    class)."""
    (summary,) = calibration_summaries(
        [(y_true, y_score, clusters)], n_bins=n_bins, strategy=strategy, n_boot=n_boot,
        confidence=confidence, seed=seed,
    )  # fmt: skip
    return summary


def calibration_summaries(
    sets: Sequence[tuple[Sequence, Sequence, Sequence]],
    *,
    n_bins: int = 15,
    strategy: Strategy = "uniform",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[dict[str, float | int | str | None]]:
    """:func:`calibration_summary` of each ``(y_true, y_score, clusters)`` of ``sets`` (e.g. a
    test set at frame and at video level); the ECE intervals through :func:`ece_bootstraps`,
    which draws the video weights once for sets with the same videos."""
    checked, notes, counts = [], [], []
    for y_true, y_score, clusters in sets:
        y, s = check_scores(y_true, y_score)
        clusters = np.asarray(clusters)
        count = {c: len(np.unique(clusters[y == c])) for c in (0, 1)}
        note = "; ".join(
            filter(
                None,
                (few_units_note(count[c], f"{w} videos") for c, w in ((0, "real"), (1, "fake"))),
            )
        )
        if not note and n_boot <= 0:
            note = "no interval (n_boot = 0)"
        checked.append((y, s, clusters))
        notes.append(note)
        counts.append(count)
    with_interval = [i for i, note in enumerate(notes) if not note]
    intervals = dict(
        zip(
            with_interval,
            ece_bootstraps(
                [checked[i] for i in with_interval],
                n_bins=n_bins,
                strategy=strategy,
                n_boot=n_boot,
                confidence=confidence,
                seed=seed,
            ),
            strict=True,
        )
    )
    out = []
    for i, ((y, s, _), note, count) in enumerate(zip(checked, notes, counts, strict=True)):
        if i in intervals:
            value, low, high = intervals[i]
        else:
            value, low, high = ece(y, s, n_bins=n_bins, strategy=strategy), None, None
        out.append(
            {
                "ece": value,
                "ece_low": low,
                "ece_high": high,
                "mce": mce(y, s, n_bins=n_bins, strategy=strategy),
                "brier": brier(y, s),
                "nll": nll(y, s),
                "n_bins": n_bins,
                "strategy": strategy,
                "n_real_videos": count[0],
                "n_fake_videos": count[1],
                "note": note
                or (f"interval: {confidence:.0%} basic bootstrap over videos ({n_boot})"),
                "min_videos": MIN_INTERVAL_UNITS,
            }
        )
    return out
