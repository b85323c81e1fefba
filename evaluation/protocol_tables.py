"""The generalisation benchmarks' tables: AUC per test method grouped by family with the family
means (DF40 Tables 3-5, Celeb-DF++'s per-scenario tables) and the one-vs-all matrix (DF40
Protocol 4, Fig. 4) as a CSV and a heat map.

A cell is the frame-level AUC of one test set (one method's fakes with the reals it is tested
against) with a 95 % interval from Obuchowski's clustered variance
(:func:`evaluation.confidence.clustered_auc_variance`, frames clustered by video), shown only
when the test set has :data:`~evaluation.confidence.MIN_INTERVAL_UNITS` videos of each class;
with several seeds, the mean of the seeds' AUCs and its interval.
Family means are plain means of the methods' AUCs, as the papers report them (no interval:
their methods share the reals, so the cells are not independent).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from scipy import stats
from sklearn.metrics import roc_auc_score

from fairforensics.evaluation.confidence import (
    MIN_INTERVAL_UNITS,
    Interval,
    clustered_auc_variance,
    few_units_note,
    too_few_units,
)
from fairforensics.evaluation.metrics import factorize
from fairforensics.evaluation.plots import heatmaps
from fairforensics.evaluation.predictions import Predictions
from fairforensics.evaluation.significance import clustered_auc_covariance, seed_rows
from fairforensics.evaluation.tables import Table


def auc_interval(
    pred: Predictions | Sequence[Predictions],
    confidence: float = 0.95,
    min_units: int = MIN_INTERVAL_UNITS,
) -> Interval:
    """Frame-level AUC of ``pred`` with a normal interval on its video-clustered variance
    (clipped to [0, 1]); NaN bounds, with the reason in ``note``, below ``min_units`` videos of
    a class. Several predictions files of one test set (a detector trained with several seeds)
    give the mean of their AUCs over the frames all of them scored, with the variance of that
    mean from the AUCs' clustered covariance (the trained models held fixed)."""
    preds = [pred] if isinstance(pred, Predictions) else list(pred)
    first, scores = seed_rows(preds)
    videos = np.char.add(np.char.add(first.method.astype(str), "/"), first.video_id.astype(str))
    codes, uniq = factorize(videos)
    video_label = np.zeros(len(uniq), dtype=np.int64)
    video_label[codes] = first.label
    fewest = int(np.bincount(video_label, minlength=2).min())
    if len(scores) == 1:
        value, var, fewest = clustered_auc_variance(first.label, scores[0], codes)
    elif fewest >= 2:
        aucs, cov = clustered_auc_covariance(first.label, scores, codes)
        value, var = float(aucs.mean()), float(cov.sum()) / len(scores) ** 2
    else:
        value = float(np.mean([roc_auc_score(first.label, s) for s in scores]))
        var = math.nan
    if too_few_units(fewest, min_units):
        return Interval(
            value, math.nan, math.nan, note=few_units_note(fewest, "videos of a class", min_units)
        )
    half = float(stats.norm.ppf(0.5 + confidence / 2)) * math.sqrt(var)
    return Interval(value, max(0.0, value - half), min(1.0, value + half))


def family_table(
    cells: Mapping[str, Interval], family_of: Mapping[str, str], *, title: str = ""
) -> Table:
    """One row per test method (``cells``: method -> AUC), grouped by ``family_of[method]`` in
    the order families first appear, each family closed by its mean; then the mean of all."""
    families: dict[str, list[str]] = {}
    for method in cells:
        families.setdefault(family_of.get(method, "other"), []).append(method)
    rows: list[list] = []
    for family, methods in families.items():
        for m in methods:
            c = cells[m]
            rows.append([family, m, c.value, c.low, c.high, c.note])
        rows.append(
            [family, "mean", float(np.mean([cells[m].value for m in methods])), None, None, ""]
        )
    if len(families) > 1:
        rows.append(
            ["all", "mean", float(np.mean([c.value for c in cells.values()])), None, None, ""]
        )
    return Table(["family", "method", "auc", "auc_low", "auc_high", "note"], rows, title=title)


def one_vs_all(
    cells: Mapping[tuple[str, str], Interval], order: Sequence[str] | None = None
) -> tuple[Table, Table]:
    """The AUC matrix (rows: the training method, columns: the test method, missing pairs NaN)
    and the same cells in long form with their intervals."""
    trains = [m for m in order or [] if any(t == m for t, _ in cells)]
    trains += sorted({t for t, _ in cells} - set(trains))
    tests = [m for m in order or [] if any(s == m for _, s in cells)]
    tests += sorted({s for _, s in cells} - set(tests))
    nan = Interval(math.nan, math.nan, math.nan)
    matrix = Table(
        ["train \\ test", *tests],
        [[tr, *(cells.get((tr, te), nan).value for te in tests)] for tr in trains],
        title="one-vs-all AUC",
    )
    long = Table(
        ["train", "test", "auc", "auc_low", "auc_high", "note"],
        [[tr, te, c.value, c.low, c.high, c.note] for (tr, te), c in cells.items()],
    )
    return matrix, long


def one_vs_all_heatmap(matrix: Table, stem: str | Path, title: str = "") -> list[Path]:
    """:func:`one_vs_all`'s matrix as a heat map, its diagonal (train = test method) boxed."""
    return heatmaps({title or "one-vs-all": matrix}, stem, diagonal=True)
