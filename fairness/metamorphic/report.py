"""Files of a metamorphic run: tables, predictions, the Figure-6-style plot and an example sheet.

Layout of ``out_dir``::

    metamorphic.csv / .json         per case, per group table (see fairness.metamorphic.tables)
    metamorphic.md                  the same, one readable table per test case
    predictions/<case>.csv          per-face scores of the benchmark and every case
    manifest.json                   faces skipped and why
    accuracy.png                    accuracy per test case per group with 95% intervals, bias
                                    factor under each case (paper 000, Figure 6)
    examples.png                    faces of several groups and people under every test case
                                    (paper 000, Figure 3)
    metamorphic.html                the summary table as an HTML fragment; report_section()
                                    hands it and the figures to evaluation.report

All files are written atomically.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from fairforensics.configs import config_to_dict
from fairforensics.evaluation.plots import save_figure
from fairforensics.evaluation.predictions import write_predictions
from fairforensics.evaluation.table_writer import html_text
from fairforensics.evaluation.thresholds import DEFAULT_THRESHOLD
from fairforensics.fairness.metamorphic.examples import Example
from fairforensics.fairness.metamorphic.pose import NON_FRONTAL
from fairforensics.fairness.metamorphic.relations import BENCHMARK
from fairforensics.fairness.metamorphic.runner import MetamorphicResult
from fairforensics.fairness.metamorphic.tables import (
    ALL,
    SUMMARY_COLUMNS,
    case_table,
    p_text,
    percent_text,
    result_groups,
    table_csv,
    table_json,
    table_markdown,
)
from fairforensics.preprocessing.files import atomic_write_text, write_json


def accuracy_figure(rows: list[dict[str, Any]], groups: list[str]) -> Figure:
    """Bars of accuracy (%) per test case per group with their 95% intervals; the bias factor
    of each case is printed under its name, below the axis, so no label sits on a bar."""
    cases = list(dict.fromkeys(r["case"] for r in rows))
    by_key = {(r["case"], r["group"]): r for r in rows}
    bias = {r["case"]: r["bias_factor"] for r in rows}
    width = 0.8 / max(len(groups), 1)
    x = np.arange(len(cases))
    fig = Figure(figsize=(max(6.0, 1.1 * len(cases) + 2.5), 4.2), layout="constrained")
    ax = fig.add_subplot()
    for i, group in enumerate(groups):
        rows_g = [by_key.get((c, group), {}) for c in cases]
        values = np.array([100 * r.get("accuracy", np.nan) for r in rows_g], dtype=float)
        low = np.array([100 * r.get("accuracy_low", np.nan) for r in rows_g], dtype=float)
        high = np.array([100 * r.get("accuracy_high", np.nan) for r in rows_g], dtype=float)
        errors = np.nan_to_num(np.stack([values - low, high - values]), nan=0.0).clip(min=0)
        ax.bar(
            x - 0.4 + width * (i + 0.5),
            values,
            width,
            yerr=errors,
            capsize=3,
            error_kw={"elinewidth": 1},
            label=group,
        )
    ticks = [
        case if np.isnan(bias[case]) else f"{case}\nBF {100 * bias[case]:.1f}" for case in cases
    ]
    ax.set_xticks(x, ticks, fontsize=8)
    ax.set_ylim(0, 105)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("accuracy (%)")
    ax.set_title("Accuracy per test case and group, 95% intervals (BF: bias factor, %)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return fig


def plot_accuracy(rows: list[dict[str, Any]], groups: list[str], path: str | Path) -> Path:
    """Save :func:`accuracy_figure` to ``path`` (paper 000, Figure 6)."""
    path = Path(path)
    save_figure(accuracy_figure(rows, groups), path, dpi=120)
    return path


def example_sheet(
    examples: list[Example], path: str | Path, threshold: float = DEFAULT_THRESHOLD
) -> Path | None:
    """A grid of example faces: one row per face (its group, real/fake and key on the left), one
    column per test case, each face's score and decision at ``threshold`` under it (red where
    the decision differs from the benchmark's); faces with a flipped decision come first (the
    picker's order). None if empty."""
    if not examples:
        return None
    columns = list(examples[0].images)
    fig = Figure(
        figsize=(1.7 * len(columns) + 1.4, 1.95 * len(examples) + 0.6), layout="constrained"
    )
    axes = fig.subplots(len(examples), len(columns), squeeze=False)
    for r, example in enumerate(examples):
        base = example.scores.get(BENCHMARK)
        for c, name in enumerate(columns):
            ax = axes[r][c]
            ax.imshow(example.images[name])
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(name, fontsize=8)
            if c == 0:
                ax.set_ylabel(example.caption, fontsize=7)
            score = example.scores.get(name)
            if score is not None:
                fake = score >= threshold
                flipped = base is not None and fake != (base >= threshold)
                ax.set_xlabel(
                    f"{score:.2f} {'fake' if fake else 'real'}" + (" (flip)" if flipped else ""),
                    fontsize=7,
                    color="tab:red" if flipped else "black",
                )
    fig.suptitle(
        f"score and decision (fake at score >= {threshold:.4g}); red: the decision flipped "
        "against the benchmark",
        fontsize=8,
    )
    path = Path(path)
    save_figure(fig, path, dpi=120)
    return path


def _html(rows: list[dict[str, Any]], skipped: int) -> str:
    """The summary table as an HTML fragment (figures are linked by :func:`report_section`)."""

    def cell(i: int, j: int, v: Any) -> str:
        if SUMMARY_COLUMNS[j].endswith("_p"):
            return p_text(v)
        return percent_text(v) if isinstance(v, (float, np.floating)) else str(v)

    cells = [[row[c] for c in SUMMARY_COLUMNS] for row in rows]
    return (
        f"<p>Rates in percent with one decimal (p-values as they are); bias_diff is the signed ACC difference "
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


def write_report(
    result: MetamorphicResult,
    out_dir: str | Path,
    meta: dict[str, Any] | None = None,
    notes: Sequence[str] = (),
) -> dict[str, Path]:
    """Write every file listed in the module docstring; returns them by name. ``meta`` (what
    was tested: detector, weights) goes into ``metamorphic.json``; ``notes`` (what the reader
    must know about the data: a partial set, a crop the detector was not trained on) go there
    and under the title of ``metamorphic.md``."""
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
    title, _, body = table_markdown(rows, result).partition("\n")
    noted = "".join(f"\n**Note:** {n}\n" for n in notes)
    atomic_write_text(files["markdown"], f"{title}\n{noted}{body}")
    summary = {
        **(meta or {}),
        "notes": list(notes),
        "config": config_to_dict(result.config),
        "threshold": result.threshold.value,
        "threshold_from": result.threshold.source,
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
    sheet = example_sheet(result.examples, out / "examples.png", result.threshold.value)
    if sheet is not None:
        files["examples"] = sheet
    files["html"] = out / "metamorphic.html"
    atomic_write_text(files["html"], _html(rows, len(result.skipped)))
    return files
