"""Signed gaps between groups with clustered bootstrap intervals and permutation tests.

For each metric (ACC, AUC, EER, FPR = BPCER and FNR = APCER at the decision threshold, balanced
error rate) the gap is reported *signed*: ``diff = value_a - value_b`` for the pair ``(a, b)`` of
groups with the largest absolute difference, ``a`` before ``b`` in sorted order (with two groups
this is fixed in advance, e.g. ``female - male``), and ``favoured`` names the group with the
better value. Why signed: the max-min gap is never negative, so a percentile bootstrap of it
excludes 0 even when there is no gap (issue 17); the signed difference of a pair fixed in
advance is centred on the true difference and its interval covers 0 at the nominal rate.

* **Interval**: percentile bootstrap of ``diff``. A replicate resamples, within each group
  separately, the *units* the data are clustered in (videos or subjects; every row is its own
  unit when no units are given) with replacement and keeps all rows of a drawn unit, as
  :mod:`evaluation.confidence` does for the overall metrics.
* **p-value**: permutation test of "no difference among all groups": the group labels are
  permuted over units and the statistic is the max-min spread of the metric over groups (with
  two groups: ``|diff|``); ``p = (1 + #{spread_perm >= spread}) / (1 + #valid permutations)``.
  With more than two groups the interval belongs to the pair chosen *after* looking at the data
  (it tends to be wide of 0); the p-value is the test that accounts for the choice.
* **Class-ratio check** (:func:`class_ratio_check`): ACC mixes FPR and FNR with the group's
  real/fake ratio, so groups with equal error rates but different mixes get different ACC (a
  detector that calls every face fake has ACC = share of fakes). The ACC gap is split into the
  part the mix alone gives (pooled FPR/FNR applied to each group's mix) and the rest, and the
  FPR/FNR permutation tests say whether the error rates differ at all.

:func:`curve_auc_intervals` gives bootstrap intervals of FDR-AUC / ABF-AUC and
:func:`iso_group_intervals` of one group's ISO APCER / BPCER / EER under a species rule, with
the same clustered resampling.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from fairforensics.evaluation.confidence import (
    bootstrap_multiplicities,
    percentile_interval,
    weighted_ranking_metrics,
)
from fairforensics.evaluation.metrics import factorize
from fairforensics.fairness.abf import POOLED, clean_groups, curve_auc, curves_of_clean, is_missing
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


@dataclass(frozen=True)
class Gap:
    """Signed gap of one metric between groups ``a`` and ``b`` (``diff = value_a - value_b``)."""

    metric: str
    group_a: str
    group_b: str
    value_a: float
    value_b: float
    diff: float
    low: float  # bootstrap interval of diff
    high: float
    p_value: float  # permutation test of no difference among all ranked groups
    spread: float  # max - min over all ranked groups (|diff| with two groups)
    favoured: str  # group with the better value; "" when equal or undefined
    n_boot_valid: int
    n_perm_valid: int

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
class _Units:
    """Rows grouped into (unit, group) clusters with their confusion counts."""

    row_unit: np.ndarray  # unit code of each row
    unit_group: np.ndarray  # group index of each unit
    counts: np.ndarray  # [n_units, 4]


def _units(
    y_true: np.ndarray, y_pred: np.ndarray, groups: np.ndarray, units: np.ndarray, names: list[str]
) -> _Units:
    keys = np.array([f"{u}\x1f{g}" for u, g in zip(units, groups, strict=True)], dtype=object)
    codes, uniq = factorize(keys)
    n = len(uniq)
    group_index = {g: i for i, g in enumerate(names)}
    unit_group = np.empty(n, dtype=np.int64)
    unit_group[codes] = [group_index[g] for g in groups]
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
    return _Units(codes, unit_group, counts)


def _bootstrap_group(
    u: _Units,
    g: int,
    y_true: np.ndarray,
    y_score: np.ndarray,
    metrics: Sequence[str],
    n_boot: int,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Replicates ``[n_boot]`` of each metric of group ``g`` (its units resampled)."""
    members = np.flatnonzero(u.unit_group == g)
    local = np.full(len(u.unit_group), -1)
    local[members] = np.arange(len(members))
    rows = np.flatnonzero(local[u.row_unit] >= 0)
    row_local = local[u.row_unit[rows]]
    out: dict[str, list[np.ndarray]] = {m: [] for m in metrics}
    for block in bootstrap_multiplicities(rng, len(members), n_boot):
        values = _weighted_values(
            block, u.counts[members], y_true[rows], y_score[rows], row_local, metrics
        )
        for m in metrics:
            out[m].append(values[m])
    return {m: np.concatenate(v) for m, v in out.items()}


