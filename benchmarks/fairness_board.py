"""The leaderboard's fairness columns and Pareto figures (issue 38, item 3): evaluation's
leaderboard entries measured with the fairness module, so it lives above both.

For each test set and each attribute of its predictions with at least two groups, one table
(``fairness_<test set>_<attribute>.*``), one row per detector and baseline (seed-averaged
scores, frame level, videos as the clusters), **sorted by AUC**, the baselines last and set
apart (never ranked):

* ``threshold``, ``chosen by``: the row's decision threshold (the mean of its seeds', each the
  one its evaluation decided with: the run's validation threshold where there is one) and how
  it was chosen; ``decisions``: ``one class`` when every decision on the test set is the same
  (all fake or all real), whose threshold columns then read ``one class`` instead of a gap;
  ``seeds``: how many runs' scores the row averages (the title gives the test videos);
* ``AUC`` (of the seed-averaged scores; the leaderboard's is the mean of the seeds' AUCs) with
  its clustered interval; ``AUC gap``, ``FPR gap``, ``FNR gap``: the signed gaps of
  :func:`fairness.gaps.group_gaps` (between the groups furthest apart; ``AUC gap`` is
  threshold-free, the others at the row's threshold); ``ECE gap``: the signed gap of the
  groups' calibration errors of P(fake) (:func:`fairness.group_calibration.group_calibration`,
  15 equal-width bins, threshold-free), its interval of the difference from one bootstrap of
  videos;
* Lin et al.'s ``F_FPR``, ``F_OAE``, ``F_DP``, ``F_MEO`` at the row's threshold
  (:func:`fairness.leaderboard_metrics.lin_intervals`);
* ``xAUC a>b``: the cross-group AUC of every ordered pair of groups (fakes of a against reals
  of b; :func:`fairness.leaderboard_metrics.cross_group_aucs`), threshold-free.

Every figure carries its interval in the CSV and JSON (``<column> low/high``) under the
small-group rule. Why sorted by AUC: a constant predictor has zero threshold gaps and would top
any gap column; beside its AUC of 0.5 it cannot pass for a good detector. The Pareto figure of
each table (``pareto_<test set>_<attribute>``) plots AUC against the absolute AUC gap, joins
the non-dominated rows and marks the baselines.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from fairforensics.evaluation.confidence import MIN_INTERVAL_UNITS
from fairforensics.evaluation.leaderboard import Entry, one_class, test_videos
from fairforensics.evaluation.metrics import factorize
from fairforensics.evaluation.plots import save_figure
from fairforensics.evaluation.results import slug
from fairforensics.evaluation.significance import seed_average
from fairforensics.evaluation.tables import BASELINE, ONE_CLASS, Table, detector_type
from fairforensics.fairness.abf import is_missing
from fairforensics.fairness.gaps import group_gaps
from fairforensics.fairness.group_calibration import group_calibration
from fairforensics.fairness.leaderboard_metrics import LIN_KEYS, cross_group_aucs, lin_intervals

log = logging.getLogger(__name__)

GAPS = ("auc", "fpr", "fnr")
#: Replicates of the AUC and xAUC columns' bootstrap-t intervals in ``fairforensics fairness``
#: and ``test --leaderboard`` (the board's site passes its own ``fairness_boot``).
AUC_BOOT = 1000
#: The columns of decisions at the row's threshold (``one class`` when they are all the same).
AT_THRESHOLD = ("FPR gap", "FNR gap", *LIN_KEYS)


def attributes_of(entries: Sequence[Entry], test_data: str) -> list[str]:
    """The attributes of ``test_data``'s predictions with at least two known groups."""
    pred = next(e.preds[0] for e in entries if e.test_data == test_data)
    return sorted(
        name
        for name, values in pred.attributes.items()
        if len({str(v) for v in factorize(values)[1] if not is_missing(v)}) >= 2
    )


def known_rows(values: Any) -> np.ndarray:
    """Rows whose group value is known (each distinct value tested once, not each row)."""
    codes, uniq = factorize(values)
    return ~np.array([is_missing(v) for v in uniq], dtype=bool)[codes]


