"""Paired change of a fairness gap: on the same videos, scored twice (clean and perturbed, before
and after a mitigation, an old and a new checkpoint), did the gap between two groups change?

For a metric ``m`` and a pair of groups ``(a, b)`` the **change** is
``(m_a - m_b)[changed] - (m_a - m_b)[clean] = delta_a - delta_b``, where ``delta_g`` is group
``g``'s change of the metric. The data are *cells*, as in :mod:`fairness.gaps`: the rows of one
unit (video, or the report's ``unit``) of one group and one class, both scorings of a cell kept
together.

* **Null hypothesis** of the test: *the metric changes by the same amount in every group*
  (``E[delta_a] = E[delta_b]``; the gap does not change). A perturbation that moves every group
  alike (a common shift of the fakes' scores, say) is *not* a rejection of it; the swap test
  used before issue 36 (clean and perturbed rows exchanged per unit) tested "the perturbation has
  no effect at all" instead: with a common shift it rejected 0-3 % of null data sets (level 5 %)
  and found a true change of the gap in 1-7 % (6 videos) or 33-63 % (20 videos) of the data sets
  where this test finds 31-33 % and 83-89 %.
* **Interval and test, one method** (studentized): the standard error of the change is the
  delete-one-cell jackknife stratified by group x class (the deleted cell's stratum reweighted,
  :func:`_jackknife`), ``se^2 = sum_h (n_h - 1) / n_h * sum_i (theta_(i) - mean_h)^2`` (Efron & Tibshirani 1993,
  ch. 11; for a ratio of sums it is the linearisation variance with the small-sample factor),
  and both use Student's t with Welch-Satterthwaite degrees of freedom over the strata,
  ``df = se^4 / sum_h (v_h^2 / (n_h - 1))``: the interval is ``change +/- t_df se`` and
  ``p = 2 P(T_df > |change| / se)``, so ``p < 1 - confidence`` exactly when the interval excludes
  0. Measured (``scripts/bench_paired_calibration.py``; docs/evaluation.md, "Calibration of the
  paired change"): with 6 videos per group and class the percentile bootstrap used before
  covered 0.88-0.94 of the true changes, this interval 0.934-0.957 (FPR 0.979).
* **Which pair**: the one named in the settings (``change_pair``), fixed in advance; otherwise
  the pair of groups furthest apart on the clean data, chosen *after* looking, and then the
  interval is simultaneous over the ``k (k - 1) / 2`` pairs of ``k`` groups and the p-value is
  multiplied by that number (Bonferroni, as the gap intervals of :mod:`fairness.gaps`): under
  independent clean and perturbed draws the largest clean gap regresses towards 0 and a test of
  the chosen pair as if fixed rejects 6-12 % of the time at 0.05 with 4 groups (corrected:
  0.3-1.7 %).
* **Too small**: the project's one rule (:func:`evaluation.confidence.too_few_units`): a pair
  with fewer than ``min_units`` units of a class the metric counts gets no interval and no
  p-value, and the note says which group and class.
* **Many tests**: :func:`paired_changes` adds ``p_adjusted``, Holm's step-down adjustment
  (:func:`evaluation.confidence.holm`) over every row of its table.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from fairforensics.evaluation.confidence import (
    MIN_INTERVAL_UNITS,
    few_units_note,
    holm,
    weighted_ranking_matrix,
)
from fairforensics.evaluation.metrics import factorize
from fairforensics.evaluation.predictions import Predictions, PredictionsError
from fairforensics.evaluation.table_writer import write_table_files
from fairforensics.fairness.gaps import GAP_METRICS, GapAnalysis, group_gaps
from fairforensics.fairness.report import ReportConfig, _units_of, attribute_arrays
from fairforensics.fairness.tables import to_csv, to_markdown

log = logging.getLogger(__name__)

_COUNT = ("acc", "fpr", "fnr", "error_rate")
#: Classes whose cells a metric counts (0 real, 1 fake).
_NEEDS = {"fpr": (0,), "fnr": (1,)}
_CLASS_NAME = ("real", "fake")
_BLOCK_CELLS = 1 << 21  # weights held at once: replicates x rows

#: Columns of ``paired_changes.csv`` (:func:`paired_changes`).
PAIRED_COLUMNS = (
    "attribute",
    "metric",
    "group_a",
    "group_b",
    "gap_clean",
    "gap_changed",
    "change",
    "ci_low",
    "ci_high",
    "p",
    "p_adjusted",
    "pairs",
    "note",
)


def side_arrays(pred: Predictions, attribute: str, cfg: ReportConfig) -> dict[str, np.ndarray]:
    """Labels, scores, groups and units of ``attribute`` at the report's level (rows without a
    group left out): one scoring of a paired comparison."""
    y, s, groups, ids = attribute_arrays(pred, attribute, cfg.level, cfg.video_reduce)
    units = _units_of(pred, ids, cfg.unit)
    keep = np.array([g not in ("", None) for g in groups], dtype=bool)
    return {
        "y": np.asarray(y)[keep],
        "s": np.asarray(s, dtype=np.float64)[keep],
        "g": np.asarray(groups, dtype=object)[keep],
        "u": np.asarray(units, dtype=object)[keep],
    }


def _metric(
    metric: str, y: np.ndarray, s: np.ndarray, weights: np.ndarray, threshold: float
) -> np.ndarray:
    """``metric`` of the rows under each weighting (``weights``: [reps, rows])."""
    if metric in _COUNT:
        pred = s >= threshold
        real, fake = (y == 0).astype(float), (y == 1).astype(float)
        n_real, n_fake = weights @ real, weights @ fake
        fp, fn = weights @ (real * pred), weights @ (fake * ~pred)
        with np.errstate(invalid="ignore", divide="ignore"):
            fpr, fnr = fp / n_real, fn / n_fake
            return {
                "acc": 1 - (fp + fn) / (n_real + n_fake),
                "fpr": fpr,
                "fnr": fnr,
                "error_rate": (fpr + fnr) / 2,
            }[metric]
    return weighted_ranking_matrix(y, s, weights)[metric]


def paired_change(
    clean: Mapping[str, np.ndarray],
    changed: Mapping[str, np.ndarray],
    *,
    metric: str,
    pair: tuple[str, str],
    threshold: float = 0.5,
    confidence: float = 0.95,
    n_pairs: int = 1,
    min_units: int = MIN_INTERVAL_UNITS,
    unit_name: str = "videos",
) -> dict[str, Any]:
    """The change of the gap ``metric[a] - metric[b]`` from ``clean`` to ``changed`` (arrays of
    :func:`side_arrays`), its studentized jackknife interval and the t-test of "the metric
    changes by the same amount in both groups" (module docstring). ``n_pairs`` > 1: the pair was
    chosen after looking among that many; interval and p are corrected for it (Bonferroni).

    Returns ``change``, ``change_low``, ``change_high``, ``change_p`` and ``change_note`` (why
    the interval and p are undefined, ""). Deterministic.
    """
    if metric not in GAP_METRICS:
        raise ValueError(f"unknown metric {metric!r}; allowed: {list(GAP_METRICS)}")
    if n_pairs < 1 or not 0 < confidence < 1:
        raise ValueError("n_pairs must be >= 1 and confidence in (0, 1)")
    a, b = pair
    y = np.concatenate([clean["y"], changed["y"]]).astype(np.int64)
    s = np.concatenate([clean["s"], changed["s"]]).astype(np.float64)
    g = np.concatenate([clean["g"], changed["g"]]).astype(object)
    u = np.concatenate([clean["u"], changed["u"]]).astype(str)
    side = np.r_[np.zeros(len(clean["y"]), bool), np.ones(len(changed["y"]), bool)]
    keep = (g == a) | (g == b)
    y, s, g, u, side = y[keep], s[keep], g[keep], u[keep], side[keep]
    codes, cells = factorize(
        np.array([f"{x}\x1f{gg}\x1f{c}" for x, gg, c in zip(u, g, y, strict=True)])
    )
    cell_group = np.zeros(len(cells), dtype=np.int64)
    cell_group[codes] = g == b
    cell_label = np.zeros(len(cells), dtype=np.int64)
    cell_label[codes] = y
    parts = [
        (sign * sgn, (g == grp) & (side == sd))
        for grp, sign in ((a, 1.0), (b, -1.0))
        for sd, sgn in ((True, 1.0), (False, -1.0))
    ]

    def change(w: np.ndarray) -> np.ndarray:
        """Per cell weighting (``[reps, cells]``): gap[changed] - gap[clean]."""
        out = np.zeros(len(w))
        for coef, rows in parts:
            wr = w[:, codes[rows]]
            out += coef * _metric(metric, y[rows], s[rows], wr, threshold)
        return out

    observed = float(change(np.ones((1, len(cells))))[0])
    result: dict[str, Any] = {"change": observed}
    nan = float("nan")
    result |= {"change_low": nan, "change_high": nan, "change_p": nan}
    few = []
    for gi, name in enumerate((a, b)):
        for k in _NEEDS.get(metric, (0, 1)):
            n = int(np.sum((cell_group == gi) & (cell_label == k)))
            why = few_units_note(n, f"{_CLASS_NAME[k]} {unit_name}", min_units)
            if why:
                few.append(f"{name}: {why}")
    if few or not np.isfinite(observed):
        result["change_note"] = "; ".join(few) or f"{metric} change undefined"
        return result
    se, df = _jackknife(change, cell_group * 2 + cell_label)
    if not np.isfinite(se):
        result["change_note"] = f"{metric} change undefined when one {unit_name[:-1]} is left out"
        return result
    pair_conf = 1.0 - (1.0 - confidence) / n_pairs
    if se == 0:
        if observed == 0:
            result |= {"change_low": 0.0, "change_high": 0.0, "change_p": 1.0, "change_note": ""}
        else:
            result["change_note"] = (
                f"every {unit_name[:-1]} of a group and class changed alike: no variation to "
                "measure the uncertainty on"
            )
        return result
    half = float(stats.t.ppf(0.5 + pair_conf / 2.0, df)) * se
    p = min(1.0, 2.0 * float(stats.t.sf(abs(observed) / se, df)) * n_pairs)
    result |= {"change_low": observed - half, "change_high": observed + half, "change_p": p}
    result["change_note"] = (
        f"pair chosen after looking: interval and p corrected for {n_pairs} pairs"
        if n_pairs > 1
        else ""
    )
    return result


def _jackknife(change: Any, strata: np.ndarray) -> tuple[float, float]:
    """Stratified delete-one-cell jackknife standard error of ``change`` and the
    Welch-Satterthwaite degrees of freedom of its strata; NaN when a replicate is undefined.

    The cells left in the stratum of a deleted cell are weighted ``n_h / (n_h - 1)`` (the JKn
    jackknife of survey sampling, Wolter 2007, ch. 4), so a metric that adds strata (ACC adds real and fake cells) keeps their balance: left
    out, a statistic of several strata would see 1/n_h of a stratum vanish and its jackknife
    variance would be ``((n_h - 1) / n_h)^2`` too small (0.69 with 6 videos).
    """
    n = len(strata)
    inverse = np.unique(strata, return_inverse=True)[1]
    size = np.bincount(inverse)[inverse]
    per_block = max(1, _BLOCK_CELLS // max(n, 1))
    theta = []
    for start in range(0, n, per_block):
        rows = np.arange(start, min(start + per_block, n))
        same = strata[rows, None] == strata[None, :]
        w = np.where(same, (size[rows] / np.maximum(size[rows] - 1, 1))[:, None], 1.0)
        w[np.arange(len(rows)), rows] = 0.0
        theta.append(change(w))
    theta = np.concatenate(theta)
    if not np.isfinite(theta).all():
        return float("nan"), float("nan")
    var, df_terms = 0.0, 0.0
    for h in np.unique(strata):
        t = theta[strata == h]
        if len(t) < 2:
            continue
        v = (len(t) - 1) / len(t) * float(np.sum((t - t.mean()) ** 2))
        var += v
        df_terms += v**2 / (len(t) - 1)
    if var <= 1e-24:
        return 0.0, float("inf")
    return float(np.sqrt(var)), var**2 / df_terms


def same_rows(a: Predictions, b: Predictions, names: tuple[str, str] = ("A", "B")) -> None:
    """Raise :class:`PredictionsError` naming what differs unless ``a`` and ``b`` hold the same
    videos and frames with the same labels and attributes (scores may differ)."""

    def keys(p: Predictions) -> dict[tuple[str, str, int], int]:
        return {
            (str(d), str(v), int(f)): i
            for i, (d, v, f) in enumerate(zip(p.dataset, p.video_id, p.frame, strict=True))
        }

    ka, kb = keys(a), keys(b)
    if len(ka) < len(a) or len(kb) < len(b):
        which = names[0] if len(ka) < len(a) else names[1]
        raise PredictionsError(f"{which} has repeated (dataset, video_id, frame) rows")
    if ka.keys() != kb.keys():
        only_a = sorted(ka.keys() - kb.keys())
        only_b = sorted(kb.keys() - ka.keys())

        def show(rows: list) -> str:
            videos = sorted({f"{d}/{v}" for d, v, _ in rows})
            more = f" and {len(videos) - 5} more" if len(videos) > 5 else ""
            return f"{len(rows)} rows of videos {', '.join(videos[:5])}{more}"

        text = [
            f"only in {n}: {show(r)}" for n, r in zip(names, (only_a, only_b), strict=True) if r
        ]
        raise PredictionsError(
            f"{names[0]} and {names[1]} must hold the same videos and frames; " + "; ".join(text)
        )
    order = np.array([kb[k] for k in ka])
    columns = {"label": (a.label, b.label[order])}
    for name in sorted(set(a.attributes) | set(b.attributes)):
        if name not in a.attributes or name not in b.attributes:
            have = names[0] if name in a.attributes else names[1]
            raise PredictionsError(f"attribute column {name!r} is only in {have}")
        columns[name] = (a.attributes[name], b.attributes[name][order])
    for name, (x, z) in columns.items():
        bad = np.flatnonzero(np.asarray(x).astype(str) != np.asarray(z).astype(str))
        if bad.size:
            d, v, f = list(ka)[bad[0]]
            raise PredictionsError(
                f"{names[0]} and {names[1]} differ in {name!r} on {bad.size} rows "
                f"(first: {d}/{v} frame {f})"
            )


def pair_of(gaps: GapAnalysis, metric: str, fixed: Sequence[str] | None) -> tuple[str, str, int]:
    """The pair whose change is measured and how many pairs it was chosen among: ``fixed`` when
    both of its groups are ranked (1), else the clean gap's pair among the ``k (k - 1) / 2``
    pairs of the ``k`` ranked groups where the metric is defined; ``("", "", 0)`` when undefined.
    """
    if fixed is not None and all(str(x) in gaps.ranked for x in fixed):
        return str(fixed[0]), str(fixed[1]), 1
    gap = gaps.gaps[metric]
    if not gap.group_a:
        return "", "", 0
    k = sum(np.isfinite(gaps.values[x][metric]) for x in gaps.ranked)
    return gap.group_a, gap.group_b, max(1, k * (k - 1) // 2)


def gap_kwargs(cfg: ReportConfig, metrics: Sequence[str]) -> dict[str, Any]:
    """The keyword arguments of :func:`fairness.gaps.group_gaps` that a report's settings give."""
    return {
        "metrics": metrics,
        "threshold": cfg.decision_threshold,
        "n_boot": cfg.bootstrap,
        "n_perm": cfg.permutations,
        "confidence": cfg.confidence,
        "seed": cfg.seed,
        "min_group_size": cfg.min_group_size,
        "min_units": cfg.min_interval_units,
    }


