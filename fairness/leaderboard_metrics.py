"""The fairness figures of a leaderboard row (issue 38, item 3) that :mod:`fairness.gaps` does
not give: cross-group AUCs, and intervals of Lin et al.'s gaps.

* **Cross-group AUC** of the ordered pair (a, b): P(a fake of group a is scored above a real of
  group b), ties counting one half (Kallus & Zhou, "The Fairness of Risk Scores Beyond
  Classification: Bipartite Ranking and the xAUC Metric", NeurIPS 2019). Threshold-free: a
  detector that ranks one group's fakes below another group's reals shows it whatever the
  threshold. Interval: logit-normal (:func:`evaluation.significance.logit_interval`), with
  Obuchowski's variance clustered by video
  (:func:`evaluation.confidence.clustered_auc_variance`); none at an AUC of 0 or 1.
* **Lin et al.'s gaps** (CVPR 2024, Sec. 5.1: F_FPR, F_OAE, F_DP, F_MEO;
  :func:`fairness.metrics.lin_metrics`) at a decision threshold, with percentile bootstrap
  intervals: the videos of each group and class are resampled within that stratum
  (:func:`evaluation.confidence.stratified_multiplicities`), so every replicate keeps each
  group's class counts. These max-min and sum-of-absolute gaps are never negative, so their
  intervals describe the spread and do not test "no gap" (:mod:`fairness.gaps` has the signed
  gaps and tests).

The small-group rule (:data:`evaluation.confidence.MIN_INTERVAL_UNITS`): no interval for a
figure that counts a group and class with fewer videos; its note says which.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fairforensics.evaluation.confidence import (
    MIN_INTERVAL_UNITS,
    clustered_auc_variance,
    few_units_note,
    percentile_interval,
    stratified_multiplicities,
)
from fairforensics.evaluation.metrics import factorize
from fairforensics.evaluation.significance import logit_interval
from fairforensics.fairness.abf import clean_groups, is_missing
from fairforensics.fairness.metrics import lin_metrics

#: Lin et al.'s threshold gaps shown in a leaderboard.
LIN_KEYS = ("F_FPR", "F_OAE", "F_DP", "F_MEO")
_CLASS = ("real", "fake")


@dataclass(frozen=True)
class Estimate:
    """A value, its interval (NaN when none) and why there is none."""

    value: float
    low: float = float("nan")
    high: float = float("nan")
    note: str = ""


def _clean(
    y_true: Sequence, y_score: Sequence, groups: Sequence, units: Sequence
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    units = np.asarray(units, dtype=object)
    known = np.array([not is_missing(g) for g in np.asarray(groups, dtype=object)], dtype=bool)
    if len(units) != len(known):
        raise ValueError("units must have one entry per sample")
    y, s, g = clean_groups(y_true, y_score, groups)
    return y, s, g, units[known]


def _n_units(units: np.ndarray) -> int:
    return len(set(units.tolist()))


def cross_group_aucs(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    units: Sequence,
    *,
    confidence: float = 0.95,
    min_units: int = MIN_INTERVAL_UNITS,
) -> dict[tuple[str, str], Estimate]:
    """``{(a, b): Estimate}`` for every ordered pair of groups, ``a == b`` included (the group's
    own AUC): fakes of ``a`` against reals of ``b`` (module docstring). A pair without fakes
    of ``a`` or reals of ``b`` is NaN."""
    y, s, g, u = _clean(y_true, y_score, groups, units)
    names = sorted(set(g.tolist()))
    out: dict[tuple[str, str], Estimate] = {}
    for a in names:
        fakes = (g == a) & (y == 1)
        for b in names:
            reals = (g == b) & (y == 0)
            if not fakes.any() or not reals.any():
                out[(a, b)] = Estimate(float("nan"), note=f"no fakes of {a} or no reals of {b}")
                continue
            rows = fakes | reals
            # a video holds one group and one class, so it is one cluster of either side
            auc, var, _ = clustered_auc_variance(y[rows], s[rows], u[rows])
            note = "; ".join(
                filter(
                    None,
                    (
                        few_units_note(_n_units(u[fakes]), f"fake videos of {a}", min_units),
                        few_units_note(_n_units(u[reals]), f"real videos of {b}", min_units),
                    ),
                )
            )
            if note or not np.isfinite(var):
                out[(a, b)] = Estimate(auc, note=note or "variance undefined")
                continue
            out[(a, b)] = Estimate(auc, *logit_interval(auc, var, confidence))
    return out


def lin_intervals(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    units: Sequence,
    *,
    threshold: float = 0.5,
    n_boot: int = 200,
    confidence: float = 0.95,
    seed: int = 0,
    min_units: int = MIN_INTERVAL_UNITS,
) -> dict[str, Estimate]:
    """Lin et al.'s :data:`LIN_KEYS` at ``threshold`` with stratified bootstrap intervals
    (module docstring); ``n_boot`` 0: no intervals. Seeded."""
    y, s, g, u = _clean(y_true, y_score, groups, units)
    point = lin_metrics(y, s, g, threshold)
    group, uniq_groups = factorize(g)
    names = list(uniq_groups)
    # cells (unit, group, class) on integer codes, in the order of their names as strings
    keys = (factorize(u)[0] * len(names) + group) * 2 + y
    uniq, codes = np.unique(keys, return_inverse=True)
    codes = codes.ravel()
    cell_stratum = uniq % (2 * len(names))
    counts = np.bincount(cell_stratum, minlength=2 * len(names))
    note = "; ".join(
        few_units_note(int(n), f"{_CLASS[h % 2]} videos of {names[h // 2]}", min_units)
        for h, n in enumerate(counts)
        if n and few_units_note(int(n), "", min_units)
    )
    if note or n_boot == 0:
        return {k: Estimate(point[k], note=note or "intervals off") for k in LIN_KEYS}
    pred = (s >= threshold).astype(np.int64)
    group_of_cell = cell_stratum // 2
    # per cell: reals, fakes, false positives, false negatives
    cell_counts = np.stack(
        [
            np.bincount(codes, weights=(y == 0), minlength=len(uniq)),
            np.bincount(codes, weights=(y == 1), minlength=len(uniq)),
            np.bincount(codes, weights=(y == 0) & (pred == 1), minlength=len(uniq)),
            np.bincount(codes, weights=(y == 1) & (pred == 0), minlength=len(uniq)),
        ],
        axis=1,
    )
    # [cells, groups x 4]: each cell's counts in its group's columns
    by_group = (np.eye(len(names))[group_of_cell][:, :, None] * cell_counts[:, None, :]).reshape(
        len(uniq), 4 * len(names)
    )
    samples: dict[str, list[np.ndarray]] = {k: [] for k in LIN_KEYS}
    rng = np.random.default_rng(seed)
    for block in stratified_multiplicities(rng, cell_stratum, n_boot, minus_one=False):
        per_group = (block @ by_group).reshape(len(block), len(names), 4)
        for k, v in lin_from_counts(per_group).items():
            samples[k].append(v)
    out = {}
    for k in LIN_KEYS:
        low, high = percentile_interval(np.concatenate(samples[k]), confidence)
        out[k] = Estimate(point[k], low, high)
    return out


def _spread(values: np.ndarray) -> np.ndarray:
    """Max - min over the last axis, NaN ignored; NaN with fewer than two values."""
    enough = np.isfinite(values).sum(axis=-1) >= 2
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        gap = np.nanmax(values, axis=-1) - np.nanmin(values, axis=-1)
    return np.where(enough, gap, np.nan)


def lin_from_counts(counts: np.ndarray) -> dict[str, np.ndarray]:
    """Lin et al.'s :data:`LIN_KEYS` from per-group counts ``[..., groups, 4]`` (reals, fakes,
    false positives, false negatives), exactly as :func:`fairness.metrics.lin_metrics` computes
    them from rows (a group missing a class takes no part in the terms that need it), for many
    resamplings at once."""
    real, fake, fp, fn = (counts[..., k].astype(np.float64) for k in range(4))
    with np.errstate(invalid="ignore", divide="ignore"):
        fpr = np.where(real > 0, fp / real, np.nan)
        fnr = np.where(fake > 0, fn / fake, np.nan)
        n = real + fake
        acc = np.where(n > 0, 1.0 - (fp + fn) / n, np.nan)
        positive = np.where(n > 0, (fp + fake - fn) / n, np.nan)
        overall_fpr = fp.sum(axis=-1) / real.sum(axis=-1)
    f_fpr = np.nansum(np.abs(fpr - overall_fpr[..., None]), axis=-1)
    f_fpr = np.where(np.isfinite(fpr).any(axis=-1), f_fpr, np.nan)
    meo = np.stack([_spread(fpr), _spread(fnr), _spread(1 - fnr), _spread(1 - fpr)], axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        f_meo = np.nanmax(meo, axis=-1)
    return {"F_FPR": f_fpr, "F_OAE": _spread(acc), "F_DP": _spread(positive), "F_MEO": f_meo}
