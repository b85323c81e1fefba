"""Fairness under perturbation: the group gaps of every robustness case, and a paired test of
whether a perturbation changes a gap.

For each attribute and each case (clean and every ``TYPE:LEVEL``) the gaps are those of
``scripts/fairness.py`` (:func:`fairness.gaps.group_gaps` at the report's level, threshold,
resampling unit, intervals and class-stratified permutation tests). The **change** of a gap is
measured on the pair of groups of the clean gap (fixed, so a sign means the same thing in every
case): ``change = (m_a - m_b)[perturbed] - (m_a - m_b)[clean]``, with

* a bootstrap interval that resamples units (videos, or the report's ``unit``) stratified by
  group x class, each unit's clean and perturbed rows kept together (the two gaps of a
  replicate are measured on the same videos), percentile method; and
* a paired permutation p-value: under "the perturbation does not change the gap" a unit's clean
  and perturbed rows are exchangeable, so each permutation swaps them for a random half of the
  units; ``p = (1 + #{|change_perm| >= |change|}) / (1 + #valid)``.

Outputs (:func:`write_robustness_fairness`): ``robustness_fairness.{csv,md,json}`` (one row per
test set x attribute x case x metric), ``robustness_fairness_table.md`` (the changes, per
attribute and metric, types as columns), and per attribute a figure of each gap against the
level with its interval.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fairforensics.evaluation import plots
from fairforensics.evaluation.confidence import (
    bootstrap_interval,
    stratified_multiplicities,
    weighted_ranking_matrix,
)
from fairforensics.evaluation.metrics import factorize
from fairforensics.evaluation.predictions import Predictions
from fairforensics.evaluation.report import Section
from fairforensics.evaluation.results import slug
from fairforensics.evaluation.table_writer import html_text
from fairforensics.fairness.gaps import GAP_METRICS, group_gaps
from fairforensics.fairness.report import ReportConfig, _units_of, attribute_arrays
from fairforensics.fairness.tables import to_markdown, write_table

log = logging.getLogger(__name__)

CLEAN = "clean"
_COUNT = ("acc", "fpr", "fnr", "error_rate")


def _case_parts(case: str) -> tuple[str, int]:
    if case == CLEAN:
        return CLEAN, 0
    kind, level = case.split(":")
    return kind, int(level)


def _arrays(pred: Predictions, attribute: str, cfg: ReportConfig) -> dict[str, np.ndarray]:
    """Labels, scores, groups and units (rows without a group left out)."""
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
    perturbed: Mapping[str, np.ndarray],
    metric: str,
    pair: tuple[str, str],
    threshold: float,
    n_boot: int,
    n_perm: int,
    confidence: float,
    seed: int,
    min_units: int = 5,
) -> dict[str, Any]:
    """The change of the gap ``metric[a] - metric[b]`` from ``clean`` to ``perturbed`` (arrays
    of :func:`_arrays`), its bootstrap interval and paired permutation p-value (module
    docstring)."""
    a, b = pair
    y = np.concatenate([clean["y"], perturbed["y"]])
    s = np.concatenate([clean["s"], perturbed["s"]])
    g = np.concatenate([clean["g"], perturbed["g"]])
    side = np.r_[np.zeros(len(clean["y"]), bool), np.ones(len(perturbed["y"]), bool)]
    codes, units = factorize(np.concatenate([clean["u"], perturbed["u"]]).astype(str))
    n_units = len(units)
    unit_strata = np.zeros(n_units, dtype=object)
    unit_strata[codes] = [f"{gg}\x1f{yy}" for gg, yy in zip(g, y, strict=True)]

    def change(w_clean: np.ndarray, w_pert: np.ndarray) -> np.ndarray:
        """Per weighting row: gap[perturbed] - gap[clean]."""
        out = 0.0
        for group, sign in ((a, 1.0), (b, -1.0)):
            rows = g == group
            for w, sgn in ((w_pert, 1.0), (w_clean, -1.0)):
                out = out + sign * sgn * _metric(metric, y[rows], s[rows], w[:, rows], threshold)
        return out

    ones = np.ones((1, len(y)))
    observed = float(change(ones * ~side, ones * side)[0])
    rng = np.random.default_rng(seed)
    result: dict[str, Any] = {"change": observed}
    low = high = np.nan
    counts = {k: int(np.sum(unit_strata == k)) for k in np.unique(unit_strata)}
    few = [
        f"{k.split(chr(31))[0]}: {n} {('real', 'fake')[int(k.split(chr(31))[1])]} units"
        for k, n in counts.items()
        if k.split(chr(31))[0] in pair and n < min_units
    ]
    note = f"fewer than {min_units} units of a class: {'; '.join(few)}" if few else ""
    if n_boot and not few:
        reps = []
        for block in stratified_multiplicities(rng, unit_strata, n_boot):
            w = block[:, codes].astype(np.float64)
            reps.append(change(w * ~side, w * side))
        low, high, note = bootstrap_interval(np.concatenate(reps), confidence, "replicates")
    result |= {"change_low": low, "change_high": high}
    p = np.nan
    if n_perm and np.isfinite(observed):
        flips = rng.integers(0, 2, size=(n_perm, n_units)).astype(bool)[:, codes]
        moved = flips ^ side  # a flipped unit's clean rows count as perturbed and back
        perm = change((~moved).astype(np.float64), moved.astype(np.float64))
        perm = perm[np.isfinite(perm)]
        p = float((1 + np.sum(np.abs(perm) >= abs(observed) - 1e-12)) / (1 + perm.size))
    result["change_p"] = p
    result["change_note"] = note
    return result


def case_gaps(
    predictions: Mapping[str, Predictions],
    attributes: Sequence[str] | None,
    cfg: ReportConfig,
    metrics: Sequence[str] = GAP_METRICS,
    test_data: str = "",
) -> list[dict[str, Any]]:
    """One row per attribute x case x metric: the case's gap (as ``scripts/fairness.py``) and
    the paired change of the clean pair's gap. ``predictions``: ``{case: predictions}`` with
    ``clean``."""
    if CLEAN not in predictions:
        raise ValueError("fairness under perturbation needs the clean predictions")
    clean_pred = predictions[CLEAN]
    names = list(attributes or cfg.attributes or sorted(clean_pred.attributes))
    rows: list[dict[str, Any]] = []
    for attribute in names:
        clean = _arrays(clean_pred, attribute, cfg)
        if len(set(clean["g"])) < 2:
            log.warning("%s: fewer than two groups, no fairness under perturbation", attribute)
            continue
        gap_kwargs = {
            "metrics": metrics,
            "threshold": cfg.threshold,
            "n_boot": cfg.bootstrap,
            "n_perm": cfg.permutations,
            "confidence": cfg.confidence,
            "seed": cfg.seed,
            "min_group_size": cfg.min_group_size,
            "min_units": cfg.min_interval_units,
        }
        try:
            clean_gaps = group_gaps(clean["y"], clean["s"], clean["g"], clean["u"], **gap_kwargs)
        except ValueError as exc:
            log.warning("%s: no gaps on the clean predictions: %s", attribute, exc)
            continue
        for case, pred in predictions.items():
            arrays = clean if case == CLEAN else _arrays(pred, attribute, cfg)
            kind, level = _case_parts(case)
            try:
                gaps = (
                    clean_gaps
                    if case == CLEAN
                    else group_gaps(
                        arrays["y"], arrays["s"], arrays["g"], arrays["u"], **gap_kwargs
                    )
                )
            except ValueError as exc:
                log.warning("%s %s: no gaps: %s", attribute, case, exc)
                continue
            for m in metrics:
                gap, ref = gaps.gaps[m], clean_gaps.gaps[m]
                row = {
                    "test_data": test_data,
                    "attribute": attribute,
                    "type": kind,
                    "level": level,
                    "metric": m,
                    "group_a": gap.group_a,
                    "group_b": gap.group_b,
                    "value_a": gap.value_a,
                    "value_b": gap.value_b,
                    "gap": gap.diff,
                    "gap_low": gap.low,
                    "gap_high": gap.high,
                    "gap_p": gap.p_value,
                    "favoured": gap.favoured,
                    "change_pair": f"{ref.group_a} - {ref.group_b}" if ref.group_a else "",
                }
                if case != CLEAN and ref.group_a:
                    row |= paired_change(
                        clean,
                        arrays,
                        m,
                        (ref.group_a, ref.group_b),
                        cfg.threshold,
                        cfg.bootstrap,
                        cfg.permutations,
                        cfg.confidence,
                        cfg.seed,
                        cfg.min_interval_units,
                    )
                row["note"] = "; ".join(x for x in (gap.note, row.pop("change_note", "")) if x)
                rows.append(row)
    return rows


def change_table(rows: Sequence[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """Per test set, attribute and level: the change of the ``metric`` gap for each type
    (``change [low, high] p``), types as columns."""
    types = list(dict.fromkeys(r["type"] for r in rows if r["type"] != CLEAN))
    out = []
    keys = dict.fromkeys(
        (r["test_data"], r["attribute"], r["level"]) for r in rows if r["type"] != CLEAN
    )
    for test_data, attribute, level in keys:
        row: dict[str, Any] = {"test_data": test_data, "attribute": attribute, "level": level}
        clean = next(
            (
                r
                for r in rows
                if (r["test_data"], r["attribute"], r["type"], r["metric"])
                == (test_data, attribute, CLEAN, metric)
            ),
            None,
        )
        row["clean gap"] = _cell(clean["gap"], clean["gap_low"], clean["gap_high"]) if clean else ""
        for t in types:
            r = next(
                (
                    x
                    for x in rows
                    if (x["test_data"], x["attribute"], x["type"], x["level"], x["metric"])
                    == (test_data, attribute, t, level, metric)
                ),
                None,
            )
            row[t] = (
                _cell(r.get("change"), r.get("change_low"), r.get("change_high"), r.get("change_p"))
                if r
                else ""
            )
        out.append(row)
    return out


def _cell(value: Any, low: Any, high: Any, p: Any = None) -> str:
    def f(x: Any) -> str:
        return "n/a" if x is None or not np.isfinite(x) else f"{x:+.3f}"

    text = f"{f(value)} [{f(low)}, {f(high)}]"
    if p is not None and np.isfinite(p):
        text += f" p={p:.3g}"
    return text


def write_robustness_fairness(
    rows: Sequence[dict[str, Any]],
    out: str | Path,
    metrics: Sequence[str] = ("auc", "acc"),
    figures: bool = True,
) -> list[Section]:
    """Write the rows, the change tables and (``figures``) one figure per test set and
    attribute (each gap of ``metrics`` against level, with its interval); returns the report
    sections."""
    out = Path(out)
    rows = list(rows)
    if not rows:
        raise ValueError("no attribute with two or more groups: no fairness under perturbation")
    write_table(rows, out / "robustness_fairness")
    items: list[Any] = []
    text = []
    for m in metrics:
        table = change_table(rows, m)
        if table:
            text.append(f"## Change of the {m.upper()} gap under perturbation\n\n")
            text.append(to_markdown(table) + "\n\n")
            caption = (
                f"Change of the {m.upper()} gap (perturbed - clean, on the clean pair of groups; "
                "bootstrap interval; paired permutation p)"
            )
            cols = list(table[0])
            cells = [[r[c] for c in cols] for r in table]
            items.append(html_text(cols, cells, lambda i, j, v: str(v), caption=caption))
    (out / "robustness_fairness_table.md").write_text("".join(text), encoding="utf-8")
    pairs = dict.fromkeys((r["test_data"], r["attribute"]) for r in rows) if figures else {}
    for test_data, attribute in pairs:
        panels: dict[str, dict[str, list]] = {}
        mine = [r for r in rows if (r["test_data"], r["attribute"]) == (test_data, attribute)]
        types = [t for t in dict.fromkeys(r["type"] for r in mine) if t != CLEAN]
        for m in metrics:
            series: dict[str, list] = {}
            for r in (r for r in mine if r["metric"] == m):
                point = (r["level"], r["gap"], r["gap_low"], r["gap_high"])
                for t in types if r["type"] == CLEAN else [r["type"]]:
                    series.setdefault(t, []).append(point)
            pair = next((r["change_pair"] for r in mine if r["metric"] == m), "")
            panels[f"{m.upper()} gap ({pair})"] = series
        stem = out / "figures" / f"robustness_fairness_{slug(test_data)}_{slug(attribute)}"
        items.append(
            plots.by_level(panels, stem, "gap", title=f"{attribute} on {test_data}", reference=0)[0]
        )
    return [Section("Fairness under perturbation", items)]
