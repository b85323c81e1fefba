"""Signed gaps between groups with intervals that keep their level and class-stratified
permutation tests.

For each metric (ACC, AUC, EER, FPR = BPCER and FNR = APCER at the decision threshold, balanced
error rate) the gap is reported *signed*: ``diff = value_a - value_b`` for the pair ``(a, b)`` of
groups with the largest absolute difference, ``a`` before ``b`` in sorted order (with two groups
this is fixed in advance, e.g. ``female - male``), and ``favoured`` names the group with the
better value. Why signed: the max-min gap is never negative, so a percentile bootstrap of it
excludes 0 even when there is no gap (issue 17); the signed difference of a pair fixed in
advance is centred on the true difference and its interval covers 0 at the nominal rate.

The data are *cells*: the rows of one unit (video, or subject with ``units``) of one group and
one class. Frames of a video are not independent, so every method below works on cells.

* **Error-rate intervals** (FPR, FNR, and ACC and the balanced error rate, which are fixed
  combinations of a group's FPR and FNR given its real/fake counts): a Wilson score interval
  per group and class on the *effective* number of frames, ``N / deff`` with Kish's design
  effect ``1 + (m_w - 1) ICC`` (ICC: ANOVA estimate over the class's videos of every group,
  :func:`evaluation.confidence.cluster_icc`); gaps and combinations by MOVER (Newcombe's hybrid
  score interval for a difference of two rates). Why not the percentile bootstrap: with 6-12
  videos of a class it covers a null FPR gap only 82-87 % of the time (issue 23), because a
  small group whose few videos happen to have no error resamples to a rate of exactly 0.
* **AUC intervals**: normal intervals with Obuchowski's clustered variance (DeLong's placement
  values summed per video, :func:`evaluation.confidence.clustered_auc_variance`); per group
  clipped to [0, 1]. Measured: the percentile bootstrap covers a null AUC gap 0.88 of the time
  with 6-12 real videos, this 0.92-0.97 (docs/fairness.md, "Calibration").
* **EER intervals**: percentile bootstrap stratified by group x class, drawing ``n - 1`` of
  the ``n`` cells of each stratum (:func:`evaluation.confidence.stratified_multiplicities`),
  so each replicate keeps every group's class counts.
* **Too small**: a group with fewer than ``min_units`` cells of a class gets no interval for the
  metrics that need that class, and says so (:attr:`GapAnalysis.notes`, :attr:`Gap.note`).
* **p-value**: permutation test of "no difference among all groups" **within each class**: the
  group labels are shuffled among the real cells and, separately, among the fake cells, so
  every group keeps its real/fake counts. The null hypothesis is that a video's scores do not
  depend on its group *given its class*; FPR (BPCER) is compared among real videos only and FNR
  (APCER) among fakes only. For ACC, which mixes the two with each group's class ratio, the test
  asks whether the ACC gap exceeds what the groups' class mixes give with equal error rates.
  (Shuffling over all videos, as before issue 23, compares groups with different numbers of
  negatives and rejects a true null 8-22 % of the time when the class mix differs.) The statistic
  is the max-min spread over the ranked groups (with two groups ``|diff|``);
  ``p = (1 + #{spread_perm >= spread}) / (1 + #valid permutations)``. With more than two groups
  the interval belongs to the pair chosen *after* looking at the data; the p-value is the test
  that accounts for the choice.
* **Class-ratio check** (:func:`class_ratio_check`): ACC mixes FPR and FNR with the group's
  real/fake ratio, so groups with equal error rates but different mixes get different ACC (a
  detector that calls every face fake has ACC = share of fakes). The ACC gap is split into the
  part the mix alone gives (pooled FPR/FNR applied to each group's mix) and the rest, and the
  FPR/FNR permutation tests say whether the error rates differ at all.

:func:`curve_auc_intervals` gives bootstrap intervals of FDR-AUC / ABF-AUC and
:func:`iso_group_intervals` of one group's ISO APCER / BPCER / EER under a species rule, with
the same stratified resampling of cells.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from fairforensics.evaluation.confidence import (
    MIN_INTERVAL_UNITS,
    UnitWeightedCurve,
    bootstrap_interval,
    check_interval_settings,
    cluster_icc,
    clustered_auc_variance,
    effective_size,
    few_units_note,
    mover_interval,
    percentile_interval,
    stratified_multiplicities,
    too_few_units,
    weighted_ranking_metrics,
    wilson_interval,
)
from fairforensics.evaluation.metrics import _rank, factorize
from fairforensics.evaluation.sorted_subsets import SortedSubsets
from fairforensics.fairness.abf import (
    POOLED,
    FairnessCurves,
    curve_areas,
    curves_of_rates,
    group_codes,
)
from fairforensics.fairness.iso import apcer_rule, check_species_rule, eer_species

log = logging.getLogger(__name__)

#: Gap metrics; True where a higher value is better.
HIGHER_IS_BETTER: dict[str, bool] = {
    "acc": True,
    "auc": True,
    "eer": False,
    "fpr": False,
    "fnr": False,
    "error_rate": False,
}
GAP_METRICS: tuple[str, ...] = tuple(HIGHER_IS_BETTER)
_COUNT_METRICS = ("acc", "fpr", "fnr", "error_rate")
_RANKING_METRICS = ("auc", "eer")
_PERM_BLOCK_CELLS = 1 << 21
_CLASS_NAME = ("real", "fake")


@dataclass(frozen=True)
class Gap:
    """Signed gap of one metric between groups ``a`` and ``b`` (``diff = value_a - value_b``)."""

    metric: str
    group_a: str
    group_b: str
    value_a: float
    value_b: float
    diff: float
    low: float  # interval of diff
    high: float
    p_value: float  # class-stratified permutation test of no difference among ranked groups
    spread: float  # max - min over all ranked groups (|diff| with two groups)
    favoured: str  # group with the better value; "" when equal or undefined
    n_boot_valid: int
    n_perm_valid: int
    note: str = ""  # why the interval (or the gap) is undefined, or what was left out

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class GapAnalysis:
    """Gaps per metric, per-group intervals, and the class-ratio check of the ACC gap."""

    groups: list[str]  # every group, sorted
    ranked: list[str]  # groups used for gaps and tests (size >= min_group_size)
    values: dict[str, dict[str, float]]  # group -> metric -> point value
    group_ci: dict[str, dict[str, tuple[float, float]]]  # group -> metric -> interval
    gaps: dict[str, Gap]
    class_ratio: dict[str, object]
    confidence: float
    notes: dict[str, dict[str, str]] = field(default_factory=dict)  # group -> metric -> why


def _count_metrics(c: np.ndarray) -> dict[str, np.ndarray]:
    """Metrics from summed counts ``[..., 4]`` = (n_real, n_fake, false positives, false negatives)."""
    n_real, n_fake, fp, fn = (c[..., k].astype(np.float64) for k in range(4))
    with np.errstate(invalid="ignore", divide="ignore"):
        fpr = np.where(n_real > 0, fp / n_real, np.nan)
        fnr = np.where(n_fake > 0, fn / n_fake, np.nan)
        n = n_real + n_fake
        return {
            "acc": np.where(n > 0, 1.0 - (fp + fn) / n, np.nan),
            "fpr": fpr,
            "fnr": fnr,
            "error_rate": (fpr + fnr) / 2.0,
        }


@dataclass
class _Cells:
    """Rows grouped into (unit, group, class) cells with their confusion counts."""

    row_cell: np.ndarray  # cell of each row
    group: np.ndarray  # group index of each cell
    label: np.ndarray  # class (0 real, 1 fake) of each cell
    counts: np.ndarray  # [n_cells, 4]: n_real, n_fake, false positives, false negatives

    @property
    def frames(self) -> np.ndarray:
        return self.counts[:, 0] + self.counts[:, 1]

    @property
    def errors(self) -> np.ndarray:
        return self.counts[:, 2] + self.counts[:, 3]

    def of_group(self, g: int) -> np.ndarray:
        return self.counts[self.group == g].sum(axis=0)


def _cells(
    y_true: np.ndarray, y_pred: np.ndarray, group: np.ndarray, units: np.ndarray, n_groups: int
) -> _Cells:
    """Cells of the rows: ``group`` holds each row's group index, ``units`` its unit's rank in
    the sorted unit names (cells in the order of (unit, group, class))."""
    keys = (units.astype(np.int64) * n_groups + group) * 2 + y_true
    uniq, codes = np.unique(keys, return_inverse=True)
    codes = codes.ravel()
    n = len(uniq)
    real, fake = y_true == 0, y_true == 1
    counts = np.stack(
        [
            np.bincount(codes, weights=real, minlength=n),
            np.bincount(codes, weights=fake, minlength=n),
            np.bincount(codes, weights=real & (y_pred == 1), minlength=n),
            np.bincount(codes, weights=fake & (y_pred == 0), minlength=n),
        ],
        axis=1,
    )
    return _Cells(codes, (uniq // 2) % n_groups, uniq % 2, counts)


@dataclass(frozen=True)
class _Rate:
    """One group's error rate in one class and its effective number of frames."""

    value: float
    n_eff: float  # frames / design effect
    weight: float  # the class's share of the group's rows (ACC mixes the rates with it)
    note: str  # why there is no interval ("" when there is one)

    def bounds(self, confidence: float) -> tuple[float, float]:
        low, high = wilson_interval(self.value, self.n_eff, confidence)
        return float(low), float(high)


