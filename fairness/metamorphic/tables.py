"""Per test case, per group tables of a metamorphic run (paper 000, Table 4 and Figure 6).

One row per (test case, group), the benchmark (untransformed faces) first, and a row ``all``
per case with every face. Columns: confusion matrix (tn, fp, fn, tp; positive = fake), accuracy,
precision, recall and F1 of the fake class (:func:`fairness.metrics.binary_rates`), the bias
factor |acc_female - acc_male| of the case (:func:`fairness.metrics.bias_factor`; the largest
pairwise gap for more than two groups), the change of accuracy, precision, recall, F1 and bias
factor against the benchmark, and the violation rate: the share of faces on which the case's
relation does not hold, with the decision flips split into fake->real and real->fake (shares
of all faces of the row). Undefined values (no predicted fakes, a single group) are NaN.

Uncertainty (:mod:`fairness.gaps`, :mod:`evaluation.confidence`): the bias factor of a case
comes with its sign (``bias_diff`` = ACC of the first minus the second group of the widest
pair, ``favoured``), a bootstrap interval of that difference and a permutation p-value
(``bias_p``), and the class-ratio verdict of the gap; the violation rate has a bootstrap
interval; ``n_worse`` / ``n_better`` count faces whose decision turned wrong / right against
the case's source, and ``mcnemar_p`` is McNemar's exact test of "the case does not change
accuracy" on these discordant pairs. Bootstraps resample videos (a face without a video id is
its own unit).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fairforensics.evaluation.confidence import bootstrap_proportion, mcnemar_exact
from fairforensics.evaluation.table_writer import (
    csv_text,
    format_number,
    json_records,
    markdown_text,
)
from fairforensics.fairness.gaps import group_gaps
from fairforensics.fairness.metamorphic.relations import BENCHMARK, relation_holds
from fairforensics.fairness.metamorphic.runner import MetamorphicResult
from fairforensics.fairness.metrics import binary_rates

ALL = "all"
COLUMNS = (
    "relation",
    "case",
    "source",
    "group",
    "n",
    "tn",
    "fp",
    "fn",
    "tp",
    "accuracy",
    "precision",
    "recall",
    "f1",
    "bias_factor",
    "bias_diff",
    "bias_diff_low",
    "bias_diff_high",
    "bias_p",
    "favoured",
    "class_ratio",
    "accuracy_change",
    "precision_change",
    "recall_change",
    "f1_change",
    "bias_factor_change",
    "violation_rate",
    "violation_low",
    "violation_high",
    "fake_to_real",
    "real_to_fake",
    "n_worse",
    "n_better",
    "mcnemar_p",
    "changed_pixels",
)
#: Columns that are not rates (printed as they are, not in percent).
_PLAIN = ("bias_p", "mcnemar_p")
_CHANGED = ("accuracy", "precision", "recall", "f1", "bias_factor")


def result_groups(result: MetamorphicResult) -> list[str]:
    """The configured groups, or every non-empty value of the group attribute found."""
    if result.config.groups:
        return list(result.config.groups)
    values = result.attribute(result.config.group_key)
    return sorted({str(v) for v in values if v})


def _bias(
    labels: np.ndarray,
    scores: np.ndarray,
    groups: np.ndarray,
    units: np.ndarray,
    names: list[str],
    threshold: float,
    stats: dict[str, Any],
) -> dict[str, Any]:
    """Bias factor with its sign, interval, p-value and class-ratio verdict (NaN: < 2 groups)."""
    rows = np.isin(groups, names)
    if len(set(groups[rows])) < 2:
        return {
            "bias_factor": float("nan"),
            **dict.fromkeys(("bias_diff", "bias_diff_low", "bias_diff_high", "bias_p"), np.nan),
            "favoured": "",
            "class_ratio": "",
        }
    res = group_gaps(
        labels[rows],
        scores[rows],
        groups[rows],
        units[rows],
        metrics=("acc", "fpr", "fnr"),
        threshold=threshold,
        **stats,
    )
    acc = res.gaps["acc"]
    return {
        "bias_factor": acc.spread,
        "bias_diff": acc.diff,
        "bias_diff_low": acc.low,
        "bias_diff_high": acc.high,
        "bias_p": acc.p_value,
        "favoured": acc.favoured,
        "class_ratio": str(res.class_ratio.get("verdict", "")),
    }


def case_table(
    result: MetamorphicResult,
    n_boot: int = 1000,
    n_perm: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """The rows described in the module docstring, benchmark first, then cases in file order.

    ``n_boot`` / ``n_perm``: bootstrap replicates and permutations (0: intervals / tests off).
    """
    cfg = result.config
    labels = result.labels
    groups = result.attribute(cfg.group_key).astype(str)
    names = result_groups(result)
    units = np.array(
        [f"{r.dataset}|{r.method}|{r.video_id}" if r.video_id else r.key for r in result.rows],
        dtype=object,
    )
    stats = {"n_boot": n_boot, "n_perm": n_perm, "confidence": confidence, "seed": seed}
    decisions = {k: (v >= cfg.threshold).astype(np.int64) for k, v in result.scores.items()}
    rows: list[dict[str, Any]] = []
    benchmark: dict[str, dict[str, Any]] = {}
    for case_id in [BENCHMARK, *result.case_ids]:
        if case_id == BENCHMARK:
            relation, source, oracle, tolerance = "", "", "same_decision", 0.0
        else:
            rel = cfg.relation_of(case_id)
            case = next(c for c in rel.cases if c.id == case_id)
            relation, source, oracle, tolerance = rel.id, case.source, rel.oracle, rel.tolerance
        pred = decisions[case_id]
        bias = _bias(labels, result.scores[case_id], groups, units, names, cfg.threshold, stats)
        if source:
            holds = relation_holds(
                oracle, result.scores[source], result.scores[case_id], cfg.threshold, tolerance
            )
            flip_fr = (decisions[source] == 1) & (pred == 0)
            flip_rf = (decisions[source] == 0) & (pred == 1)
            was_right = decisions[source] == labels
            worse, better = was_right & (pred != labels), ~was_right & (pred == labels)
        for group in [*names, ALL]:
            sel = np.ones(len(labels), bool) if group == ALL else groups == group
            row: dict[str, Any] = {
                "relation": relation,
                "case": case_id,
                "source": source,
                "group": group,
                "n": int(sel.sum()),
            }
            if sel.any():
                rates = binary_rates(labels[sel], pred[sel])
                row.update(
                    {k: rates[k] for k in ("tn", "fp", "fn", "tp", "precision", "recall", "f1")}
                )
                row["accuracy"] = rates["acc"]
            else:
                row.update({k: 0 for k in ("tn", "fp", "fn", "tp")})
                row.update({k: float("nan") for k in ("accuracy", "precision", "recall", "f1")})
            row.update(bias)
            if case_id == BENCHMARK:
                benchmark[group] = row
                for name in _CHANGED:
                    row[f"{name}_change"] = row[name] - row[name]  # 0, or NaN where undefined
                row.update(
                    violation_rate=0.0,
                    violation_low=0.0,
                    violation_high=0.0,
                    fake_to_real=0.0,
                    real_to_fake=0.0,
                    n_worse=0,
                    n_better=0,
                    mcnemar_p=1.0,
                    changed_pixels=0.0,
                )
            else:
                for name in _CHANGED:
                    row[f"{name}_change"] = row[name] - benchmark[group][name]
                n = max(row["n"], 1)
                row["violation_rate"] = float((~holds[sel]).sum() / n) if row["n"] else float("nan")
                row["violation_low"], row["violation_high"] = bootstrap_proportion(
                    ~holds[sel], units[sel], n_boot, confidence, seed
                )
                row["n_worse"], row["n_better"] = int(worse[sel].sum()), int(better[sel].sum())
                row["mcnemar_p"] = mcnemar_exact(row["n_worse"], row["n_better"])
                row["fake_to_real"] = float(flip_fr[sel].sum() / n) if row["n"] else float("nan")
                row["real_to_fake"] = float(flip_rf[sel].sum() / n) if row["n"] else float("nan")
                row["changed_pixels"] = (
                    float(result.changed[case_id][sel].mean()) if row["n"] else float("nan")
                )
            rows.append({k: row[k] for k in COLUMNS})
    return rows


def table_json(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with NaN replaced by ``null`` (strict JSON)."""
    return json_records(COLUMNS, _cells(rows))


def _cells(rows: list[dict[str, Any]], columns: tuple[str, ...] = COLUMNS) -> list[list[Any]]:
    return [[row.get(c) for c in columns] for row in rows]


def table_markdown(rows: list[dict[str, Any]], columns: tuple[str, ...] = COLUMNS) -> str:
    """A Markdown table; rates are printed in percent, as in the paper (undefined: ``n/a``)."""
    percent = [c not in _PLAIN for c in columns]
    return markdown_text(
        columns,
        _cells(rows, columns),
        lambda i, j, v: format_number(v, missing="n/a", percent=percent[j]),
    )


def table_csv(rows: list[dict[str, Any]]) -> str:
    """CSV text of the rows (NaN as an empty cell)."""
    return csv_text(COLUMNS, _cells(rows))