def _row(
    entry: Entry,
    attribute: str,
    *,
    n_boot: int,
    confidence: float,
    seed: int,
    min_units: int,
    pooled_memo: dict | None = None,
    auc_boot: int = AUC_BOOT,
) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """Values and details (interval, note) of one row; ``pooled_memo`` (one dict per entry
    and settings) keeps the pooled AUC of each known-rows mask for the entry's other
    attributes; ``auc_boot``: the replicates of the AUC and xAUC columns' bootstrap-t."""
    pred = seed_average(entry.preds)
    y, s, g, units = pred.label, pred.score, pred.attributes[attribute], pred.video_key
    values: dict[str, float] = {}
    details: dict[str, dict[str, Any]] = {}
    known = known_rows(g)
    gaps = group_gaps(
        y[known], s[known], g[known], units[known], metrics=GAPS, threshold=entry.threshold,
        n_boot=n_boot, n_perm=0, confidence=confidence, seed=seed, min_units=min_units,
    )  # fmt: skip
    key = (len(known), np.packbits(known).tobytes(), auc_boot)
    pooled = (pooled_memo or {}).get(key)
    if pooled is None:
        pooled = cross_group_aucs(
            y[known], s[known], np.full(known.sum(), "all"), units[known],
            confidence=confidence, min_units=min_units, n_boot=auc_boot,
        )[("all", "all")]  # fmt: skip
        if pooled_memo is not None:
            pooled_memo[key] = pooled
    values["AUC"] = pooled.value
    details["AUC"] = {"low": pooled.low, "high": pooled.high}
    for m in GAPS:
        gap = gaps.gaps[m]
        name = f"{m.upper()} gap"
        values[name] = gap.diff
        details[name] = {"low": gap.low, "high": gap.high, "pair": f"{gap.group_a}-{gap.group_b}"}
    ece = group_calibration(
        y[known], s[known], g[known], units[known], n_boot=n_boot, confidence=confidence,
        seed=seed, min_units=min_units,
    ).gap  # fmt: skip
    values["ECE gap"] = ece.diff
    details["ECE gap"] = {"low": ece.low, "high": ece.high, "pair": f"{ece.group_a}-{ece.group_b}"}
    lin = lin_intervals(
        y, s, g, units, threshold=entry.threshold, n_boot=n_boot, confidence=confidence,
        seed=seed, min_units=min_units,
    )  # fmt: skip
    for k in LIN_KEYS:
        values[k] = lin[k].value
        details[k] = {"low": lin[k].low, "high": lin[k].high}
    if one_class(pred, "frame", "mean", entry.threshold):  # no gap to see: say so, not 0
        for k in AT_THRESHOLD:
            values[k], details[k] = ONE_CLASS, {}
    for (a, b), est in cross_group_aucs(
        y, s, g, units, confidence=confidence, min_units=min_units, n_boot=auc_boot
    ).items():
        values[f"xAUC {a}>{b}"] = est.value
        details[f"xAUC {a}>{b}"] = {"low": est.low, "high": est.high}
    return values, details


def fairness_row(
    entry: Entry,
    attribute: str,
    *,
    n_boot: int = 200,
    confidence: float = 0.95,
    seed: int = 0,
    min_units: int = MIN_INTERVAL_UNITS,
    pooled_memo: dict | None = None,
    auc_boot: int = AUC_BOOT,
) -> tuple[Any, ...]:
    """One entry's row of its test set's fairness table by ``attribute`` (its predictions read
    once): ``(type, detector, threshold, chosen by, decisions, seeds, values, details)``; a
    ValueError when it has none (e.g. one class, one group). ``pooled_memo``: one dict for
    all attributes of the entry (same settings), so that its pooled AUC is computed once.
    ``n_boot``: the replicates of the gaps' and Lin et al.'s intervals; ``auc_boot``: of the
    AUC and xAUC columns' bootstrap-t (:data:`AUC_BOOT` unless a caller, the board's site,
    asks for its own count)."""
    values, details = _row(
        entry, attribute, n_boot=n_boot, confidence=confidence, seed=seed, min_units=min_units,
        pooled_memo=pooled_memo, auc_boot=auc_boot,
    )  # fmt: skip
    kind = BASELINE if entry.baseline else detector_type(entry.detector)
    how = entry.threshold_text + (" (mean of the seeds')" if len(set(entry.thresholds)) > 1 else "")
    split = ONE_CLASS if values[AT_THRESHOLD[0]] == ONE_CLASS else "both classes"
    return (kind, entry.detector, entry.threshold, how, split, len(entry.preds), values, details)


