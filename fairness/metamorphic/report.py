"""Files of a metamorphic run: tables, predictions, the Figure-6-style plot and an example sheet.

Layout of ``out_dir``::

    metamorphic.csv / .md / .json   per case, per group table (see fairness.metamorphic.tables)
    predictions/<case>.csv          per-face scores of the benchmark and every case
    manifest.json                   faces skipped and why
    accuracy.png                    accuracy per test case per group (paper 000, Figure 6)
    examples.png                    example faces under every test case (paper 000, Figure 3)
    metamorphic.html                the summary table as an HTML fragment; report_section()
                                    hands it and the figures to evaluation.report

All files are written atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from fairforensics.configs import config_to_dict
from fairforensics.evaluation.plots import save_figure
from fairforensics.evaluation.predictions import write_predictions
from fairforensics.evaluation.table_writer import format_number, html_text
from fairforensics.fairness.metamorphic.pose import NON_FRONTAL
from fairforensics.fairness.metamorphic.relations import BENCHMARK
from fairforensics.fairness.metamorphic.runner import MetamorphicResult
from fairforensics.fairness.metamorphic.tables import (
    ALL,
    case_table,
    result_groups,
    table_csv,
    table_json,
    table_markdown,
)
from fairforensics.preprocessing.files import atomic_write_text, write_json

SUMMARY_COLUMNS = (
    "case",
    "group",
    "n",
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
    "accuracy_change",
    "violation_rate",
    "violation_low",
    "violation_high",
    "fake_to_real",
    "real_to_fake",
    "mcnemar_p",
)


def plot_accuracy(rows: list[dict[str, Any]], groups: list[str], path: str | Path) -> Path:
    """Bars of accuracy (%) per test case per group, bias factor above each case (Figure 6)."""
    cases = list(dict.fromkeys(r["case"] for r in rows))
    acc = {(r["case"], r["group"]): r["accuracy"] for r in rows}
    bias = {r["case"]: r["bias_factor"] for r in rows}
    width = 0.8 / max(len(groups), 1)
    x = np.arange(len(cases))
    fig = Figure(figsize=(max(6.0, 1.1 * len(cases) + 2), 4.0))
    ax = fig.add_subplot()
    for i, group in enumerate(groups):
        values = [100 * acc.get((c, group), np.nan) for c in cases]
        bars = ax.bar(x - 0.4 + width * (i + 0.5), values, width, label=group)
        ax.bar_label(bars, fmt="%.1f", fontsize=7, padding=1)
    for xi, case in zip(x, cases, strict=True):
        if not np.isnan(bias[case]):
            ax.text(xi, 104, f"BF {100 * bias[case]:.1f}", ha="center", fontsize=7)
    ax.set_xticks(x, cases)
    ax.set_ylim(0, 110)
    ax.set_ylabel("accuracy (%)")
    ax.set_title("Accuracy per test case and group (BF: bias factor, %)")
    ax.legend(loc="lower right", fontsize=8)
    path = Path(path)
    save_figure(fig, path, dpi=120)
    return path


def example_sheet(
    examples: list[tuple[str, dict[str, np.ndarray]]], path: str | Path
) -> Path | None:
    """A grid of example faces: one row per face, one column per test case; None if empty."""
    if not examples:
        return None
    columns = list(examples[0][1])
    fig = Figure(figsize=(1.6 * len(columns), 1.7 * len(examples)))
    axes = fig.subplots(len(examples), len(columns), squeeze=False)
    for r, (key, images) in enumerate(examples):
        for c, name in enumerate(columns):
            ax = axes[r][c]
            ax.imshow(images[name])
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(name, fontsize=8)
            if c == 0:
                ax.set_ylabel(key[-18:], fontsize=6)
    path = Path(path)
    save_figure(fig, path, dpi=120)
    return path


def _html(rows: list[dict[str, Any]], skipped: int) -> str:
    """The summary table as an HTML fragment (figures are linked by :func:`report_section`)."""

    def cell(i: int, j: int, v: Any) -> str:
        if isinstance(v, float) and not np.isnan(v) and SUMMARY_COLUMNS[j].endswith("_p"):
            return f"{v:.4g}"
        return format_number(v, missing="n/a", percent=True)

    cells = [[row[c] for c in SUMMARY_COLUMNS] for row in rows]
    return (
        f"<p>Rates in percent (p-values as they are); bias_diff is the signed ACC difference "
        f"of the pair with its bootstrap interval, mcnemar_p McNemar's exact test of the "
        f"accuracy change; {skipped} face(s) skipped (see manifest.json).</p>\n"
        + html_text(SUMMARY_COLUMNS, cells, cell, row_sep="\n")
        + "\n"
    )


def report_section(out_dir: str | Path) -> tuple[str, list[Path]] | None:
    """``(title, [table fragment, figure, example sheet])`` of a written metamorphic report, for
    ``evaluation.report.write_report(extra_sections=...)``; None when ``out_dir`` holds none."""
    out = Path(out_dir)
    items = [out / name for name in ("metamorphic.html", "accuracy.png", "examples.png")]
    items = [p for p in items if p.is_file()]
    if not items or items[0].name != "metamorphic.html":
        return None
    return "Metamorphic fairness testing", items


def write_report(result: MetamorphicResult, out_dir: str | Path) -> dict[str, Path]:
    """Write every file listed in the module docstring; returns them by name."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = case_table(result)
    groups = result_groups(result)
    files = {
        "csv": out / "metamorphic.csv",
        "markdown": out / "metamorphic.md",
        "json": out / "metamorphic.json",
        "manifest": out / "manifest.json",
    }
    atomic_write_text(files["csv"], table_csv(rows))
    atomic_write_text(files["markdown"], table_markdown(rows))
    summary = {
        "config": config_to_dict(result.config),
        "n_faces": len(result.rows),
        "n_skipped": len(result.skipped),
        "n_non_frontal": sum(s.reason.startswith(NON_FRONTAL) for s in result.skipped),
        "groups": groups,
        "rows": table_json(rows),
    }
    write_json(files["json"], summary)
    skipped = [{"key": s.key, "reason": s.reason} for s in result.skipped]
    write_json(files["manifest"], {"skipped": skipped})
    for case in [BENCHMARK, *result.case_ids]:
        files[f"predictions:{case}"] = out / "predictions" / f"{case}.csv"
        write_predictions(files[f"predictions:{case}"], result.predictions(case))
    files["figure"] = plot_accuracy(
        [r for r in rows if r["group"] != ALL], groups, out / "accuracy.png"
    )
    sheet = example_sheet(result.examples, out / "examples.png")
    if sheet is not None:
        files["examples"] = sheet
    files["html"] = out / "metamorphic.html"
    atomic_write_text(files["html"], _html(rows, len(result.skipped)))
    return files
