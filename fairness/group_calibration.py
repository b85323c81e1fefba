"""Calibration within groups (issue 48, item 3): each group's ECE of P(fake) and the largest gap
between groups, with intervals clustered by video.

A score is calibrated within groups when, in every group, among the samples scored ``s`` a
share ``s`` is fake (Kleinberg, Mullainathan and Raghavan 2016; Pleiss et al. 2017). Each
group's ECE is :func:`evaluation.calibration.metrics.ece` of its rows (15 equal-width bins by
default, the bins of the whole data). The gap is signed, ``diff = ECE_a - ECE_b``, for the pair
of ranked groups furthest apart, ``a`` before ``b`` in sorted order, as
:mod:`fairness.gaps` reports every gap.

**Intervals**: one bootstrap over the cells (a unit's rows of one group and class; the unit is
the video unless the report names another), stratified by group x class so every replicate
keeps each group's class counts (``n - 1`` draws of ``n``, as :mod:`fairness.gaps`'s EER), as
multiplicity weights on per-cell bin sums (no rows copied).
Every group's ECE is computed on the same replicates, so the gap's interval is that of the
difference (a joint bootstrap), not two intervals side by side. ECEs are biased upwards in small
samples (each bin's ``|share - mean score|`` is above 0 by noise alone), more so in a smaller
group; the basic (reverse-percentile) interval ``[2 x - q_hi, 2 x - q_lo]`` corrects the bias
to first order, the group's interval clipped at 0. With more than two ranked groups the gap's
interval is simultaneous over the pairs (Bonferroni), as in :mod:`fairness.gaps`.

**Small-group rule** (that of :mod:`fairness.gaps`): a group under ``min_group_size`` rows is
reported but takes no part in the gap; a group with fewer than ``min_units`` units of a class
gets no interval and says why (``"fewer than 5 real videos (3)"``), nor does a gap it is part
of. Its coverage is simulated in :mod:`benchmarks.group_calibration_coverage`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from fairforensics.evaluation.calibration.metrics import (
    basic_interval,
    bin_edges,
    bin_of,
    video_bin_sums,
)
from fairforensics.evaluation.confidence import (
    MIN_INTERVAL_UNITS,
    check_interval_settings,
    few_units_note,
    stratified_multiplicities,
)
from fairforensics.evaluation.metrics import factorize
from fairforensics.fairness.abf import group_codes

log = logging.getLogger(__name__)

#: Equal-width bins of the ECE (Guo et al. 2017), as ``tables/calibration``.
N_BINS = 15
_CLASS_NAME = ("real", "fake")


@dataclass(frozen=True)
class CalibrationGap:
    """Signed ECE gap between groups ``a`` and ``b`` (``diff = ece_a - ece_b``) and its
    interval; ``note`` says why the interval (or the gap) is undefined."""

    group_a: str
    group_b: str
    ece_a: float
    ece_b: float
    diff: float
    low: float
    high: float
    note: str = ""


@dataclass(frozen=True)
class GroupCalibration:
    """Per group the ECE, its interval and why it has none; the gap; how it was computed."""

    groups: list[str]  # every group, sorted
    ranked: list[str]  # groups of >= min_group_size rows (the gap's candidates)
    ece: dict[str, float]
    ci: dict[str, tuple[float, float]]
    notes: dict[str, str]
    gap: CalibrationGap
    n_bins: int
    n_boot: int
    confidence: float

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class _CellSums:
    """Per cell (unit, group, class): each bin's sum of (label - score), its number of rows,
    its group and class."""

    diff: np.ndarray  # [cells, bins]
    rows: np.ndarray  # [cells]
    group: np.ndarray
    label: np.ndarray

    def ece(self, weights: np.ndarray, g: int) -> np.ndarray:
        """Group ``g``'s ECE under each row of cell ``weights`` ``[reps, cells]``."""
        members = self.group == g
        w = weights[:, members]
        return np.abs(w @ self.diff[members]).sum(axis=1) / (w @ self.rows[members])