def fairness_table(
    entries: Sequence[Entry],
    test_data: str,
    attribute: str,
    *,
    n_boot: int = 200,
    confidence: float = 0.95,
    seed: int = 0,
    min_units: int = MIN_INTERVAL_UNITS,
) -> Table:
    """The fairness table of ``test_data`` and ``attribute`` (module docstring)."""
    rows = []
    for e in entries:
        if e.test_data != test_data:
            continue
        try:
            row = fairness_row(
                e, attribute, n_boot=n_boot, confidence=confidence, seed=seed, min_units=min_units
            )
        except ValueError as exc:  # e.g. one class, one group
            log.warning(
                "fairness columns: %s on %s by %s: %s", e.detector, test_data, attribute, exc
            )
            continue
        rows.append(row)
    videos = test_videos([e for e in entries if e.test_data == test_data])[test_data]
    return rows_table(rows, test_data, attribute, videos)


def rows_table(
    rows: Sequence[tuple[Any, ...]], test_data: str, attribute: str, videos: str
) -> Table:
    """The fairness table of rows of :func:`fairness_row` (``videos``: ``n = 128 videos``)."""
    if not rows:
        raise ValueError(f"no row of {test_data} has fairness figures by {attribute}")
    several = any(r[5] > 1 for r in rows)
    # detectors by AUC, then the baselines by AUC (set apart, never ranked)
    rows = sorted(
        rows, key=lambda r: (r[0] == BASELINE, -np.nan_to_num(r[6]["AUC"], nan=-1.0), r[1])
    )
    figures = list(rows[0][6])
    auc = "AUC of the seed-averaged scores" if several else "AUC"
    table = Table(
        ["Type", "Detector", "threshold", "chosen by", "decisions", "seeds", *figures],
        title=(
            f"{test_data}: fairness by {attribute} ({videos}; sorted by AUC; {auc}, frame level; gaps "
            "and Lin et al.'s figures at each row's threshold, said with how it was chosen; "
            f"{ONE_CLASS}: every decision the same, no gap to measure; AUC gap, ECE gap (of "
            "P(fake), 15 bins) and xAUC threshold-free; intervals in the CSV/JSON)"
        ),
    )
    for i, (kind, detector, threshold, how, split, seeds, values, details) in enumerate(rows):
        table.rows.append(
            [kind, detector, threshold, how, split, seeds, *(values.get(f) for f in figures)]
        )
        for j, f in enumerate(figures, start=6):
            info = {k: v for k, v in details.get(f, {}).items() if k in ("low", "high")}
            table.details[(i, j)] = info
        if kind == BASELINE:
            table.baseline_rows.add(i)
    return table


def pareto_front(auc: Sequence[float], gap: Sequence[float]) -> list[int]:
    """Indices of the points no other point dominates (an AUC at least as high and a gap at
    least as small, one of them strictly), ordered by AUC; NaN points take no part."""
    a, g = np.asarray(auc, dtype=np.float64), np.asarray(gap, dtype=np.float64)
    ok = np.flatnonzero(np.isfinite(a) & np.isfinite(g))
    front = [
        i
        for i in ok
        if not any((a[j] >= a[i] and g[j] <= g[i]) and (a[j] > a[i] or g[j] < g[i]) for j in ok)
    ]
    return sorted(front, key=lambda i: a[i])


