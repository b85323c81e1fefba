"""Matplotlib figures of paper 002 (Sec. 3.2, Figure 2, A.3): ROC and precision-recall curves,
score histograms, radar chart, cross-manipulation heat maps and metric-vs-step curves; and a
metric against the perturbation level (robustness).

Figures use the object-oriented API (:class:`matplotlib.figure.Figure`, Agg canvas), so no global
pyplot state or display is needed; each is saved as PNG and PDF, atomically.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from sklearn import metrics as skm

from fairforensics.configs.filemode import atomic_path
from fairforensics.evaluation.tables import Table

log = logging.getLogger(__name__)

FORMATS = ("png", "pdf")
#: Metadata that leaves the creation date out of a format's file (PNG has none).
_UNDATED = {"pdf": {"CreationDate": None}, "svg": {"Date": None}, "ps": {"CreationDate": None}}
IMAGE_SUFFIXES = frozenset({".png", ".pdf", ".svg", ".jpg", ".jpeg"})
DRAWN_POINTS = 5000  # points a drawn ROC / PR curve keeps at most (:func:`_drawn`)


def save_figure(
    fig: Figure, stem: str | Path, formats: Sequence[str] = FORMATS, dpi: int = 150
) -> list[Path]:
    """Save ``fig`` as ``<stem>.<fmt>`` for each format (temp file + rename); returns the paths.

    The one figure saver of the project. A ``stem`` that ends in an image suffix (``a.png``) is
    saved in that one format. The figure is drawn with matplotlib's object API; nothing here
    touches pyplot or the global backend. Files carry no date and SVG ids a fixed salt, so one
    figure gives the same bytes in every run.
    """
    stem = Path(stem)
    if stem.suffix.lower() in IMAGE_SUFFIXES:
        stem, formats = stem.with_suffix(""), (stem.suffix[1:],)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        with atomic_path(path, suffix=f".{fmt}") as tmp, rc_context({"svg.hashsalt": "ff"}):
            fig.savefig(tmp, format=fmt, dpi=dpi, bbox_inches="tight", metadata=_UNDATED.get(fmt))
        paths.append(path)
    return paths


def _two_classes(name: str, y: np.ndarray) -> bool:
    if len(np.unique(y)) < 2:
        log.warning("%s: only one class, no curve drawn", name)
        return False
    return True


def _drawn(x: np.ndarray, y: np.ndarray, points: int | None = None) -> tuple[np.ndarray, ...]:
    """A curve of more than ``points`` (default :data:`DRAWN_POINTS`) points thinned to about
    that many, evenly spaced along it, the ends kept: a million-point curve looks the same and
    draws in a fraction of the time."""
    points = DRAWN_POINTS if points is None else points
    if len(x) <= points:
        return x, y
    keep = np.unique(np.linspace(0, len(x) - 1, points).round().astype(np.int64))
    return x[keep], y[keep]


def roc_pr_figure(
    curves: Mapping[str, tuple[Sequence, Sequence]], stem: str | Path, title: str = ""
) -> list[Path]:
    """ROC (left) and precision-recall (right) curves, one line per ``label: (y_true, y_score)``."""
    fig = Figure(figsize=(10, 4.5))
    ax_roc, ax_pr = fig.subplots(1, 2)
    for label, (y, s) in curves.items():
        y, s = np.asarray(y), np.asarray(s)
        if not _two_classes(label, y):
            continue
        fpr, tpr, _ = skm.roc_curve(y, s)
        ax_roc.plot(*_drawn(fpr, tpr), label=f"{label} (AUC {skm.auc(fpr, tpr):.3f})")
        prec, rec, _ = skm.precision_recall_curve(y, s)
        ap = -np.sum(np.diff(rec) * prec[:-1])  # average_precision_score's sum, on this curve
        ax_pr.plot(*_drawn(rec, prec), label=f"{label} (AP {ap:.3f})")
    ax_roc.plot([0, 1], [0, 1], "k--", lw=0.8)
    ax_roc.set(
        xlabel="False positive rate",
        ylabel="True positive rate",
        title="ROC",
        xlim=(0, 1),
        ylim=(0, 1.01),
    )
    ax_pr.set(
        xlabel="Recall", ylabel="Precision", title="Precision-recall", xlim=(0, 1), ylim=(0, 1.01)
    )
    for ax in (ax_roc, ax_pr):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="lower right" if ax is ax_roc else "lower left")
    if title:
        fig.suptitle(title)
    return save_figure(fig, stem)


def score_histogram(
    y_true: Sequence, y_score: Sequence, stem: str | Path, title: str = "", bins: int = 50
) -> list[Path]:
    """Histogram of the scores of each class (real / fake) on [0, 1]."""
    y, s = np.asarray(y_true), np.asarray(y_score, dtype=np.float64)
    fig = Figure(figsize=(5, 3.5))
    ax = fig.subplots()
    edges = np.linspace(0, 1, bins + 1)
    for label, name, color in ((0, "real", "tab:blue"), (1, "fake", "tab:red")):
        if (y == label).any():
            ax.hist(
                s[y == label],
                bins=edges,
                alpha=0.6,
                color=color,
                label=f"{name} (n={int((y == label).sum())})",
            )
    ax.set(xlabel="score (probability of fake)", ylabel="count", title=title)
    ax.legend(fontsize=8)
    return save_figure(fig, stem)


def radar_chart(
    values: Mapping[str, Mapping[str, float]],
    stem: str | Path,
    title: str = "",
    limits: tuple[float, float] | None = None,
) -> list[Path]:
    """Radar chart: one polygon per detector over the test sets (``{detector: {set: value}}``)."""
    axes_names = sorted({t for row in values.values() for t in row})
    if len(axes_names) < 3:
        raise ValueError(f"a radar chart needs at least 3 test sets, got {axes_names}")
    angles = np.linspace(0, 2 * np.pi, len(axes_names), endpoint=False)
    fig = Figure(figsize=(6, 6))
    ax = fig.add_subplot(projection="polar")
    for det, row in values.items():
        v = np.array([row.get(t, np.nan) for t in axes_names], dtype=np.float64)
        ax.plot(np.r_[angles, angles[:1]], np.r_[v, v[:1]], label=det)
        ax.fill(np.r_[angles, angles[:1]], np.nan_to_num(np.r_[v, v[:1]]), alpha=0.08)
    ax.set_xticks(angles, axes_names, fontsize=8)
    if limits:
        ax.set_ylim(*limits)
    ax.legend(fontsize=7, loc="upper right", bbox_to_anchor=(1.3, 1.1))
    ax.set_title(title)
    return save_figure(fig, stem)


def by_level(
    panels: Mapping[str, Mapping[str, Sequence[tuple[float, float, float, float]]]],
    stem: str | Path,
    ylabel: str,
    title: str = "",
    reference: float | None = None,
) -> list[Path]:
    """One panel per key of ``panels``, one line per series with its interval as a band:
    ``{panel: {series: [(level, value, low, high), ...]}}`` (robustness: AUC or a fairness gap
    against the perturbation level). ``reference``: a dashed horizontal line (0 for gaps)."""
    names = list(panels)
    if not names:
        raise ValueError("by_level: nothing to draw")
    fig = Figure(figsize=(5.5 * len(names), 4.2))
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    for ax, name in zip(axes, names, strict=True):
        for series, points in panels[name].items():
            pts = np.array(sorted(points), dtype=np.float64).reshape(-1, 4)
            (line,) = ax.plot(pts[:, 0], pts[:, 1], marker="o", ms=3, label=series)
            band = np.isfinite(pts[:, 2]) & np.isfinite(pts[:, 3])
            if band.any():
                ax.fill_between(
                    pts[band, 0], pts[band, 2], pts[band, 3], color=line.get_color(), alpha=0.12
                )
        if reference is not None:
            ax.axhline(reference, color="k", lw=0.8, ls="--")
        ax.set(xlabel="perturbation level (0: clean)", ylabel=ylabel, title=name)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, ncol=2)
    if title:
        fig.suptitle(title)
    return save_figure(fig, stem)


def heatmaps(
    matrices: Mapping[str, Table],
    stem: str | Path,
    title: str = "",
    cmap: str = "Blues",
    diagonal: bool = False,
) -> list[Path]:
    """Cross-manipulation heat maps (paper 002, Figure 2), one panel per detector, one colour scale.

    Each table is :func:`evaluation.tables.cross_manipulation` output (first column = train set).
    ``diagonal``: box the cells whose train set is the test set (DF40's one-vs-all, Fig. 4).
    """
    if not matrices:
        raise ValueError("no cross-manipulation matrices to draw")
    arrays = {d: np.array([r[1:] for r in t.rows], dtype=np.float64) for d, t in matrices.items()}
    finite = np.concatenate([a[np.isfinite(a)] for a in arrays.values()] or [np.zeros(0)])
    vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    n = len(matrices)
    cols = min(n, 5)
    rows = -(-n // cols)
    fig = Figure(figsize=(3.2 * cols, 3.0 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    image = None
    for ax, (det, table) in zip(axes, matrices.items(), strict=False):
        a = arrays[det]
        image = ax.imshow(a, cmap=cmap, vmin=vmin, vmax=vmax)
        tests, trains = table.columns[1:], [r[0] for r in table.rows]
        ax.set_xticks(range(len(tests)), tests, rotation=45, fontsize=7)
        ax.set_yticks(range(len(trains)), trains, fontsize=7)
        for (i, j), v in np.ndenumerate(a):
            if np.isfinite(v):
                ax.text(
                    j,
                    i,
                    f"{v:.2f}",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color="white" if v > (vmin + vmax) / 2 else "black",
                )
        if diagonal:
            for i, name in enumerate(trains):
                if name in tests:
                    j = tests.index(name)
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=1.5, ec="red"))
        ax.set_title(det, fontsize=9)
        ax.set_xlabel("test", fontsize=7)
        ax.set_ylabel("train", fontsize=7)
    for ax in axes[n:]:
        ax.set_axis_off()
    if image is not None:
        fig.colorbar(image, ax=axes.tolist(), shrink=0.8)
    if title:
        fig.suptitle(title)
    return save_figure(fig, stem)


@contextmanager
def _quiet(logger_name: str) -> Iterator[None]:
    """Drop the INFO records of a library's logger while the block runs."""
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def read_scalars(
    log_dir: str | Path, pattern: str = r"(auc|ap|eer|acc|loss)"
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Scalar series ``tag -> (steps, values)`` of the tensorboard logs under ``log_dir`` whose tag
    matches the regular expression ``pattern`` (case-insensitive)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log_dir = Path(log_dir)
    if not log_dir.is_dir():
        raise FileNotFoundError(f"{log_dir}: tensorboard log directory not found")
    regex = re.compile(pattern, re.IGNORECASE)
    series: dict[str, tuple[list[int], list[float]]] = {}
    for events_dir in sorted({p.parent for p in log_dir.rglob("events.out.tfevents.*")}):
        acc = EventAccumulator(str(events_dir), size_guidance={"scalars": 0})
        with _quiet("tensorboard"):  # its INFO "No path found after ..." at every file's end
            acc.Reload()
        prefix = events_dir.relative_to(log_dir).as_posix()
        for tag in acc.Tags().get("scalars", []):
            if regex.search(tag):
                name = tag if prefix == "." else f"{prefix}/{tag}"
                steps, vals = series.setdefault(name, ([], []))
                for ev in acc.Scalars(tag):
                    steps.append(ev.step)
                    vals.append(ev.value)
    out = {}
    for tag, (steps, vals) in series.items():
        order = np.argsort(steps, kind="stable")
        out[tag] = (np.asarray(steps)[order], np.asarray(vals, dtype=np.float64)[order])
    return out


def training_curves(
    log_dir: str | Path, stem: str | Path, pattern: str = r"(auc|ap|eer|acc|loss)", title: str = ""
) -> list[Path]:
    """Metric-vs-training-step curves (paper 002, Figs. 15-20), one panel per metric family."""
    series = read_scalars(log_dir, pattern)
    if not series:
        raise ValueError(f"{log_dir}: no scalar tag matches {pattern!r}")
    families: dict[str, list[str]] = {}
    for tag in sorted(series):
        families.setdefault(tag.rsplit("/", 1)[-1].lower(), []).append(tag)
    cols = min(3, len(families))
    rows = -(-len(families) // cols)
    fig = Figure(figsize=(4.5 * cols, 3.5 * rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols)).ravel()
    for ax in axes[len(families) :]:
        ax.set_axis_off()
    for ax, (family, tags) in zip(axes, families.items(), strict=False):
        for tag in tags:
            steps, vals = series[tag]
            ax.plot(steps, vals, marker=".", label=tag)
        ax.set(xlabel="step", title=family)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    if title:
        fig.suptitle(title)
    return save_figure(fig, stem)