def _cell_sums(
    y: np.ndarray, s: np.ndarray, group: np.ndarray, units: np.ndarray, n_groups: int, n_bins: int
) -> _CellSums:
    """The rows' cells and their bin sums (one bincount over the rows)."""
    keys = (units.astype(np.int64) * n_groups + group) * 2 + y
    uniq, cell = np.unique(keys, return_inverse=True)
    bins = bin_of(s, bin_edges(s, n_bins, "uniform"))
    diff, rows = video_bin_sums(y, s, cell.ravel(), bins, n_bins)
    return _CellSums(diff, rows.sum(axis=1), (uniq // 2) % n_groups, uniq % 2)


def _check(n_bins: int, n_boot: int, confidence: float, min_units: int) -> None:
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    check_interval_settings(n_boot, confidence, min_units)


def group_calibration(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    units: Sequence | None = None,
    *,
    n_bins: int = N_BINS,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    min_group_size: int = 1,
    min_units: int = MIN_INTERVAL_UNITS,
    unit_name: str = "videos",
) -> GroupCalibration:
    """Each group's ECE with its interval, and the signed gap between the ranked groups
    furthest apart with the interval of the difference (module docstring). ``units``: the
    resampling unit of each row (default: each row its own). Rows without a group are left
    out; fewer than two ranked groups is an error. ``n_boot`` 0: no intervals. Seeded."""
    _check(n_bins, n_boot, confidence, min_units)
    n_all = len(np.asarray(y_true))
    ids = np.arange(n_all) if units is None else np.asarray(units, dtype=object)
    if len(ids) != n_all:
        raise ValueError(f"units must have one entry per sample ({n_all}), got {len(ids)}")
    known, y, s, gcode, names = group_codes(y_true, y_score, groups)
    size = np.bincount(gcode, minlength=len(names))
    ranked = [g for g, n in zip(names, size, strict=True) if n >= min_group_size]
    if len(ranked) < 2:
        sizes = dict(zip(names, size.tolist(), strict=True))
        raise ValueError(f"an ECE gap needs two groups of >= {min_group_size} rows; sizes {sizes}")
    cells = _cell_sums(y, s, gcode, factorize(ids[known])[0], len(names), n_bins)
    all_cells = np.ones((1, len(cells.rows)))
    ece = {g: float(cells.ece(all_cells, k)[0]) for k, g in enumerate(names)}
    notes = {g: _few_units(cells, k, min_units, unit_name) for k, g in enumerate(names)}
    notes = {g: n for g, n in notes.items() if n}
    replicates = _replicates(cells, len(names), n_boot, seed) if n_boot else None
    nan = (float("nan"), float("nan"))
    ci = {}
    for k, g in enumerate(names):
        if replicates is None or g in notes:
            ci[g] = nan
            continue
        low, high = basic_interval(ece[g], replicates[:, k], confidence)
        ci[g] = (max(0.0, low), max(0.0, high))
    gap = _gap(ece, ranked, names, notes, replicates, confidence)
    return GroupCalibration(names, ranked, ece, ci, notes, gap, n_bins, n_boot, confidence)


def _few_units(cells: _CellSums, g: int, min_units: int, unit_name: str) -> str:
    """Why group ``g`` gets no interval: a class with fewer than ``min_units`` units."""
    counts = np.bincount(cells.label[cells.group == g], minlength=2)
    return "; ".join(
        filter(None, (few_units_note(int(counts[c]), f"{_CLASS_NAME[c]} {unit_name}", min_units)
                      for c in (0, 1)))
    )  # fmt: skip


def _replicates(cells: _CellSums, n_groups: int, n_boot: int, seed: int) -> np.ndarray:
    """``[n_boot, groups]``: every group's ECE on the same replicates, ``n - 1`` of the ``n``
    cells of each group x class drawn with replacement (multiplicity weights)."""
    rng = np.random.default_rng(seed)
    strata = cells.group * 2 + cells.label
    blocks = [
        np.stack([cells.ece(w, g) for g in range(n_groups)], axis=1)
        for w in stratified_multiplicities(rng, strata, n_boot)
    ]
    return np.concatenate(blocks)


def _gap(
    ece: dict[str, float],
    ranked: list[str],
    names: list[str],
    notes: dict[str, str],
    replicates: np.ndarray | None,
    confidence: float,
) -> CalibrationGap:
    """The signed gap of the ranked groups furthest apart with its basic interval of the
    difference, simultaneous over the pairs."""
    order = sorted(ranked, key=lambda g: (ece[g], g))  # distinct ends even when all equal
    a, b = sorted((order[0], order[-1]))
    diff = ece[a] - ece[b]
    nan = float("nan")
    why = "; ".join(f"{g}: {notes[g]}" for g in (a, b) if g in notes)
    if replicates is None:
        return CalibrationGap(a, b, ece[a], ece[b], diff, nan, nan, why or "intervals off")
    if why:
        return CalibrationGap(a, b, ece[a], ece[b], diff, nan, nan, why)
    pairs = len(ranked) * (len(ranked) - 1) / 2
    pair_conf = 1.0 - (1.0 - confidence) / pairs
    ia, ib = names.index(a), names.index(b)
    low, high = basic_interval(diff, replicates[:, ia] - replicates[:, ib], pair_conf)
    return CalibrationGap(a, b, ece[a], ece[b], diff, low, high)