def label_box(text: Any, renderer: Any) -> Any:
    """The window extent of an annotation's text alone (without its line to the point)."""
    from matplotlib.text import Text

    return Text.get_window_extent(text, renderer)


def place_labels(ax: Any, points: Sequence[tuple[float, float]], labels: Sequence[str]) -> list:
    """Annotate each point with its label where it overlaps no label placed before (tried
    right of the point, then below and above it at growing distances, then left), with a line
    to the point when moved; returns the texts."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = ax.figure
    renderer = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    renderer = renderer.get_renderer()
    steps = [0, *(d * k for k in range(1, 13) for d in (-1, 1))]
    tries = [(dx, 3 + 9 * k) for dx in (4, -4) for k in steps]
    texts, placed = [], []
    order = sorted(range(len(points)), key=lambda i: (-points[i][1], points[i][0]))
    for i in order:
        probe = ax.annotate(labels[i], points[i], xytext=tries[0], textcoords="offset points",
                            fontsize=7)  # fmt: skip
        for dx, dy in tries:
            probe.set_position((dx, dy))
            probe.set_horizontalalignment("left" if dx > 0 else "right")
            box = label_box(probe, renderer).expanded(1.02, 1.1)
            if not any(box.overlaps(b) for b in placed):
                break
        probe.remove()
        moved = {"arrowprops": {"arrowstyle": "-", "color": "0.6", "lw": 0.5}}
        text = ax.annotate(
            labels[i], points[i], xytext=(dx, dy), textcoords="offset points", fontsize=7,
            ha="left" if dx > 0 else "right", **(moved if (dx, dy) != tries[0] else {}),
        )  # fmt: skip
        placed.append(label_box(text, renderer))
        texts.append(text)
    return texts


def pareto_figure(table: Table, stem: Path) -> list[Path]:
    """AUC against |AUC gap| of a fairness table, the front joined, baselines marked, labels
    placed apart (:func:`place_labels`)."""
    records = table.records()
    auc = [r["AUC"] if r["AUC"] is not None else np.nan for r in records]
    gap = [abs(r["AUC gap"]) if r["AUC gap"] is not None else np.nan for r in records]
    front = pareto_front(auc, gap)
    fig = Figure(figsize=(5.5, 4.5))
    ax = fig.add_subplot()
    labels, points = [], []
    for r, x, y in zip(records, auc, gap, strict=True):
        baseline = r["Type"] == BASELINE
        ax.scatter(x, y, marker="x" if baseline else "o", color="grey" if baseline else "C0")
        if np.isfinite(x) and np.isfinite(y):
            labels.append(r["Detector"] + (" (baseline)" if baseline else ""))
            points.append((x, y))
    if front:
        ax.plot([auc[i] for i in front], [gap[i] for i in front], "-", color="C1", label="front")
        ax.legend(fontsize=7)
    ax.set_xlabel("AUC (higher is better)")
    ax.set_ylabel("|AUC gap| between groups (lower is better)")
    ax.set_title(table.title.split(" (")[0], fontsize=9)
    place_labels(ax, points, labels)
    return save_figure(fig, stem)


def write_fairness_tables(
    entries: Sequence[Entry],
    out: Path,
    *,
    n_boot: int = 200,
    confidence: float = 0.95,
    seed: int = 0,
    latex: bool = False,
) -> list[tuple[Table, Path]]:
    """Every test set's fairness tables and Pareto figures into ``out`` (``latex``: the
    tables also as ``.tex``); returns the tables with their figures."""
    written = []
    for test_data in dict.fromkeys(e.test_data for e in entries):
        for attribute in attributes_of(entries, test_data):
            try:
                table = fairness_table(
                    entries, test_data, attribute, n_boot=n_boot, confidence=confidence, seed=seed
                )
            except ValueError as exc:
                log.warning("fairness columns: %s", exc)
                continue
            stem = f"{slug(test_data)}_{slug(attribute)}"
            table.write(out / f"fairness_{stem}", latex=latex)
            figure = pareto_figure(table, out / f"pareto_{stem}")[0]
            written.append((table, figure))
    return written
