"""Per test case, per group tables of a metamorphic run (paper 000, Table 4 and Figure 6).

One row per (test case, group), the benchmark (untransformed faces) first, and a row ``all``
per case with every face. Columns: confusion matrix (tn, fp, fn, tp; positive = fake), accuracy,
precision, recall and F1 of the fake class (:func:`fairness.metrics.binary_rates`), the bias
factor |acc_female - acc_male| of the case (:func:`fairness.metrics.bias_factor`; the largest
pairwise gap for more than two groups), the change of accuracy, precision, recall, F1 and bias
factor against the benchmark, and the violation rate: the share of faces on which the case's
relation does not hold, with the decision flips split into fake->real and real->fake (shares
of all faces of the row). Undefined values (no predicted fakes, a single group) are NaN.

Uncertainty (:mod:`fairness.gaps`, :mod:`evaluation.confidence`): accuracy and the violation
rate have Wilson score intervals on the effective number of faces (faces of one video are
correlated; a face without a video id is its own unit; :func:`~evaluation.confidence.
proportion_interval`), none for a group of fewer than 5 videos (the one small-group rule,
:func:`~evaluation.confidence.too_few_units`); the bias factor of a case comes with its sign
(``bias_diff`` = ACC of the first minus the second group of the widest pair, ``favoured``), the
interval of that difference (Wilson intervals combined by MOVER, :func:`fairness.gaps.group_gaps`)
and a permutation p-value (``bias_p``), and the class-ratio verdict of the gap; ``n_worse`` /
``n_better`` count faces whose decision turned wrong / right against the case's source, and
``mcnemar_p`` is McNemar's exact test of "the case does not change accuracy" on these
discordant pairs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fairforensics.evaluation.confidence import (
    MIN_INTERVAL_UNITS,
    few_units_note,
    holm,
    mcnemar_exact,
    proportion_interval,
    too_few_units,
)
from fairforensics.evaluation.table_writer import (
    UNDEFINED,
    csv_text,
    is_missing,
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
    "accuracy_low",
    "accuracy_high",
    "precision",
    "recall",
    "f1",
    "bias_factor",
    "bias_diff",
    "bias_diff_low",
    "bias_diff_high",
    "bias_p",
    "bias_p_adjusted",
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
    "mcnemar_p_adjusted",
    "changed_pixels",
    "notes",
)
_CHANGED = ("accuracy", "precision", "recall", "f1", "bias_factor")
#: The columns of the HTML summary (``metamorphic.html``): all but the details.
_DETAILS = frozenset(
    ("relation", "source", "tn", "fp", "fn", "tp", "class_ratio", "precision_change")
    + ("recall_change", "f1_change", "bias_factor_change", "n_worse", "n_better", "changed_pixels")
)
SUMMARY_COLUMNS = tuple(c for c in COLUMNS if c not in _DETAILS)


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
    threshold = result.threshold.value
    decisions = {k: (v >= threshold).astype(np.int64) for k, v in result.scores.items()}
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
        bias = _bias(labels, result.scores[case_id], groups, units, names, threshold, stats)
        if source:
            holds = relation_holds(
                oracle, result.scores[source], result.scores[case_id], threshold, tolerance
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
            cells, notes = _decision_cells(labels[sel], pred[sel])
            row.update(cells)
            n_units = len(set(units[sel]))
            shown = n_boot > 0 and not too_few_units(n_units)
            if n_boot > 0 and not shown:
                notes.append(f"no intervals: {few_units_note(n_units, 'videos')}")
            row["notes"] = "; ".join(notes)
            row["accuracy_low"], row["accuracy_high"] = (
                proportion_interval(pred[sel] == labels[sel], units[sel], confidence)
                if shown
                else (float("nan"), float("nan"))
            )
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
                row["violation_low"], row["violation_high"] = (
                    proportion_interval(~holds[sel], units[sel], confidence)
                    if shown
                    else (float("nan"), float("nan"))
                )
                row["n_worse"], row["n_better"] = int(worse[sel].sum()), int(better[sel].sum())
                row["mcnemar_p"] = mcnemar_exact(row["n_worse"], row["n_better"])
                row["fake_to_real"] = float(flip_fr[sel].sum() / n) if row["n"] else float("nan")
                row["real_to_fake"] = float(flip_rf[sel].sum() / n) if row["n"] else float("nan")
                row["changed_pixels"] = (
                    float(result.changed[case_id][sel].mean()) if row["n"] else float("nan")
                )
            rows.append(row)
    _adjust(rows)
    return [{k: row[k] for k in COLUMNS} for row in rows]


def _adjust(rows: list[dict[str, Any]]) -> None:
    """Holm-adjusted p-values (:func:`evaluation.confidence.holm`): ``mcnemar_p_adjusted`` over
    every McNemar test of the table (each case x group and ``all``; the benchmark makes none),
    ``bias_p_adjusted`` over the cases' bias tests (one per case)."""
    tested = [r for r in rows if r["source"]]
    for r, v in zip(tested, holm([r["mcnemar_p"] for r in tested]), strict=True):
        r["mcnemar_p_adjusted"] = float(v)
    per_case = {r["case"]: r["bias_p"] for r in rows}
    adjusted = dict(zip(per_case, holm(list(per_case.values())), strict=True))
    for r in rows:
        r.setdefault("mcnemar_p_adjusted", 1.0)  # the benchmark: no test, as its mcnemar_p
        r["bias_p_adjusted"] = float(adjusted[r["case"]])


