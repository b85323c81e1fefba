"""The calibration and threshold-transfer tables and figures of an evaluation folder.

``tables/calibration.{csv,md,json}``: per test set and level, the ECE (15 equal-width bins) with
its interval clustered by video, the MCE, Brier score and NLL. ``figures/reliability_<set>``:
the reliability diagram with the number of samples in each bin.

``tables/threshold_transfer.{csv,md,json}``: per test set, FPR, FNR and ACC at the decision
threshold the evaluation used (the run's validation threshold when it has one: what a deployed
detector decides at) beside the same at the test set's own EER threshold (an oracle no deployment
has), and the ACC lost; rates with Wilson intervals clustered by video.
``figures/threshold_transfer_<set>``: both classes' score histograms with both thresholds.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from fairforensics.evaluation.calibration.metrics import reliability_bins
from fairforensics.evaluation.calibration.run import LEVELS, calibration_rows, level_codes
from fairforensics.evaluation.confidence import coded_proportion_interval
from fairforensics.evaluation.metrics import eer
from fairforensics.evaluation.plots import save_figure
from fairforensics.evaluation.predictions import Predictions
from fairforensics.evaluation.tables import Table

CALIBRATION_TEXT = (
    "A calibrated detector's score is the share of fakes among the samples given that score. "
    "ECE: the bins' mean gap between the two, weighted by their counts (0 = calibrated). Fit a "
    "map on validation with <code>fairforensics calibrate</code>."
)
TRANSFER_TEXT = (
    "Rates at the threshold this evaluation decided at, beside those at each test set's own EER "
    "threshold (an oracle: it is chosen on the test labels); <i>acc lost</i> is what deciding at "
    "the given threshold costs."
)
CALIBRATION_COLUMNS = ["test_data", "level", "ece", "ece_low", "ece_high", "mce", "brier", "nll",
                       "n_bins", "n_real_videos", "n_fake_videos", "note"]  # fmt: skip


def calibration_table(
    preds: Mapping[str, Predictions], *, n_boot: int = 1000, seed: int = 0
) -> Table:
    """The calibration rows of every test set (frame and video level)."""
    table = Table(CALIBRATION_COLUMNS, title="Calibration of P(fake): ECE (15 equal-width bins, "
                  "interval by videos), MCE, Brier, NLL")  # fmt: skip
    for name, pred in preds.items():
        for row in calibration_rows(pred, name, n_boot=n_boot, seed=seed):
            table.rows.append([row.get(c) for c in CALIBRATION_COLUMNS])
    return table


def reliability_figure(pred: Predictions, stem: str | Path, title: str) -> list[Path]:
    """Reliability diagrams at frame and video level: share of fakes against the mean score per
    bin, the diagonal, and each bin's count written above it."""
    fig = Figure(figsize=(9, 4))
    for ax, level in zip(fig.subplots(1, 2), LEVELS, strict=True):
        y, s, _ = level_codes(pred, level)
        bins = reliability_bins(y, s)
        centres = (bins.edges[:-1] + bins.edges[1:]) / 2
        filled = bins.counts > 0
        width = np.diff(bins.edges)
        ax.bar(centres[filled], bins.fake_share[filled], width=width[filled], edgecolor="k",
               color="tab:blue", alpha=0.7, label="share of fakes")  # fmt: skip
        ax.plot([0, 1], [0, 1], "k--", lw=0.8, label="calibrated")
        for x, h, n in zip(
            centres[filled], bins.fake_share[filled], bins.counts[filled], strict=True
        ):
            ax.text(x, min(h + 0.02, 0.97), f"{int(n)}", ha="center", fontsize=6)
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="mean score (P(fake)) in the bin",
               ylabel="share of fakes", title=f"{level} level (n per bin above)")  # fmt: skip
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(title)
    return save_figure(fig, stem)


def _rates(y: np.ndarray, s: np.ndarray, units: np.ndarray, threshold: float) -> dict[str, Any]:
    """FPR, FNR, ACC at ``threshold`` (fake when score >= threshold), with intervals by video
    (``units``: video codes, :func:`level_codes`)."""
    n_units = int(units.max()) + 1 if len(units) else 0
    fake = s >= threshold
    out: dict[str, Any] = {}
    for name, events, rows in (
        ("fpr", fake, y == 0),
        ("fnr", ~fake, y == 1),
        ("acc", fake == (y == 1), np.ones(len(y), bool)),
    ):
        if rows.any():
            out[name] = float(events[rows].mean())
            out[f"{name}_low"], out[f"{name}_high"] = coded_proportion_interval(
                events[rows], units[rows], n_units
            )
        else:
            out[name] = out[f"{name}_low"] = out[f"{name}_high"] = float("nan")
    return out


def threshold_transfer_rows(
    pred: Predictions, name: str, threshold: float, chosen_by: str, level: str = "frame"
) -> dict[str, Any]:
    """One test set's rates at the given (validation) threshold and at its own EER threshold."""
    y, s, units = level_codes(pred, level)
    oracle = eer(y, s)[1] if len(np.unique(y)) == 2 else float("nan")
    given = _rates(y, s, units, threshold)
    row: dict[str, Any] = {"test_data": name, "level": level, "threshold": threshold,
                           "chosen_by": chosen_by}  # fmt: skip
    row |= {f"{k} (given)": v for k, v in given.items()}
    row["eer_threshold"] = oracle
    if np.isfinite(oracle):
        own = _rates(y, s, units, oracle)
        row |= {f"{k} (own EER)": v for k, v in own.items()}
        row["acc lost"] = own["acc"] - given["acc"]
    row["n_real_videos"] = int(np.count_nonzero(np.bincount(units[y == 0])))
    row["n_fake_videos"] = int(np.count_nonzero(np.bincount(units[y == 1])))
    return row


def threshold_transfer_table(
    preds: Mapping[str, Predictions], threshold: float, chosen_by: str
) -> Table:
    """Threshold transfer of every test set, at frame and video level."""
    rows = [
        threshold_transfer_rows(pred, name, threshold, chosen_by, level)
        for name, pred in preds.items()
        for level in LEVELS
    ]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    table = Table(columns, title=f"Threshold transfer: decisions at {threshold:.4g} "
                  f"(chosen by: {chosen_by}) beside each test set's own EER threshold")  # fmt: skip
    table.rows = [[r.get(c) for c in columns] for r in rows]
    return table


def threshold_figure(
    pred: Predictions, stem: str | Path, title: str, threshold: float
) -> list[Path]:
    """Score histograms of reals and fakes with the given and the own-EER thresholds drawn."""
    y, s = pred.label, pred.score
    fig = Figure(figsize=(5.5, 3.5))
    ax = fig.subplots()
    edges = np.linspace(0, 1, 51)
    for label, text, colour in ((0, "real", "tab:blue"), (1, "fake", "tab:red")):
        if (y == label).any():
            ax.hist(s[y == label], bins=edges, alpha=0.6, color=colour,
                    label=f"{text} (n={int((y == label).sum())})")  # fmt: skip
    ax.axvline(threshold, color="k", lw=1.2, label=f"given {threshold:.3f}")
    if len(np.unique(y)) == 2:
        own = eer(y, s)[1]
        ax.axvline(own, color="k", lw=1.2, ls="--", label=f"own EER {own:.3f}")
    ax.set(xlabel="score (probability of fake)", ylabel="frames", title=title)
    ax.legend(fontsize=7)
    return save_figure(fig, stem)
