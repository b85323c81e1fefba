"""Fairness figures (paper 001 Figs. 6-11 styles, paper 000 per-gender accuracy), drawn with
matplotlib's object API (no pyplot state, no display needed) and saved atomically."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from sklearn.metrics import roc_curve

from fairforensics.evaluation.plots import save_figure
from fairforensics.fairness.abf import FairnessCurves


def plot_group_roc(
    y_true: np.ndarray,
    y_score: np.ndarray,
    groups: np.ndarray,
    path: str | Path,
    title: str = "",
    *,
    pad: bool = False,
) -> Path:
    """One ROC curve per group (groups holding one class are skipped); ``pad``: the axes also
    named by ISO/IEC 30107-3's rates (BPCER, 1 - APCER)."""
    fig = Figure(figsize=(5, 5))
    ax = fig.add_subplot()
    for g in sorted(set(groups)):
        rows = groups == g
        if len(set(y_true[rows].tolist())) < 2:
            continue
        fpr, tpr, _ = roc_curve(y_true[rows], y_score[rows])
        ax.plot(fpr, tpr, label=f"{g} (n={rows.sum()})")
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
    xlabel, ylabel = ("FPR (BPCER)", "TPR (1 - APCER)") if pad else ("FPR", "TPR")
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title or "ROC per group")
    ax.legend(loc="lower right", fontsize=8)
    return save_figure(fig, path, dpi=120)[0]


def plot_odta(
    odta: Mapping[str, Mapping[str, np.ndarray]],
    xs: Sequence[float],
    path: str | Path,
    title: str = "",
) -> Path:
    """1 - BPCER at APCER_x of each test group, one line per (threshold group, test group)."""
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    labels = [f"{100 * x:g}%" for x in xs]
    pos = np.arange(len(xs))
    styles = ["-", "--", ":", "-."]
    for k, (tg, per_group) in enumerate(odta.items()):
        for g, values in per_group.items():
            ax.plot(
                pos,
                values,
                marker="o",
                ls=styles[k % len(styles)],
                label=f"test {g}, tau from {tg}",
            )
    ax.set_xticks(pos, labels)
    ax.set(xlabel="APCER_x", ylabel="1 - BPCER", title=title or "1 - BPCER at APCER_x (ODTA)")
    ax.legend(fontsize=7)
    return save_figure(fig, path, dpi=120)[0]


def plot_fairness_curves(
    curves: Mapping[str, FairnessCurves], path: str | Path, title: str = ""
) -> Path:
    """FDR (left) and ABF (right) against x for each named curve set (Figs. 7, 9)."""
    fig = Figure(figsize=(10, 4))
    ax_fdr, ax_abf = fig.subplots(1, 2)
    for name, c in curves.items():
        ax_fdr.plot(c.xs, c.fdr, label=name)
        ax_abf.plot(c.xs, c.abf, label=name)
    ax_fdr.set(xlabel="x (tau = APCER_x)", ylabel="FDR", title="FDR")
    ax_abf.set(xlabel="x (tau = APCER_x)", ylabel="ABF", title="ABF")
    for ax in (ax_fdr, ax_abf):
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return save_figure(fig, path, dpi=120)[0]


def plot_group_accuracy(
    accuracies: Mapping[str, float],
    bias: float,
    pair: tuple[str, str],
    path: str | Path,
    title: str = "",
    intervals: Mapping[str, Sequence[float]] | None = None,
) -> Path:
    """Bar chart of each group's accuracy, titled with the bias factor and its pair; with
    ``intervals`` (group -> (low, high)) the bars get error bars, and a bar whose interval is
    undefined says "no interval"."""
    fig = Figure(figsize=(max(4, 1 + 0.8 * len(accuracies)), 4))
    ax = fig.add_subplot()
    names = list(accuracies)
    heights = np.array([100 * accuracies[g] for g in names])
    ax.bar(names, heights, color="tab:blue")
    if intervals:  # an undefined interval is said, not drawn as a zero-width bar
        bounds = np.array([[100 * v for v in intervals.get(g, (np.nan, np.nan))] for g in names])
        ok = np.isfinite(bounds).all(axis=1)
        pos = np.arange(len(names))
        err = np.abs(bounds[ok].T - heights[ok])
        ax.errorbar(pos[ok], heights[ok], yerr=err, fmt="none", ecolor="black", capsize=4)
        for k in pos[~ok]:
            ax.text(k, min(heights[k] + 2, 95), "no interval", ha="center", fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_ylabel("accuracy (%)")
    head = f"{title}: " if title else ""
    ax.set_title(f"{head}bias factor {100 * bias:.2f}% ({pair[0]} vs {pair[1]})")
    return save_figure(fig, path, dpi=120)[0]


def plot_protocol_odta(
    panels: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]],
    xs: Sequence[float],
    path: str | Path,
    title: str = "",
) -> Path:
    """Paper 001 Figs. 6, 8, 10, 11: one panel per trained subset, 1 - BPCER (%) at APCER_x of
    each test group (colour) with tau from each threshold group (line style)."""
    names = list(panels)
    fig = Figure(figsize=(4.2 * len(names), 3.8))
    axes = np.atleast_1d(fig.subplots(1, len(names), sharey=True))
    labels = [f"{100 * x:g}%" for x in xs]
    pos = np.arange(len(xs))
    styles = ["-", "--", ":", "-."]
    for ax, trained in zip(axes, names, strict=True):
        tests = sorted({g for per in panels[trained].values() for g in per})
        colours = {g: f"C{k}" for k, g in enumerate(tests)}
        for k, (tg, per) in enumerate(panels[trained].items()):
            for g, values in per.items():
                ax.plot(
                    pos,
                    100 * np.asarray(values, dtype=np.float64),
                    marker="o",
                    ms=3,
                    color=colours[g],
                    ls=styles[k % len(styles)],
                    label=f"test {g}, tau {tg}",
                )
        ax.set_xticks(pos, labels)
        ax.set(xlabel="APCER_x", title=f"trained: {trained}")
        ax.legend(fontsize=6)
    axes[0].set_ylabel("1 - BPCER (%)")
    if title:
        fig.suptitle(title)
    return save_figure(fig, path, dpi=120)[0]


def plot_protocol_abf(
    curves: Mapping[tuple[str, str], FairnessCurves], path: str | Path, title: str = ""
) -> Path:
    """Paper 001 Figs. 7, 9: ABF against x, one colour per trained subset, solid for the
    baseline and dashed for FairSWAP; undefined points leave gaps."""
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    trained = list(dict.fromkeys(t for t, _ in curves))
    for (t, variant), c in curves.items():
        ax.plot(
            c.xs,
            c.abf,
            color=f"C{trained.index(t)}",
            ls="-" if variant == "B" else "--",
            label=f"{t} ({variant})",
        )
    finite = [float(np.nanmin(c.abf)) for c in curves.values() if np.isfinite(c.abf).any()]
    lowest = min(finite, default=0.0)
    note = ""
    if lowest < -1.0:  # a floored denominator (a group failing completely) dwarfs the rest
        ax.set_ylim(bottom=-1.0, top=1.05)
        note = f" (axis cut at -1; lowest {lowest:.3g})"
    ax.set(xlabel="x (tau = APCER_x)", ylabel="ABF", title=(title or "ABF") + note)
    ax.legend(fontsize=7)
    return save_figure(fig, path, dpi=120)[0]