def _decision_cells(labels: np.ndarray, pred: np.ndarray) -> tuple[dict[str, Any], list[str]]:
    """Confusion counts, accuracy, and precision, recall and F1 of the fake class, with why a
    value is undefined: on faces without fakes the three are (they measure how fakes are
    found), without fake decisions precision is."""
    if len(labels) == 0:
        cells = dict.fromkeys(("tn", "fp", "fn", "tp"), 0)
        return cells | dict.fromkeys(("accuracy", "precision", "recall", "f1"), np.nan), [
            "no faces"
        ]
    rates = binary_rates(labels, pred)
    cells = {k: rates[k] for k in ("tn", "fp", "fn", "tp", "precision", "recall", "f1")}
    cells["accuracy"] = rates["acc"]
    if rates["tp"] + rates["fn"] == 0:
        cells |= dict.fromkeys(("precision", "recall", "f1"), np.nan)
        return cells, ["precision, recall, F1 undefined: no fake faces"]
    if rates["tp"] + rates["fp"] == 0:
        return cells, ["precision undefined: no fake decisions"]
    return cells, []


def table_json(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with NaN replaced by ``null`` (strict JSON)."""
    return json_records(COLUMNS, _cells(rows))


def _cells(rows: list[dict[str, Any]], columns: tuple[str, ...] = COLUMNS) -> list[list[Any]]:
    return [[row.get(c) for c in columns] for row in rows]


def percent_text(value: Any, signed: bool = False) -> str:
    """A fraction in percent with one decimal (``undefined``: the notes under the table say
    why)."""
    if is_missing(value):
        return UNDEFINED
    return f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}"


def _with_interval(value: Any, low: Any, high: Any) -> str:
    if is_missing(value) or is_missing(low) or is_missing(high):
        return percent_text(value)
    return f"{percent_text(value)} [{percent_text(low)}, {percent_text(high)}]"


def p_text(value: Any) -> str:
    """A p-value with three significant digits (``undefined`` when it is)."""
    return UNDEFINED if is_missing(value) else f"{value:.3g}"


#: Rows of the per-case Markdown tables (the benchmark: the first seven); one column per group.
MARKDOWN_ROWS = (
    "n",
    "accuracy [95% CI]",
    "precision",
    "recall",
    "F1",
    "tn/fp/fn/tp",
    "accuracy change",
    "violated [95% CI]",
    "decision flipped fake->real",
    "decision flipped real->fake",
    "worse/better",
    "McNemar p",
)


def _markdown_cells(row: dict[str, Any], benchmark: bool) -> list[str]:
    """One group's column of a case's Markdown table, in :data:`MARKDOWN_ROWS` order."""
    cells = [
        str(row["n"]),
        _with_interval(row["accuracy"], row["accuracy_low"], row["accuracy_high"]),
        percent_text(row["precision"]),
        percent_text(row["recall"]),
        percent_text(row["f1"]),
        f"{row['tn']}/{row['fp']}/{row['fn']}/{row['tp']}",
    ]
    if benchmark:
        return cells
    return [
        *cells,
        percent_text(row["accuracy_change"], signed=True),
        _with_interval(row["violation_rate"], row["violation_low"], row["violation_high"]),
        percent_text(row["fake_to_real"]),
        percent_text(row["real_to_fake"]),
        f"{row['n_worse']}/{row['n_better']}",
        f"{p_text(row['mcnemar_p'])} (Holm {p_text(row['mcnemar_p_adjusted'])})",
    ]


def _bias_line(row: dict[str, Any], groups: list[str]) -> str:
    """The case's bias factor with its signed difference, interval, p-value and verdict."""
    if is_missing(row["bias_factor"]):
        return f"Bias factor: {UNDEFINED} (fewer than two groups with faces)."
    pair = " - ".join(groups[:2]) if len(groups) == 2 else "widest pair"
    diff = _with_interval(row["bias_diff"], row["bias_diff_low"], row["bias_diff_high"])
    text = (
        f"Bias factor: {percent_text(row['bias_factor'])} (accuracy {pair}: {diff}, permutation "
        f"p = {p_text(row['bias_p'])}, Holm {p_text(row['bias_p_adjusted'])}; favoured: {row['favoured'] or 'none'}"
    )
    if row["source"]:
        text += f"; change {percent_text(row['bias_factor_change'], signed=True)}"
    text += ")."
    if row["class_ratio"]:
        text += f" Class ratio: {row['class_ratio']}."
    return text


def table_markdown(rows: list[dict[str, Any]], result: MetamorphicResult | None = None) -> str:
    """One Markdown table per test case (the benchmark first): a column per group and ``all``,
    a row per measure, and the case's bias factor under it. Rates in percent with one
    decimal, as in the paper; an undefined value reads ``undefined``, the notes say why.
    ``result`` adds the relation and case descriptions and the threshold."""
    cfg = result.config if result is not None else None
    groups = list(dict.fromkeys(str(r["group"]) for r in rows if r["group"] != ALL))
    lines = ["# Metamorphic fairness test", ""]
    if result is not None:
        lines += [
            f"{len(result.rows)} faces tested ({len(result.skipped)} skipped, see "
            f"manifest.json); groups by `{cfg.group_key}`; a score >= "
            f"{result.threshold.value:.4g} is a fake decision (decision threshold: "
            f"{result.threshold.source}); positive class = fake.",
            "",
        ]
    lines += [
        "Rates in percent; intervals are 95% Wilson score intervals on the effective number of "
        "faces (faces of one video count as fewer), shown for groups of at least "
        f"{MIN_INTERVAL_UNITS} videos. `violated`: faces "
        "on which the relation does not hold; `worse/better`: faces whose decision turned wrong "
        "/ right against the source; McNemar p: exact test of no accuracy change; Holm: the "
        "p-value adjusted over every McNemar test of this file (bias tests: over its cases), "
        "valid whatever the dependence between the tests.",
    ]
    for case_id in dict.fromkeys(r["case"] for r in rows):
        case_rows = [r for r in rows if r["case"] == case_id]
        first = case_rows[0]
        benchmark = not first["source"]
        if benchmark:
            title = f"## {case_id}: the untransformed faces"
        else:
            title = f"## {case_id} ({first['relation']}, against {first['source']})"
        lines += ["", title, ""]
        if cfg is not None and not benchmark:
            rel = cfg.relation_of(case_id)
            case = next(c for c in rel.cases if c.id == case_id)
            described = " ".join(t for t in (case.description, rel.description) if t)
            if described:
                lines += [described, ""]
        columns = [_markdown_cells(r, benchmark) for r in case_rows]
        names = MARKDOWN_ROWS[: len(columns[0])]
        cells = [[name, *(col[i] for col in columns)] for i, name in enumerate(names)]
        header = [case_id, *(str(r["group"]) for r in case_rows)]
        lines += [markdown_text(header, cells, lambda i, j, v: v).rstrip("\n"), ""]
        notes = [f"{r['group']}: {r['notes']}" for r in case_rows if r["notes"]]
        if notes:
            lines += [f"Notes: {'; '.join(notes)}.", ""]
        lines.append(_bias_line(first, groups))
    return "\n".join(lines) + "\n"


def table_csv(rows: list[dict[str, Any]]) -> str:
    """CSV text of the rows (NaN as an empty cell)."""
    return csv_text(COLUMNS, _cells(rows))