def change_of(
    clean: Mapping[str, np.ndarray],
    changed: Mapping[str, np.ndarray],
    clean_gaps: GapAnalysis,
    metric: str,
    cfg: ReportConfig,
) -> dict[str, Any]:
    """One metric's paired change on the pair of :func:`pair_of` (``cfg.change_pair`` or the
    clean gap's pair): ``change_pair``, ``change_pairs`` (how many it was chosen among) and the
    fields of :func:`paired_change`; only ``change_pair`` "" when no pair is defined."""
    a, b, n_pairs = pair_of(clean_gaps, metric, cfg.change_pair)
    if not a:
        return {"change_pair": ""}
    out = {"change_pair": f"{a} - {b}", "change_pairs": n_pairs}
    return out | paired_change(
        clean,
        changed,
        metric=metric,
        pair=(a, b),
        threshold=cfg.decision_threshold,
        confidence=cfg.confidence,
        n_pairs=n_pairs,
        min_units=cfg.min_interval_units,
    )


def paired_changes(
    clean: Predictions,
    changed: Predictions,
    attributes: Sequence[str] | None,
    cfg: ReportConfig,
    *,
    metrics: Sequence[str] = GAP_METRICS,
    names: tuple[str, str] = ("A", "B"),
) -> list[dict[str, Any]]:
    """One row (:data:`PAIRED_COLUMNS`) per attribute x metric: the change of the gap from
    ``clean`` to ``changed`` (the same videos and frames, else :class:`PredictionsError` naming
    what differs), with ``p_adjusted`` by Holm over every row."""
    same_rows(clean, changed, names)
    rows = []
    for attribute in list(attributes or cfg.attributes or sorted(clean.attributes)):
        before = side_arrays(clean, attribute, cfg)
        after = side_arrays(changed, attribute, cfg)
        if len(set(before["g"])) < 2:
            log.warning("%s: fewer than two groups, no paired change", attribute)
            continue
        kwargs = gap_kwargs(cfg, metrics) | {"n_boot": 0, "n_perm": 0}  # values and the pair
        gaps = [group_gaps(x["y"], x["s"], x["g"], x["u"], **kwargs) for x in (before, after)]
        for m in metrics:
            res = change_of(before, after, gaps[0], m, cfg)
            a, _, b = res["change_pair"].partition(" - ")
            value = {k: gaps[k].values for k in (0, 1)}
            rows.append(
                {
                    "attribute": attribute,
                    "metric": m,
                    "group_a": a,
                    "group_b": b,
                    "gap_clean": value[0][a][m] - value[0][b][m] if a else np.nan,
                    "gap_changed": value[1][a][m] - value[1][b][m] if a else np.nan,
                    "change": res.get("change", np.nan),
                    "ci_low": res.get("change_low", np.nan),
                    "ci_high": res.get("change_high", np.nan),
                    "p": res.get("change_p", np.nan),
                    "pairs": res.get("change_pairs", 0),
                    "note": res.get("change_note", "") if a else f"{m} gap undefined",
                }
            )
    for row, adjusted in zip(rows, holm([r["p"] for r in rows]), strict=True):
        row["p_adjusted"] = adjusted
    return [{c: r[c] for c in PAIRED_COLUMNS} for r in rows]


def write_paired_changes(rows: Sequence[dict[str, Any]], out: str | Path) -> list[Path]:
    """``paired_changes.{csv,md,json}`` in ``out`` (atomic); the Markdown table states the null."""
    if not rows:
        raise ValueError("no attribute with two or more groups: no paired changes")
    cols = list(PAIRED_COLUMNS)
    return write_table_files(
        Path(out) / "paired_changes",
        to_csv(rows, cols),
        f"{NULL_TEXT}\n\n{to_markdown(rows, cols)}",
        [{c: r.get(c) for c in cols} for r in rows],
    )


#: What every table of paired changes says about its test.
NULL_TEXT = (
    "Change of each gap (changed - clean, same videos). p: t-test of the null 'the metric "
    "changes by the same amount in both groups' with the studentized jackknife interval (p < "
    "0.05 exactly when the 95 % interval excludes 0; a pair chosen after looking is corrected "
    "for the number of pairs); p_adjusted: Holm over every test of the table."
)