def _class_rates(c: _Cells, n_groups: int, min_units: int, unit_name: str) -> list[list[_Rate]]:
    """``[group][class]`` rates; the ICC of each class is estimated over every group's cells."""
    out: list[list[_Rate]] = [[] for _ in range(n_groups)]
    frames, errors = c.frames, c.errors
    total = np.bincount(c.group, weights=frames, minlength=n_groups)
    for k in (0, 1):
        cls = c.label == k
        icc = cluster_icc(errors[cls], frames[cls], c.group[cls])
        for g in range(n_groups):
            cells = cls & (c.group == g)
            n_units, n = int(cells.sum()), frames[cells].sum()
            if n_units == 0:
                out[g].append(_Rate(np.nan, 0.0, 0.0, f"no {_CLASS_NAME[k]} {unit_name}"))
                continue
            p, weight = float(errors[cells].sum() / n), float(n / total[g])
            note = few_units_note(n_units, f"{_CLASS_NAME[k]} {unit_name}", min_units)
            out[g].append(_Rate(p, effective_size(frames[cells], icc), weight, note))
    return out


def _linear_terms(metric: str, r: list[_Rate]) -> tuple[float, list[tuple[float, _Rate]]]:
    """``metric = constant + sum coef * rate`` of one group (its real and fake error rates)."""
    if metric == "fpr":
        return 0.0, [(1.0, r[0])]
    if metric == "fnr":
        return 0.0, [(1.0, r[1])]
    if metric == "error_rate":
        return 0.0, [(0.5, r[0]), (0.5, r[1])]
    return 1.0, [(-r[0].weight, r[0]), (-r[1].weight, r[1])]  # acc