def _weighted_values(
    weights: np.ndarray,
    unit_counts: np.ndarray,
    y_true: np.ndarray,
    y_score: np.ndarray,
    row_unit: np.ndarray,
    metrics: Sequence[str],
) -> dict[str, np.ndarray]:
    """Per metric ``[reps]`` values of each unit weighting ``weights [reps, units]``: counted
    metrics from the units' confusion counts, ranking metrics (AUC, EER; only when ``metrics``
    asks for them) with each row weighted by its unit's weight (``row_unit``: its unit's column)."""
    values = _count_metrics(weights @ unit_counts)
    want_rank = [m for m in metrics if m in _RANKING_METRICS]
    if want_rank:
        ranked = weighted_ranking_metrics(y_true, y_score, (w[row_unit] for w in weights))
        values |= {m: ranked[m] for m in want_rank}
    return values


def _permuted_values(
    u: _Units,
    ranked: list[int],
    y_true: np.ndarray,
    y_score: np.ndarray,
    metrics: Sequence[str],
    n_perm: int,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Per metric ``[n_perm, len(ranked)]`` values with group labels permuted over the units."""
    pool = np.flatnonzero(np.isin(u.unit_group, ranked))
    labels = u.unit_group[pool]
    rows = np.flatnonzero(np.isin(u.unit_group[u.row_unit], ranked))
    pos = np.full(len(u.unit_group), -1)
    pos[pool] = np.arange(len(pool))
    row_pos = pos[u.row_unit[rows]]
    out: dict[str, list[np.ndarray]] = {m: [] for m in metrics}
    per_block = max(1, _PERM_BLOCK_CELLS // len(pool))
    done = 0
    while done < n_perm:
        reps = min(per_block, n_perm - done)
        perm = np.stack([rng.permutation(labels) for _ in range(reps)])  # [reps, units]
        cols: dict[str, list[np.ndarray]] = {m: [] for m in metrics}
        for g in ranked:
            member = (perm == g).astype(np.float64)
            values = _weighted_values(
                member, u.counts[pool], y_true[rows], y_score[rows], row_pos, metrics
            )
            for m in metrics:
                cols[m].append(values[m])
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


def group_gaps(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    units: Sequence | None = None,
    metrics: Sequence[str] = GAP_METRICS,
    threshold: float = 0.5,
    n_boot: int = 1000,
    n_perm: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    min_group_size: int = 1,
) -> GapAnalysis:
    """Signed gaps, their bootstrap intervals and permutation p-values (module docstring).

    ``units``: the cluster of each row (video or subject id; None: each row is its own unit).
    Groups with fewer than ``min_group_size`` rows are reported (values, intervals) but take
    no part in the gaps and tests. ``n_boot`` or ``n_perm`` 0 switches intervals or tests off
    (NaN). Seeded: the same inputs give the same result.
    """
    unknown = sorted(set(metrics) - set(GAP_METRICS))
    if unknown:
        raise ValueError(f"unknown gap metrics {unknown}; allowed: {list(GAP_METRICS)}")
    if n_boot < 0 or n_perm < 0 or not 0 < confidence < 1:
        raise ValueError("n_boot and n_perm must be >= 0 and confidence in (0, 1)")
    n_all = len(np.asarray(y_true))
    ids = np.arange(n_all) if units is None else np.asarray(units, dtype=object)
    if len(ids) != n_all:
        raise ValueError(f"units must have one entry per sample ({n_all}), got {len(ids)}")
    known = np.array([not is_missing(g) for g in np.asarray(groups, dtype=object)], dtype=bool)
    y, s, grp = clean_groups(y_true, y_score, groups)
    ids = np.array([str(i) for i in ids[known]], dtype=object)
    names = sorted(set(grp))
    size = {g: int(np.sum(grp == g)) for g in names}
    ranked_names = [g for g in names if size[g] >= min_group_size]
    small = [g for g in names if g not in ranked_names]
    if small:
        log.warning(
            "groups %s have fewer than %d rows: reported, but not used for gaps and tests",
            small,
            min_group_size,
        )
    if len(ranked_names) < 2:
        raise ValueError(
            f"gaps need at least two groups of >= {min_group_size} rows; sizes: {size}"
        )
    y_pred = (s >= threshold).astype(np.int64)
    u = _units(y, y_pred, grp, ids, names)
    ranked = [names.index(g) for g in ranked_names]
    rng = np.random.default_rng(seed)

    values: dict[str, dict[str, float]] = {}
    boot: dict[str, dict[str, np.ndarray]] = {}
    for gi, g in enumerate(names):
        counted = _count_metrics(u.counts[u.unit_group == gi].sum(axis=0))
        point = {m: float(counted[m]) for m in metrics if m in counted}
        rows = grp == g
        if any(m in _RANKING_METRICS for m in metrics):
            r = weighted_ranking_metrics(y[rows], s[rows], [np.ones(int(rows.sum()))])
            point.update({m: float(r[m][0]) for m in metrics if m in _RANKING_METRICS})
        values[g] = {m: point[m] for m in metrics}
        if n_boot:
            boot[g] = _bootstrap_group(u, gi, y, s, metrics, n_boot, rng)
    perm = _permuted_values(u, ranked, y, s, metrics, n_perm, rng) if n_perm else {}

    group_ci = {
        g: {
            m: percentile_interval(boot[g][m], confidence) if n_boot else (np.nan, np.nan)
            for m in metrics
        }
        for g in names
    }
    gaps: dict[str, Gap] = {}
    for m in metrics:
        point = np.array([values[g][m] for g in ranked_names])
        spread = float(_spread(point))
        defined = [i for i, v in enumerate(point) if np.isfinite(v)]
        if len(defined) < 2:
            gaps[m] = Gap(m, "", "", *(float("nan"),) * 3, np.nan, np.nan, np.nan, spread, "", 0, 0)
            continue
        order = sorted(defined, key=lambda k: (point[k], k))
        i, j = order[0], order[-1]  # distinct even when every value is equal
        a, b = sorted((ranked_names[i], ranked_names[j]))
        diff = values[a][m] - values[b][m]
        low = high = float("nan")
        n_boot_valid = 0
        if n_boot:
            d = boot[a][m] - boot[b][m]
            n_boot_valid = int(np.isfinite(d).sum())
            low, high = percentile_interval(d, confidence)
        p = float("nan")
        n_perm_valid = 0
        if n_perm:
            stats = _spread(perm[m])
            stats = stats[np.isfinite(stats)]
            n_perm_valid = int(stats.size)
            p = float((1 + np.sum(stats >= spread - 1e-12)) / (1 + stats.size))
        gaps[m] = Gap(
            metric=m,
            group_a=a,
            group_b=b,
            value_a=values[a][m],
            value_b=values[b][m],
            diff=diff,
            low=low,
            high=high,
            p_value=p,
            spread=spread,
            favoured=_favoured(m, a, b, diff),
            n_boot_valid=n_boot_valid,
            n_perm_valid=n_perm_valid,
        )
    check = class_ratio_check(u, names, gaps, 1.0 - confidence) if "acc" in gaps else {}
    return GapAnalysis(names, ranked_names, values, group_ci, gaps, check, confidence)


def class_ratio_check(
    u: _Units, names: list[str], gaps: dict[str, Gap], level: float
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
    ca = u.counts[u.unit_group == ia].sum(axis=0)
    cb = u.counts[u.unit_group == ib].sum(axis=0)
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
    if v is None or not np.isfinite(v):
        return "n/a"
    return f"{100 * v:+.2f}%" if signed else f"{100 * v:.2f}%"


def curve_auc_intervals(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    units: Sequence | None,
    xs: Sequence[float],
    alpha: float = 0.5,
    threshold_groups: Sequence[str] = (POOLED,),
    min_denominator: float = 1e-3,
    species: Sequence | None = None,
    species_rule: str = "pooled",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, dict[str, tuple[float, float]]]:
    """Bootstrap intervals of FDR-AUC and ABF-AUC for each threshold group.

    Units are resampled within each group as in :func:`group_gaps`; the curves are recomputed
    on every replicate (tau included). Replicates where a curve is undefined (a threshold group
    drew no attacks) are left out. Returns ``{threshold_group: {"fdr_auc": (low, high),
    "abf_auc": (low, high)}}``.
    """
    check_species_rule(species_rule)
    n_all = len(np.asarray(y_true))
    ids = np.arange(n_all) if units is None else np.asarray(units, dtype=object)
    spc = np.full(n_all, "attack", dtype=object) if species is None else np.asarray(species)
    if len(ids) != n_all or len(spc) != n_all:
        raise ValueError(f"units and species must have one entry per sample ({n_all})")
    known = np.array([not is_missing(g) for g in np.asarray(groups, dtype=object)], dtype=bool)
    y, s, grp = clean_groups(y_true, y_score, groups)
    ids, spc = ids[known], spc[known]
    names = sorted(set(grp))
    u = _units(y, (s >= 0.5).astype(np.int64), grp, np.array([str(i) for i in ids]), names)
    rng = np.random.default_rng(seed)
    draws = []  # per group: [n_boot, n_units_of_group] multiplicities and the unit ids
    for gi in range(len(names)):
        members = np.flatnonzero(u.unit_group == gi)
        blocks = list(bootstrap_multiplicities(rng, len(members), n_boot))
        draws.append((members, np.concatenate(blocks)))
    samples: dict[str, dict[str, list[float]]] = {
        tg: {"fdr_auc": [], "abf_auc": []} for tg in threshold_groups
    }
    xs = np.asarray(xs, dtype=np.float64)
    spc_known = np.array([str(v) for v in spc], dtype=object)
    for b in range(n_boot):
        weight = np.zeros(len(u.unit_group), dtype=np.int64)
        for members, mult in draws:
            weight[members] = mult[b]
        rows = np.repeat(np.arange(len(y)), weight[u.row_unit])
        for tg in threshold_groups:
            try:
                c = curves_of_clean(
                    y[rows],
                    s[rows],
                    grp[rows],
                    xs,
                    alpha,
                    tg,
                    min_denominator,
                    spc_known[rows],
                    species_rule,
                    warn=False,
                )
            except ValueError:  # SingleClassError included: the replicate drew no attacks
                continue
            samples[tg]["fdr_auc"].append(curve_auc(xs, c.fdr))
            samples[tg]["abf_auc"].append(curve_auc(xs, c.abf))
    return {
        tg: {k: percentile_interval(np.asarray(v), confidence) for k, v in per.items()}
        for tg, per in samples.items()
    }


def iso_group_intervals(
    y_true: np.ndarray,
    y_score: np.ndarray,
    species: np.ndarray,
    units: np.ndarray,
    threshold: float,
    species_rule: str,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Bootstrap intervals of one group's ISO APCER (under ``species_rule``), BPCER and EER.

    Units (videos) are resampled with replacement; replicates that draw one class only are
    left out. Under ``"pooled"`` these equal the FNR, FPR and EER intervals of
    :func:`group_gaps`; the report computes them here for ``"worst"``.
    """
    check_species_rule(species_rule)
    codes, uniq = factorize(units)
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = {"apcer": [], "bpcer": [], "eer": []}
    for block in bootstrap_multiplicities(rng, len(uniq), n_boot):
        for mult in block:
            rows = np.repeat(np.arange(len(y_true)), mult[codes])
            y, s, spc = y_true[rows], y_score[rows], species[rows]
            if y.size == 0 or y.min() == y.max():
                continue
            out["apcer"].append(apcer_rule(y, s, threshold, spc, species_rule))
            out["bpcer"].append(float(np.mean(s[y == 0] >= threshold)))
            out["eer"].append(eer_species(y, s, spc, species_rule)[0])
    return {k: percentile_interval(np.asarray(v), confidence) for k, v in out.items()}
