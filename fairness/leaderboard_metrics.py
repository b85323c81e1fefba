"""The fairness figures of a leaderboard row (issue 38, item 3) that :mod:`fairness.gaps` does
not give: cross-group AUCs, and intervals of Lin et al.'s gaps.

* **Cross-group AUC** of the ordered pair (a, b): P(a fake of group a is scored above a real of
  group b), ties counting one half (Kallus & Zhou, "The Fairness of Risk Scores Beyond
  Classification: Bipartite Ranking and the xAUC Metric", NeurIPS 2019). Threshold-free: a
  detector that ranks one group's fakes below another group's reals shows it whatever the
  threshold. Interval: bootstrap-t over videos on the logit scale (:func:`xauc_interval`):
  the fake videos of a and the real videos of b are resampled, each side within itself, by
  multiplicity weights (no rows copied), and each replicate is studentised by its own
  Obuchowski variance clustered by video. The normal logit interval with that variance
  covered 85.6 % at an xAUC of 0.99 with 20 videos of a group and class in issue 45's
  simulation, 91.5 % in ``scripts/bench_xauc.py``'s (the placement variance collapses near
  1); the bootstrap-t covered 94.0-95.8 % from 0.7 to 0.99 with 20 and 100 videos there
  (docs/evaluation.md).
  None at an AUC of 0 or 1 (complete separation: every replicate is the same).
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
    bootstrap_multiplicities,
    few_units_note,
    percentile_interval,
    stratified_multiplicities,
)
from fairforensics.evaluation.metrics import factorize
from fairforensics.fairness.abf import group_codes
from fairforensics.fairness.metrics import lin_metrics

#: Lin et al.'s threshold gaps shown in a leaderboard.
LIN_KEYS = ("F_FPR", "F_OAE", "F_DP", "F_MEO")
_CLASS = ("real", "fake")
#: Cells (replicates x items) of one block of :meth:`_Side.below` (1 MiB of int32: in cache).
_BELOW_CELLS = 1 << 18


@dataclass(frozen=True)
class Estimate:
    """A value, its interval (NaN when none) and why there is none."""

    value: float
    low: float = float("nan")
    high: float = float("nan")
    note: str = ""


def _clean(
    y_true: Sequence, y_score: Sequence, groups: Sequence, units: Sequence
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], np.ndarray]:
    """Rows with a known group: ``(y, score, group code, group names, units)`` (codes index
    the sorted names, as :func:`fairness.abf.group_codes`)."""
    units = np.asarray(units, dtype=object)
    if len(units) != len(groups):
        raise ValueError("units must have one entry per sample")
    known, y, s, group, names = group_codes(y_true, y_score, groups)
    return y, s, group, names, units[known]


def cross_group_aucs(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    units: Sequence,
    *,
    confidence: float = 0.95,
    min_units: int = MIN_INTERVAL_UNITS,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[tuple[str, str], Estimate]:
    """``{(a, b): Estimate}`` for every ordered pair of groups, ``a == b`` included (the group's
    own AUC): fakes of ``a`` against reals of ``b`` with a bootstrap-t interval of ``n_boot``
    replicates (module docstring; ``n_boot`` 0: none). A pair without fakes of ``a`` or reals
    of ``b`` is NaN. Seeded."""
    y, s, g, names, u = _clean(y_true, y_score, groups, units)
    codes, _ = factorize(u)
    out: dict[tuple[str, str], Estimate] = {}
    rng = np.random.default_rng(seed)
    # each group's fakes and reals sorted once, for every pair they take part in
    fakes = [_Class.of(s, codes, (g == i) & (y == 1)) for i in range(len(names))]
    reals = [_Class.of(s, codes, (g == j) & (y == 0)) for j in range(len(names))]
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if fakes[i] is None or reals[j] is None:
                out[(a, b)] = Estimate(float("nan"), note=f"no fakes of {a} or no reals of {b}")
                continue
            note = "; ".join(
                filter(
                    None,
                    (
                        few_units_note(fakes[i].n_units, f"fake videos of {a}", min_units),
                        few_units_note(reals[j].n_units, f"real videos of {b}", min_units),
                    ),
                )
            )
            value, low, high, why = _pair_interval(
                fakes[i], reals[j], n_boot=0 if note else n_boot, confidence=confidence,
                rng=rng, max_cells=1 << 21,
            )  # fmt: skip
            out[(a, b)] = Estimate(value, low, high, note or why)
    return out


def _dense(codes: np.ndarray) -> np.ndarray:
    """``codes`` renumbered 0..k-1."""
    return np.unique(codes, return_inverse=True)[1].reshape(-1)


@dataclass(frozen=True)
class _Class:
    """One class of one group (its items ``s``, ``units``: codes 0..k-1), sorted once for
    every pair it takes part in: by score (stable: ``s_sorted``, ``units_by_score``) and by
    unit, within a unit by score (``starts`` of each unit; ``at``: where each item of that
    order lies in the score order, so that a search of the sorted scores, whose sorted needles
    it runs through once, is put in unit order by one gather)."""

    at: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    s_sorted: np.ndarray
    units_by_score: np.ndarray

    @property
    def n_units(self) -> int:
        return len(self.sizes)

    @property
    def n_items(self) -> int:
        return len(self.s_sorted)

    @classmethod
    def of(cls, s: np.ndarray, codes: np.ndarray, rows: np.ndarray | None = None):
        """The items ``rows`` (a mask; all when None) of scores ``s`` and unit codes ``codes``
        (renumbered 0..k-1 here); None when there are none."""
        if rows is not None:
            if not rows.any():
                return None
            s, codes = s[rows], _dense(codes[rows])
        return cls._sorted(s, codes)

    @classmethod
    def _sorted(cls, s: np.ndarray, units: np.ndarray) -> _Class:
        by_score = np.argsort(s, kind="stable")
        units_by_score = units[by_score]
        # by unit, each in score order (cache-friendly gathers): ``np.lexsort((s, units))``,
        # as a stable sort of the units of the (stable) score order
        at = np.argsort(units_by_score, kind="stable")
        return cls(
            at=at,
            starts=np.r_[0, np.flatnonzero(np.diff(units_by_score[at])) + 1],
            sizes=np.bincount(units),
            s_sorted=s[by_score],
            units_by_score=units_by_score,
        )

    def search(self, other: _Class, side: str) -> np.ndarray:
        """``np.searchsorted(other.s_sorted, self's scores in unit order, side)``."""
        return np.searchsorted(other.s_sorted, self.s_sorted, side)[self.at]


@dataclass(frozen=True)
class _Side:
    """One class of a pair, prepared for weighted placement sums against the other: its items
    ordered by unit (``starts`` of each unit) and within a unit by score, where each falls
    among the other class's sorted scores (``lo``/``hi``: before the equal ones, after them)
    and the other's units in that order."""

    starts: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    other_units: np.ndarray
    sizes: np.ndarray
    other_sizes: np.ndarray
    no_ties: bool  # no item ties with one of the other class: ``hi`` is ``lo``

    @classmethod
    def of(cls, s: np.ndarray, units: np.ndarray, s_other: np.ndarray, u_other: np.ndarray):
        return cls.pair(_Class._sorted(s, units), _Class._sorted(s_other, u_other))

    @classmethod
    def pair(cls, mine: _Class, other: _Class) -> _Side:
        """The side of ``mine`` against ``other`` (each sorted once: :class:`_Class`)."""
        lo, hi = mine.search(other, "left"), mine.search(other, "right")
        return cls(
            starts=mine.starts,
            lo=lo,
            hi=hi,
            other_units=other.units_by_score,
            sizes=mine.sizes,
            other_sizes=other.sizes,
            no_ties=bool(np.array_equal(lo, hi)),
        )

    def below(self, w_other: np.ndarray) -> np.ndarray:
        """``[reps, units]``: per unit, the other class's weight scored below its items (ties
        one half), summed over its items, the other class's units weighted by ``w_other``
        (whole-number multiplicities). Integer sums, so exact in any order, and an integer
        cumsum pipelines where a float one waits on each addition: int32 while twice the
        weighted item count fits, over blocks of replicates of :data:`_BELOW_CELLS`; a unit's
        sum in int32 too while its items times that fit."""
        most = int((w_other @ self.other_sizes).max()) * 2  # of one item's two cum values
        exact = np.int64 if most >= 2**31 else np.int32
        unit_sum = np.int64 if most * int(self.sizes.max()) >= 2**31 else np.int32
        n_other = len(self.other_units)
        step = max(1, _BELOW_CELLS // (n_other + 1))
        out = np.empty((len(w_other), len(self.starts)))
        for first in range(0, len(w_other), step):
            weights = w_other[first : first + step].astype(exact)
            cum = np.empty((len(weights), n_other + 1), dtype=exact)
            cum[:, 0] = 0
            np.take(weights, self.other_units, axis=1, out=cum[:, 1:])
            np.cumsum(cum[:, 1:], axis=1, dtype=exact, out=cum[:, 1:])
            at = np.take(cum, self.lo, axis=1)
            if not self.no_ties:
                at += np.take(cum, self.hi, axis=1)
            sums = np.add.reduceat(at, self.starts, axis=1, dtype=unit_sum)
            out[first : first + step] = sums if self.no_ties else sums * 0.5
        return out


def _weighted_auc(
    fake: _Side, real: _Side, w: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """AUC and Obuchowski's clustered variance (as
    :func:`evaluation.confidence.clustered_auc_variance`) of the data with fake unit ``i``
    repeated ``w[r, i]`` times and real unit ``j`` ``v[r, j]`` times, per row ``r``."""
    m, n = fake.sizes, real.sizes
    fakes_n, reals_n = w @ m, v @ n
    below = fake.below(v)  # per fake unit: real weight below its frames
    above = fakes_n[:, None] * n[None, :] - real.below(w)  # per real unit: fake weight above
    auc = np.sum(w * below, axis=1) / (fakes_n * reals_n)
    centred_f = below / reals_n[:, None] - m[None, :] * auc[:, None]
    centred_r = above / fakes_n[:, None] - n[None, :] * auc[:, None]
    k_f, k_r = w.sum(axis=1), v.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):  # one video of a class: NaN
        var = k_f / (k_f - 1) * np.sum(w * centred_f**2, axis=1) / fakes_n**2
        var += k_r / (k_r - 1) * np.sum(v * centred_r**2, axis=1) / reals_n**2
    return auc, var


def xauc_interval(
    s_fake: np.ndarray,
    u_fake: np.ndarray,
    s_real: np.ndarray,
    u_real: np.ndarray,
    *,
    n_boot: int,
    confidence: float,
    rng: np.random.Generator,
    max_cells: int = 1 << 21,
) -> tuple[float, float, float, str]:
    """``(auc, low, high, why)`` of fakes ``s_fake`` against reals ``s_real`` (units: codes
    0..k-1 of their videos), with a bootstrap-t interval on the logit scale.

    Coverage: the interval holds the true P(fake frame > real frame) in ``confidence`` of data
    sets. Each replicate draws the fake videos and the real videos with replacement, each class
    within itself (multiplicity weights), computes the AUC and its clustered variance and
    ``t = (logit A* - logit A) / se*``; the interval is
    ``logit A - t_(1-a/2) se, logit A - t_(a/2) se``, mapped back. The logit is taken of
    ``(A k + 1/2) / (k + 1)`` (``k``: fake videos x real videos), so that a replicate of AUC 1
    stays finite. ``why`` says why there is no interval (NaN bounds).
    """
    return _pair_interval(
        _Class._sorted(s_fake, u_fake), _Class._sorted(s_real, u_real), n_boot=n_boot,
        confidence=confidence, rng=rng, max_cells=max_cells,
    )  # fmt: skip


def _pair_interval(
    fakes: _Class,
    reals: _Class,
    *,
    n_boot: int,
    confidence: float,
    rng: np.random.Generator,
    max_cells: int,
) -> tuple[float, float, float, str]:
    """:func:`xauc_interval` of a group's fakes and a group's reals, each sorted once."""
    n_f, n_r = fakes.n_units, reals.n_units
    fake, real = _Side.pair(fakes, reals), _Side.pair(reals, fakes)
    auc, var = (
        float(x[0]) for x in _weighted_auc(fake, real, np.ones((1, n_f)), np.ones((1, n_r)))
    )
    nan = float("nan")
    if n_boot == 0:
        return auc, nan, nan, "intervals off"
    if min(n_f, n_r) < 2:
        return auc, nan, nan, "fewer than two videos of a class"
    if not 0.0 < auc < 1.0:
        return auc, nan, nan, f"AUC {auc:g}: complete separation, every replicate the same"
    if not var > 0.0:
        return auc, nan, nan, "variance 0: every video's placement is the same"
    pairs = n_f * n_r

    def logit_se(a: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        shrunk = (a * pairs + 0.5) / (pairs + 1)
        return np.log(shrunk / (1 - shrunk)), np.sqrt(v) / (shrunk * (1 - shrunk))

    centre, se = logit_se(np.array(auc), np.array(var))
    reps = max(1, max_cells // (fakes.n_items + reals.n_items))
    blocks = zip(
        bootstrap_multiplicities(rng, n_f, n_boot, max_cells=reps * n_f),
        bootstrap_multiplicities(rng, n_r, n_boot, max_cells=reps * n_r),
        strict=True,
    )
    ts = []
    for w, v in blocks:
        theta, se_star = logit_se(*_weighted_auc(fake, real, w, v))
        with np.errstate(divide="ignore", invalid="ignore"):
            ts.append(np.where(theta == centre, 0.0, (theta - centre) / se_star))
    # order statistics (no interpolation): a replicate without variance has an infinite t
    t_low, t_high = np.quantile(
        np.concatenate(ts), [(1 - confidence) / 2, (1 + confidence) / 2], method="inverted_cdf"
    )
    with np.errstate(over="ignore"):
        low, high = (
            1 / (1 + np.exp(-(centre - t_high * se))),
            1 / (1 + np.exp(-(centre - t_low * se))),
        )
    return auc, float(low), float(high), ""


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
    y, s, group, names, u = _clean(y_true, y_score, groups, units)
    point = lin_metrics(y, s, np.array(names, dtype=object)[group], threshold)
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