def _rate_interval(
    metric: str, per_group: list[list[_Rate]], confidence: float, a: int, b: int | None = None
) -> tuple[float, float, str]:
    """MOVER interval of group ``a``'s metric, or of ``a - b``; NaN with the reason when a rate
    it needs has no interval."""
    const, terms = _linear_terms(metric, per_group[a])
    if b is not None:
        const_b, terms_b = _linear_terms(metric, per_group[b])
        const -= const_b
        terms = terms + [(-coef, rate) for coef, rate in terms_b]
    used = [(coef, rate) for coef, rate in terms if coef != 0]
    notes = [rate.note for _, rate in used if rate.note]
    if notes:
        return np.nan, np.nan, "; ".join(dict.fromkeys(notes))
    parts = [(coef, r.value, *r.bounds(confidence)) for coef, r in used]
    _, low, high = mover_interval(parts, const)
    return low, high, ""


def _eer_replicates(
    c: _Cells,
    g: int,
    y_true: np.ndarray,
    y_score: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """EER of ``n_boot`` replicates of group ``g``: its cells resampled within class (each
    replicate's curve from the cells' multiplicities, one sort)."""
    members = np.flatnonzero(c.group == g)
    local = np.full(len(c.group), -1)
    local[members] = np.arange(len(members))
    rows = np.flatnonzero(local[c.row_cell] >= 0)
    curve = UnitWeightedCurve(
        _rank(y_true[rows], y_score[rows]), local[c.row_cell[rows]], len(members)
    )
    out = [
        curve.eer(w)
        for block in stratified_multiplicities(rng, c.label[members], n_boot)
        for w in block
    ]
    return np.asarray(out, dtype=np.float64)


def _normal_interval(value: float, var: float, confidence: float) -> tuple[float, float]:
    """``value -/+ z sqrt(var)``; NaN where the variance is undefined."""
    half = stats.norm.ppf(0.5 + confidence / 2.0) * np.sqrt(var)
    return float(value - half), float(value + half)


def _ranking_note(rates: list[_Rate]) -> str:
    """Why a group's AUC/EER interval is undefined: a class with too few units."""
    return "; ".join(r.note for r in rates if r.note)


def _permuted_values(
    c: _Cells,
    ranked: list[int],
    y_true: np.ndarray,
    y_score: np.ndarray,
    metrics: Sequence[str],
    n_perm: int,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Per metric ``[n_perm, len(ranked)]`` values with the group labels of the cells permuted
    within each class (every group keeps its numbers of real and fake cells)."""
    pool = np.flatnonzero(np.isin(c.group, ranked))
    labels = c.group[pool]
    by_class = [np.flatnonzero(c.label[pool] == k) for k in (0, 1)]
    rows = np.flatnonzero(np.isin(c.group[c.row_cell], ranked))
    rows = rows[np.argsort(y_score[rows], kind="stable")[::-1]]  # highest score first
    pos = np.full(len(c.group), -1)
    pos[pool] = np.arange(len(pool))
    row_pos = pos[c.row_cell[rows]]
    want_rank = [m for m in metrics if m in _RANKING_METRICS]
    subsets = SortedSubsets(y_score[rows], y_true[rows]) if want_rank else None
    small = np.min_scalar_type(max(ranked))  # each row's group in one byte: a cheap gather
    row_group = np.empty(len(rows), dtype=small)
    out: dict[str, list[np.ndarray]] = {m: [] for m in metrics}
    per_block = max(1, _PERM_BLOCK_CELLS // len(pool))
    done = 0
    while done < n_perm:
        reps = min(per_block, n_perm - done)
        perm = np.empty((reps, len(pool)), dtype=labels.dtype)
        for idx in by_class:
            perm[:, idx] = rng.permuted(np.broadcast_to(labels[idx], (reps, len(idx))), axis=1)
        cols: dict[str, list[np.ndarray]] = {m: [] for m in metrics}
        for g in ranked:
            values = _count_metrics((perm == g).astype(np.float64) @ c.counts[pool])
            for m in metrics:
                if m in values:
                    cols[m].append(values[m])
        if want_rank:  # each permutation's groups: subsets of the rows sorted once
            ranking = np.empty((2, reps, len(ranked)))
            for p, labels_p in enumerate(perm):
                np.take(labels_p.astype(small), row_pos, out=row_group, mode="clip")
                for j, g in enumerate(ranked):
                    ranking[:, p, j] = subsets.auc_eer(row_group, g)
            for k, m in enumerate(_RANKING_METRICS):
                if m in want_rank:
                    cols[m] = list(ranking[k].T)
        for m in metrics:
            out[m].append(np.stack(cols[m], axis=1))
        done += reps
    return {m: np.concatenate(v) for m, v in out.items()}


def _spread(values: np.ndarray) -> np.ndarray:
    """Max - min over the last axis of the defined values; NaN with fewer than two."""
    defined = np.isfinite(values)
    enough = defined.sum(axis=-1) >= 2
    hi = np.where(defined, values, -np.inf).max(axis=-1)
    lo = np.where(defined, values, np.inf).min(axis=-1)
    return np.where(enough, hi - lo, np.nan)


def _favoured(metric: str, a: str, b: str, diff: float) -> str:
    if not np.isfinite(diff) or diff == 0:
        return ""
    return a if (diff > 0) == HIGHER_IS_BETTER[metric] else b


@dataclass
class _GapData:
    """One :func:`group_gaps` call's rows (groups known), their cells and per-class rates."""

    y: np.ndarray
    s: np.ndarray
    group: np.ndarray  # group index of each row (in ``names``)
    cells: _Cells
    names: list[str]  # every group, sorted
    ranked: list[str]  # groups of >= min_group_size rows
    rates: list[list[_Rate]]  # [group][class]


@dataclass
class _GroupFigures:
    """Per group: each metric's value, interval and why it has none, and what the gaps reuse
    (EER bootstrap replicates, the clustered AUC variance)."""

    values: dict[str, dict[str, float]] = field(default_factory=dict)
    ci: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    notes: dict[str, dict[str, str]] = field(default_factory=dict)
    eer_boot: dict[str, np.ndarray] = field(default_factory=dict)
    auc_var: dict[str, float] = field(default_factory=dict)


def _check_gap_arguments(
    metrics: Sequence[str], n_boot: int, n_perm: int, confidence: float, min_units: int
) -> None:
    unknown = sorted(set(metrics) - set(GAP_METRICS))
    if unknown:
        raise ValueError(f"unknown gap metrics {unknown}; allowed: {list(GAP_METRICS)}")
    if n_perm < 0:
        raise ValueError(f"n_perm must be >= 0, got {n_perm}")
    check_interval_settings(n_boot, confidence, min_units)


def _gap_data(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    units: Sequence | None,
    threshold: float,
    min_group_size: int,
    min_units: int,
    unit_name: str,
) -> _GapData:
    """The rows with a group, their cells and rates; groups under ``min_group_size`` rows are
    kept but not ranked (a warning), fewer than two ranked groups is an error."""
    n_all = len(np.asarray(y_true))
    ids = np.arange(n_all) if units is None else np.asarray(units, dtype=object)
    if len(ids) != n_all:
        raise ValueError(f"units must have one entry per sample ({n_all}), got {len(ids)}")
    known, y, s, gcode, names = group_codes(y_true, y_score, groups)
    size = dict(zip(names, np.bincount(gcode, minlength=len(names)).tolist(), strict=True))
    ranked = [g for g in names if size[g] >= min_group_size]
    small = [g for g in names if g not in ranked]
    if small:
        log.warning(
            "groups %s have fewer than %d rows: reported, but not used for gaps and tests",
            small,
            min_group_size,
        )
    if len(ranked) < 2:
        raise ValueError(
            f"gaps need at least two groups of >= {min_group_size} rows; sizes: {size}"
        )
    units = factorize(ids[known])[0]  # ranks in the order of the unit names as strings
    cells = _cells(y, (s >= threshold).astype(np.int64), gcode, units, len(names))
    rates = _class_rates(cells, len(names), min_units, unit_name)
    return _GapData(y, s, gcode, cells, names, ranked, rates)


def _group_figures(
    d: _GapData,
    metrics: Sequence[str],
    n_boot: int,
    confidence: float,
    rng: np.random.Generator,
) -> _GroupFigures:
    """Every group's value of each metric and its interval (module docstring)."""
    out = _GroupFigures()
    want_rank = [m for m in metrics if m in _RANKING_METRICS]
    for gi, g in enumerate(d.names):
        counted = _count_metrics(d.cells.of_group(gi))
        point = {m: float(counted[m]) for m in metrics if m in counted}
        rows = d.group == gi
        if want_rank:
            r = weighted_ranking_metrics(d.y[rows], d.s[rows], [np.ones(int(rows.sum()))])
            point.update({m: float(r[m][0]) for m in want_rank})
        out.values[g] = {m: point[m] for m in metrics}
        out.ci[g], out.notes[g] = {}, {}
        for m in metrics:
            low, high, note = _group_interval(d, out, m, gi, n_boot, confidence, rng)
            out.ci[g][m] = (float(low), float(high))
            if note:
                out.notes[g][m] = note
    return out


def _group_interval(
    d: _GapData,
    figures: _GroupFigures,
    m: str,
    gi: int,
    n_boot: int,
    confidence: float,
    rng: np.random.Generator,
) -> tuple[float, float, str]:
    """Group ``gi``'s interval of metric ``m`` and why it has none (records what gaps reuse)."""
    g = d.names[gi]
    value = figures.values[g][m]
    if not n_boot:
        return np.nan, np.nan, ""
    if not np.isfinite(value):
        return np.nan, np.nan, f"{m} undefined"
    if m in _COUNT_METRICS:
        return _rate_interval(m, d.rates, confidence, gi)
    note = _ranking_note(d.rates[gi])
    if m == "auc":
        if not note:
            rows = d.group == gi
            figures.auc_var[g] = clustered_auc_variance(
                d.y[rows], d.s[rows], d.cells.row_cell[rows]
            )[1]
        low, high = _normal_interval(value, figures.auc_var.get(g, np.nan), confidence)
        return max(low, 0.0), min(high, 1.0), note
    if note:
        return np.nan, np.nan, note
    figures.eer_boot[g] = _eer_replicates(d.cells, gi, d.y, d.s, n_boot, rng)
    return bootstrap_interval(figures.eer_boot[g], confidence, "bootstrap replicates")


def _pair_gap(
    d: _GapData,
    figures: _GroupFigures,
    m: str,
    permuted: dict[str, np.ndarray],
    n_boot: int,
    confidence: float,
) -> Gap:
    """The signed gap of metric ``m`` between the ranked groups furthest apart, its interval
    (simultaneous over the pairs) and its permutation p-value."""
    values = figures.values
    point = np.array([values[g][m] for g in d.ranked])
    spread = float(_spread(point))
    defined = [i for i, v in enumerate(point) if np.isfinite(v)]
    if len(defined) < 2:
        undefined = [g for g in d.ranked if not np.isfinite(values[g][m])]
        why = f"{m} undefined in {undefined}: fewer than two groups have it"
        nan = float("nan")
        return Gap(m, "", "", nan, nan, nan, nan, nan, nan, spread, "", 0, 0, why)
    order = sorted(defined, key=lambda k: (point[k], k))
    i, j = order[0], order[-1]  # distinct even when every value is equal
    a, b = sorted((d.ranked[i], d.ranked[j]))
    diff = values[a][m] - values[b][m]
    low = high = float("nan")
    note, n_boot_valid = "", 0
    # simultaneous over the pairs (Bonferroni): the pair is chosen after looking at the data
    pair_conf = 1.0 - (1.0 - confidence) / (len(defined) * (len(defined) - 1) / 2)
    if n_boot and m in _COUNT_METRICS:
        ia, ib = d.names.index(a), d.names.index(b)
        own = {a: _rate_interval(m, d.rates, confidence, ia)[2]}
        own[b] = _rate_interval(m, d.rates, confidence, ib)[2]
        note = _named_notes(own)
        if not note:
            low, high, note = _rate_interval(m, d.rates, pair_conf, ia, ib)
    elif n_boot:
        note = _named_notes({g: figures.notes[g].get(m, "") for g in (a, b)})
        if not note and m == "auc":
            var = figures.auc_var[a] + figures.auc_var[b]
            low, high = _normal_interval(diff, var, pair_conf)
        elif not note:
            replicates = figures.eer_boot[a] - figures.eer_boot[b]
            n_boot_valid = int(np.isfinite(replicates).sum())
            low, high, note = bootstrap_interval(replicates, pair_conf, "bootstrap replicates")
    p, n_perm_valid = float("nan"), 0
    if permuted:
        spreads = _spread(permuted[m])
        spreads = spreads[np.isfinite(spreads)]
        n_perm_valid = int(spreads.size)
        p = float((1 + np.sum(spreads >= spread - 1e-12)) / (1 + spreads.size))
    return Gap(
        metric=m,
        group_a=a,
        group_b=b,
        value_a=values[a][m],
        value_b=values[b][m],
        diff=diff,
        low=float(low),
        high=float(high),
        p_value=p,
        spread=spread,
        favoured=_favoured(m, a, b, diff),
        n_boot_valid=n_boot_valid,
        n_perm_valid=n_perm_valid,
        note=note,
    )


def _named_notes(notes: dict[str, str]) -> str:
    """Why an interval is undefined: each group's own reason, named (``"bright: fewer than 5 real
    videos (4)"``); "" when none has one."""
    return "; ".join(f"{g}: {note}" for g, note in notes.items() if note)


def group_gaps(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    units: Sequence | None = None,
    *,
    metrics: Sequence[str] = GAP_METRICS,
    threshold: float = 0.5,
    n_boot: int = 1000,
    n_perm: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    min_group_size: int = 1,
    min_units: int = MIN_INTERVAL_UNITS,
    unit_name: str = "videos",
) -> GapAnalysis:
    """Signed gaps, their intervals and class-stratified permutation p-values (module docstring).

    ``units``: the cluster of each row (video or subject id; None: each row is its own unit).
    Groups with fewer than ``min_group_size`` rows are reported (values, intervals) but take
    no part in the gaps and tests. A group with fewer than ``min_units`` units of a class gets
    no interval for the metrics that need the class (the reason is in ``notes`` / ``Gap.note``;
    ``unit_name`` names the units there). ``n_boot`` 0 switches every interval off (NaN),
    ``n_perm`` 0 the tests. Seeded: the same inputs give the same result.
    """
    _check_gap_arguments(metrics, n_boot, n_perm, confidence, min_units)
    d = _gap_data(y_true, y_score, groups, units, threshold, min_group_size, min_units, unit_name)
    rng = np.random.default_rng(seed)
    figures = _group_figures(d, metrics, n_boot, confidence, rng)
    ranked = [d.names.index(g) for g in d.ranked]
    permuted = _permuted_values(d.cells, ranked, d.y, d.s, metrics, n_perm, rng) if n_perm else {}
    gaps = {m: _pair_gap(d, figures, m, permuted, n_boot, confidence) for m in metrics}
    check = class_ratio_check(d.cells, d.names, gaps, 1.0 - confidence) if "acc" in gaps else {}
    return GapAnalysis(
        d.names, d.ranked, figures.values, figures.ci, gaps, check, confidence, figures.notes
    )


def class_ratio_check(
    c: _Cells, names: list[str], gaps: dict[str, Gap], level: float
) -> dict[str, object]:
    """Split the ACC gap into the part the real/fake mix alone explains and the rest.

    With the pooled FPR and FNR of the two groups, group g's ACC would be
    ``1 - (share_real_g FPR + share_fake_g FNR)``; ``mix_part`` is the difference of these
    between ``a`` and ``b``, ``rate_part = diff - mix_part``. ``verdict`` is one line.
    """
    acc = gaps["acc"]
    if not acc.group_a:
        return {"verdict": "ACC gap undefined"}
    ia, ib = names.index(acc.group_a), names.index(acc.group_b)
    ca, cb = c.of_group(ia), c.of_group(ib)
    pooled = _count_metrics(ca + cb)
    fpr_all, fnr_all = float(pooled["fpr"]), float(pooled["fnr"])
    share = {g: c[0] / (c[0] + c[1]) for g, c in ((acc.group_a, ca), (acc.group_b, cb))}
    d_real = share[acc.group_a] - share[acc.group_b]
    mix_part = -(d_real * fpr_all - d_real * fnr_all)  # share_fake difference is -d_real
    if not np.isfinite(mix_part):
        mix_part = 0.0 if d_real == 0 else float("nan")
    rate_part = acc.diff - mix_part
    rates = {g: _count_metrics(c) for g, c in ((acc.group_a, ca), (acc.group_b, cb))}
    ra, rb = rates[acc.group_a], rates[acc.group_b]
    comparable = [k for k in ("fpr", "fnr") if np.isfinite(ra[k]) and np.isfinite(rb[k])]
    p_rates = {
        k.upper(): gaps[k].p_value for k in comparable if k in gaps and np.isfinite(gaps[k].p_value)
    }
    rate_text = f"FPR {_pct(ra['fpr'])}/{_pct(rb['fpr'])}, FNR {_pct(ra['fnr'])}/{_pct(rb['fnr'])}"
    mix_text = (
        f"real share {_pct(share[acc.group_a])}/{_pct(share[acc.group_b])} "
        f"({acc.group_a}/{acc.group_b})"
    )
    share_text = (
        f"the real/fake mix ({mix_text}) alone gives {_pct(mix_part, signed=True)} of the "
        f"{_pct(acc.diff, signed=True)} gap"
    )
    if abs(d_real) < 1e-12:
        verdict = f"not a class-ratio effect: same real/fake mix ({mix_text}); {rate_text}"
    elif not comparable:
        verdict = (
            f"cannot be told apart from a class-ratio effect: no error rate is defined in both "
            f"groups ({rate_text}); {share_text}"
        )
    elif all(ra[k] == rb[k] for k in comparable):
        verdict = (
            f"class-ratio effect: error rates equal ({rate_text}), only the real/fake mix "
            f"differs ({mix_text})"
        )
    elif len(p_rates) < len(comparable):
        verdict = f"error rates {rate_text} (not tested: permutations off); {share_text}"
    elif min(p_rates.values()) >= level:
        tests = ", ".join(f"{k} p = {v:.3g}" for k, v in p_rates.items())
        verdict = (
            f"could be a class-ratio effect: error rates do not differ significantly "
            f"({rate_text}; {tests}); {share_text}"
        )
    else:
        verdict = f"error rates differ ({rate_text}): not only a class-ratio effect; {share_text}"
    return {
        "groups": [acc.group_a, acc.group_b],
        "real_share": [float(share[acc.group_a]), float(share[acc.group_b])],
        "fpr": [float(rates[acc.group_a]["fpr"]), float(rates[acc.group_b]["fpr"])],
        "fnr": [float(rates[acc.group_a]["fnr"]), float(rates[acc.group_b]["fnr"])],
        "mix_part": float(mix_part),
        "rate_part": float(rate_part),
        "verdict": verdict,
    }


def _pct(v: float, signed: bool = False) -> str:
    """A share in percent with one decimal, as every table shows it."""
    if v is None or not np.isfinite(v):
        return "undefined"
    return f"{100 * v:+.1f}%" if signed else f"{100 * v:.1f}%"


def curve_auc_intervals(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    units: Sequence | None,
    *,
    xs: Sequence[float],
    alpha: float = 0.5,
    threshold_groups: Sequence[str] = (POOLED,),
    min_denominator: float = 1e-3,
    species: Sequence | None = None,
    species_rule: str = "pooled",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    min_units: int = MIN_INTERVAL_UNITS,
    unit_name: str = "videos",
) -> dict[str, dict[str, object]]:
    """Bootstrap intervals of FDR-AUC and ABF-AUC for each threshold group.

    Cells (a unit's rows of one class) are resampled within each group x class (``n`` draws
    per stratum); the curves are recomputed on every replicate (tau included). FDR and ABF
    are built from absolute gaps, so resampling noise pulls them down: these percentile
    intervals describe the spread, they are not calibrated like the gap intervals. Returns ``{threshold_group: {"fdr_auc": (low, high), "abf_auc":
    (low, high), "notes": {key: text}}}``. An interval is undefined (NaN, with the reason in
    ``notes``) when a group has fewer than ``min_units`` units of a class it holds, or when
    more than half of the replicates give an undefined curve; a note also says how many
    replicates were left out otherwise.
    """
    check_species_rule(species_rule)
    n_all = len(np.asarray(y_true))
    ids = np.arange(n_all) if units is None else np.asarray(units, dtype=object)
    spc = np.full(n_all, "attack", dtype=object) if species is None else np.asarray(species)
    if len(ids) != n_all or len(spc) != n_all:
        raise ValueError(f"units and species must have one entry per sample ({n_all})")
    known, y, s, gcode, names = group_codes(y_true, y_score, groups)
    ids, spc = ids[known], spc[known]
    c = _cells(y, (s >= 0.5).astype(np.int64), gcode, factorize(ids)[0], len(names))
    strata = 2 * c.group + c.label
    too_few: dict[str, str] = {}
    for h, n in enumerate(np.bincount(strata, minlength=2 * len(names))):
        if n > 0 and too_few_units(n, min_units):
            why = few_units_note(n, f"{_CLASS_NAME[h % 2]} {unit_name}", min_units)
            name = names[h // 2]
            too_few[name] = f"{too_few[name]}, {why}" if name in too_few else why
    keys = ("fdr_auc", "abf_auc")
    if too_few:
        note = _named_notes(too_few)
        nan = (float("nan"), float("nan"))
        return {
            tg: {**dict.fromkeys(keys, nan), "notes": dict.fromkeys(keys, note)}
            for tg in threshold_groups
        }
    rng = np.random.default_rng(seed)
    samples: dict[str, dict[str, list[float]]] = {
        tg: {k: [] for k in keys} for tg in threshold_groups
    }
    xs = np.asarray(xs, dtype=np.float64)
    streams = _CurveStreams(y, s, gcode, factorize(spc)[0], c.row_cell, species_rule)
    for block in stratified_multiplicities(rng, strata, n_boot, minus_one=False):
        for weight in block:
            cum = streams.cumulative(weight)
            for tg in threshold_groups:
                try:
                    curves = streams.curves(cum, names, xs, alpha, tg, min_denominator)
                    areas = curve_areas(curves)[0]
                except ValueError:  # SingleClassError included: no attacks to set tau on
                    areas = dict.fromkeys(keys, float("nan"))
                for k in keys:
                    samples[tg][k].append(areas[k])
    out: dict[str, dict[str, object]] = {}
    for tg, per in samples.items():
        out[tg] = {"notes": {}}
        for k, v in per.items():
            low, high, note = bootstrap_interval(np.asarray(v), confidence, "bootstrap replicates")
            out[tg][k] = (low, high)
            if note:
                out[tg]["notes"][k] = note
    return out


class _CurveStreams:
    """The rows of each group's attacks (per species under ``"worst"``) and bona fide, and of
    the attacks of all groups (per species under ``"worst"``), sorted by score once, so a
    bootstrap replicate's FDR/ABF curves come from cumulative cell multiplicities: the rates and
    tau of :func:`fairness.abf.curves_of_clean` on the repeated rows, without repeating them."""

    def __init__(
        self,
        y: np.ndarray,
        s: np.ndarray,
        group: np.ndarray,
        species: np.ndarray,
        row_cell: np.ndarray,
        rule: str,
    ) -> None:
        split = species if rule == "worst" else np.zeros(len(y), dtype=np.int64)
        n_split = int(split.max()) + 1 if len(split) else 1
        order = np.argsort(s, kind="stable")
        # streams: (group, class, species), and (-1, 1, species) for all groups' attacks
        self.scores: dict[tuple[int, int, int], np.ndarray] = {}
        self.cells: dict[tuple[int, int, int], np.ndarray] = {}
        g, c, sp = group[order], y[order], split[order]
        for pooled in (False, True):
            keys = np.where(c == 1, sp, -1) if pooled else (g * 2 + c) * n_split + sp
            for key in np.unique(keys[keys >= 0]).tolist():
                rows = order[keys == key]
                gk, k = divmod(key, n_split)
                name = (-1, 1, key) if pooled else (gk // 2, gk % 2, k)
                self.scores[name], self.cells[name] = s[rows], row_cell[rows]

    def cumulative(self, weight: np.ndarray) -> dict[tuple[int, int, int], np.ndarray]:
        """Per stream the cumulative multiplicities of its sorted rows."""
        return {k: np.cumsum(weight[cells]) for k, cells in self.cells.items()}

    def _parts(self, cum: dict, keys: list) -> list[tuple[np.ndarray, np.ndarray]]:
        """The streams of ``keys`` that the replicate draws (a species may be left out)."""
        return [(self.scores[k], cum[k]) for k in keys if cum[k][-1] > 0]

    def _tau(self, cum: dict, group: int, xs: np.ndarray) -> np.ndarray:
        """tau = APCER_x on the attacks of ``group`` (-1: all groups), as
        :func:`fairness.abf.decision_thresholds` on the repeated rows."""
        taus = []
        for scores, c in self._parts(cum, [k for k in self.scores if k[:2] == (group, 1)]):
            k = np.floor(xs * c[-1] + 1e-9).astype(np.int64)
            taus.append(scores[np.searchsorted(c, k, side="right")])
        return np.min(taus, axis=0)

    def _rate_below(self, cum: dict, keys: list, tau: np.ndarray) -> np.ndarray:
        """Share of the streams' repeated rows below each tau (worst stream); NaN for none."""
        rates = []
        for scores, c in self._parts(cum, keys):
            i = np.searchsorted(scores, tau, side="left")
            rates.append(np.where(i > 0, c[np.maximum(i - 1, 0)], 0) / c[-1])
        return np.max(rates, axis=0) if rates else np.full(len(tau), np.nan)

    def curves(
        self,
        cum: dict,
        names: list[str],
        xs: np.ndarray,
        alpha: float,
        threshold_group: str | None,
        min_denominator: float,
    ) -> FairnessCurves:
        """The replicate's curves (``ValueError`` where :func:`curves_of_clean` raises)."""
        if len(names) < 2:
            raise ValueError(f"FDR/ABF need at least two groups, got {names}")
        pooled = threshold_group is None or str(threshold_group) == POOLED
        if not pooled and str(threshold_group) not in names:
            raise ValueError(f"threshold_group {threshold_group!r} is not a group")
        tg = -1 if pooled else names.index(str(threshold_group))
        if not any(k[:2] == (tg, 1) for k in self.scores):
            raise ValueError("no attack presentations to set tau on")
        if np.any(xs < 0) or np.any(xs >= 1):
            raise ValueError(f"APCER operating points must be in [0, 1), got {xs.tolist()}")
        tau = self._tau(cum, tg, xs)
        apcer, bpcer, with_atk, with_bon = {}, {}, [], []
        for g, name in enumerate(names):
            atk = [k for k in self.scores if k[0] == g and k[1] == 1]
            bon = [k for k in self.scores if k[0] == g and k[1] == 0]
            apcer[name] = self._rate_below(cum, atk, tau)
            bpcer[name] = 1.0 - self._rate_below(cum, bon, tau)
            if atk:
                with_atk.append(name)
            if bon:
                with_bon.append(name)
        return curves_of_rates(
            xs, tau, apcer, bpcer, alpha, threshold_group, min_denominator, with_atk, with_bon
        )


def iso_group_intervals(
    y_true: np.ndarray,
    y_score: np.ndarray,
    species: np.ndarray,
    units: np.ndarray,
    *,
    threshold: float,
    species_rule: str,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    min_units: int = MIN_INTERVAL_UNITS,
) -> dict[str, tuple[float, float]]:
    """Bootstrap intervals of one group's ISO APCER (under ``species_rule``), BPCER and EER.

    A unit's rows of one class are resampled within the class (``n - 1`` draws), so every
    replicate keeps both classes; with fewer than ``min_units`` units of a class the intervals
    are undefined (NaN). Under ``"pooled"`` the report uses the FNR, FPR and EER intervals of
    :func:`group_gaps` instead; it computes these for ``"worst"``.
    """
    check_species_rule(species_rule)
    keys = np.array([f"{u}\x1f{c}" for u, c in zip(units, y_true, strict=True)], dtype=object)
    codes, uniq = factorize(keys)
    label = np.empty(len(uniq), dtype=np.int64)
    label[codes] = y_true
    nan = (float("nan"), float("nan"))
    if any(too_few_units(n, min_units) for n in np.bincount(label, minlength=2)):
        return {"apcer": nan, "bpcer": nan, "eer": nan}
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = {"apcer": [], "bpcer": [], "eer": []}
    for block in stratified_multiplicities(rng, label, n_boot):
        for mult in block:
            rows = np.repeat(np.arange(len(y_true)), mult[codes])
            y, s, spc = y_true[rows], y_score[rows], species[rows]
            out["apcer"].append(apcer_rule(y, s, threshold, spc, species_rule))
            out["bpcer"].append(float(np.mean(s[y == 0] >= threshold)))
            out["eer"].append(eer_species(y, s, spc, species_rule)[0])
    return {k: percentile_interval(np.asarray(v), confidence) for k, v in out.items()}
