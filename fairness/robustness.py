"""Fairness under perturbation: the group gaps of every robustness case, and the paired change of
a gap from the clean to the perturbed scores of the same videos.

For each attribute and each case (clean and every ``TYPE:LEVEL``) the gaps are those of
``scripts/fairness.py`` (:func:`fairness.gaps.group_gaps` at the report's level, threshold,
resampling unit, intervals and class-stratified permutation tests). The **change** of a gap,
``change = (m_a - m_b)[perturbed] - (m_a - m_b)[clean]``, is that of
``fairforensics fairness --paired-with`` (:func:`fairness.paired.change_of`): measured on the
pair named by ``change_pair`` or else on the clean gap's pair (the same in every case, so a sign
means the same thing throughout; corrected for the number of pairs it was chosen among), with a
studentized jackknife interval and the t-test of the null "the metric changes by the same amount
in both groups" (:mod:`fairness.paired`).

Many tests: :func:`write_robustness_fairness` adds ``change_p_adjusted`` and ``gap_p_adjusted``,
Holm's adjustment (:func:`evaluation.confidence.holm`) over every paired change, and every gap
test, of the run (all test sets, attributes, cases and metrics it writes).

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
from fairforensics.evaluation.confidence import holm
from fairforensics.evaluation.predictions import Predictions
from fairforensics.evaluation.report import Section
from fairforensics.evaluation.results import slug
from fairforensics.evaluation.table_writer import html_text
from fairforensics.fairness.gaps import GAP_METRICS, group_gaps
from fairforensics.fairness.paired import NULL_TEXT, change_of, gap_kwargs, pair_of, side_arrays
from fairforensics.fairness.report import ReportConfig
from fairforensics.fairness.tables import to_markdown, write_table
from fairforensics.preprocessing.files import atomic_write_text

log = logging.getLogger(__name__)

CLEAN = "clean"


def _case_parts(case: str) -> tuple[str, int]:
    if case == CLEAN:
        return CLEAN, 0
    kind, level = case.split(":")
    return kind, int(level)


def case_gaps(
    predictions: Mapping[str, Predictions],
    attributes: Sequence[str] | None,
    cfg: ReportConfig,
    metrics: Sequence[str] = GAP_METRICS,
    test_data: str = "",
) -> list[dict[str, Any]]:
    """One row per attribute x case x metric: the case's gap (as ``scripts/fairness.py``) and
    the paired change of a gap (:func:`fairness.paired.change_of`). ``predictions``:
    ``{case: predictions}`` with ``clean``."""
    if CLEAN not in predictions:
        raise ValueError("fairness under perturbation needs the clean predictions")
    clean_pred = predictions[CLEAN]
    names = list(attributes or cfg.attributes or sorted(clean_pred.attributes))
    rows: list[dict[str, Any]] = []
    for attribute in names:
        clean = side_arrays(clean_pred, attribute, cfg)
        if len(set(clean["g"])) < 2:
            log.warning("%s: fewer than two groups, no fairness under perturbation", attribute)
            continue
        kwargs = gap_kwargs(cfg, metrics)
        try:
            clean_gaps = group_gaps(clean["y"], clean["s"], clean["g"], clean["u"], **kwargs)
        except ValueError as exc:
            log.warning("%s: no gaps on the clean predictions: %s", attribute, exc)
            continue
        for case, pred in predictions.items():
            arrays = clean if case == CLEAN else side_arrays(pred, attribute, cfg)
            kind, level = _case_parts(case)
            try:
                gaps = (
                    clean_gaps
                    if case == CLEAN
                    else group_gaps(arrays["y"], arrays["s"], arrays["g"], arrays["u"], **kwargs)
                )
            except ValueError as exc:
                log.warning("%s %s: no gaps: %s", attribute, case, exc)
                continue
            for m in metrics:
                gap = gaps.gaps[m]
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
                }
                if case == CLEAN:
                    a, b, _ = pair_of(clean_gaps, m, cfg.change_pair)
                    row["change_pair"] = f"{a} - {b}" if a else ""
                else:
                    row |= change_of(clean, arrays, clean_gaps, m, cfg)
                row["note"] = "; ".join(x for x in (gap.note, row.pop("change_note", "")) if x)
                rows.append(row)
    return rows


def change_table(rows: Sequence[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """Per test set, attribute and level: the change of the ``metric`` gap for each type
    (``change [low, high] p=.. (Holm ..)``), types as columns."""
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
        notes = dict.fromkeys([clean.get("note")] if clean else [])
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
                _cell(
                    r.get("change"),
                    r.get("change_low"),
                    r.get("change_high"),
                    r.get("change_p"),
                    r.get("change_p_adjusted"),
                )
                if r
                else ""
            )
            notes |= dict.fromkeys([r.get("note")] if r else [])
        row["note"] = "; ".join(n for n in notes if n)  # why an interval or a p is withheld
        out.append(row)
    return out


def _cell(value: Any, low: Any, high: Any, p: Any = None, p_adjusted: Any = None) -> str:
    def f(x: Any) -> str:
        return "n/a" if x is None or not np.isfinite(x) else f"{x:+.3f}"

    text = f"{f(value)} [{f(low)}, {f(high)}]"
    if p is not None and np.isfinite(p):
        text += f" p={p:.3g}"
        if p_adjusted is not None and np.isfinite(p_adjusted):
            text += f" (Holm {p_adjusted:.3g})"
    return text


def adjust_p_values(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with ``gap_p_adjusted`` and ``change_p_adjusted``: Holm's adjustment over every
    gap test, and every paired change, of the rows (the family: one run's table)."""
    rows = [dict(r) for r in rows]
    for key in ("gap_p", "change_p"):
        adjusted = holm([r.get(key, np.nan) for r in rows])
        for r, v in zip(rows, adjusted, strict=True):
            r[f"{key}_adjusted"] = v
    return rows


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
    if not rows:
        raise ValueError("no attribute with two or more groups: no fairness under perturbation")
    rows = adjust_p_values(rows)
    write_table(rows, out / "robustness_fairness")
    items: list[Any] = []
    text = [f"{NULL_TEXT}\n\n"]
    for m in metrics:
        table = change_table(rows, m)
        if table:
            text.append(f"## Change of the {m.upper()} gap under perturbation\n\n")
            text.append(to_markdown(table) + "\n\n")
            caption = (
                f"Change of the {m.upper()} gap (perturbed - clean, same videos; studentized "
                "jackknife interval; p: t-test of 'the metric changes by the same amount in both "
                "groups'; Holm: adjusted over every change of the run)"
            )
            cols = list(table[0])
            cells = [[r[c] for c in cols] for r in table]
            items.append(html_text(cols, cells, lambda i, j, v: str(v), caption=caption))
    atomic_write_text(out / "robustness_fairness_table.md", "".join(text))
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
