"""The cross-domain leaderboard and cross-manipulation heat maps of several evaluation folders;
the AUC leaderboard gains a ``robust AUC`` column (the mean AUC over DeeperForensics-1.0's
perturbation cases) for folders that hold a robustness run in ``<eval>/robustness/``.

Every cell carries its interval clustered by video; in the AUC tables every detector is compared
with its column's best (:mod:`evaluation.significance`) and the ties are marked and counted;
several folders of one detector (its training seeds) make one row, the mean with its spread.

Each row decides at its own threshold (each seed at the one its ``eval.json`` records: the run's
validation threshold where ``test`` found one) and says it (columns ``Threshold`` and ``Chosen
by``); a cell whose decisions put a test set of both classes in one class is marked ``one
class``. Baseline rows are set apart, never ranked, never a column's best nor the reference of
the tie test."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairforensics.evaluation import plots
from fairforensics.evaluation.calibration.transfer import acc_lost
from fairforensics.evaluation.metrics import factorize, video_scores
from fairforensics.evaluation.predictions import Predictions, predictions_file, read_predictions
from fairforensics.evaluation.report import Section, write_report
from fairforensics.evaluation.results import set_labels, slug
from fairforensics.evaluation.scoring import evaluate_predictions, level_label
from fairforensics.evaluation.significance import (
    GIVEN_MODELS,
    OVER_SEEDS,
    compare_with_best,
    seed_average,
    seed_mean_intervals,
)
from fairforensics.evaluation.tables import (
    THRESHOLD_METRICS,
    TIE_MARK,
    Result,
    Table,
    cross_manipulation,
    leaderboard,
)
from fairforensics.evaluation.thresholds import threshold_chosen_by

log = logging.getLogger(__name__)


class SeedFiles(Sequence[Predictions]):
    """The predictions of a detector's seeds on one test set, read from their files each time
    they are asked for (nothing held between uses, so a leaderboard holds one column at once)."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> Predictions:  # type: ignore[override]
        return read_predictions(self.paths[i])


@dataclass
class Entry:
    """One detector (or baseline) on one test set: its predictions, one file per seed (a list,
    or :class:`SeedFiles` that reads them when used)."""

    detector: str
    train_data: str
    test_data: str  # the test set's label in tables
    preds: Sequence[Predictions] = field(default_factory=list)
    baseline: bool = False
    thresholds: list[float] = field(default_factory=list)  # each seed's decision threshold
    eval_dirs: list[Path] = field(default_factory=list)
    chosen_by: list[str] = field(default_factory=list)  # how each seed's threshold was chosen

    @property
    def threshold(self) -> float:
        """The decision threshold of the seed-averaged scores: the mean of the seeds'."""
        return float(np.mean(self.thresholds))

    @property
    def threshold_text(self) -> str:
        """How its threshold was chosen, in a few words (one per kind among its seeds)."""
        return " / ".join(dict.fromkeys(self.chosen_by)) or "default"


def collect_entries(eval_dirs: Sequence[str | Path]) -> list[Entry]:
    """The predictions of every evaluation folder, grouped by detector, training data and test
    set: several folders of one detector (its training seeds) make one entry. The files are
    read when an entry's ``preds`` are used (:class:`SeedFiles`), not here."""
    entries: dict[tuple[str, str, str], Entry] = {}
    files: dict[tuple[str, str, str], list[Path]] = {}
    for d in map(Path, eval_dirs):
        info_path = d / "eval.json"
        if not info_path.is_file():
            raise FileNotFoundError(f"{info_path}: not an evaluation folder (no eval.json)")
        info = json.loads(info_path.read_text(encoding="utf-8"))
        labels = set_labels(info.get("test_data", []), info)  # a partial set keeps its label
        for name in info.get("test_data", []):
            path = predictions_file(d / "predictions", slug(name))
            if not path.is_file():
                log.warning("%s: no predictions for %s; left out", d, name)
                continue
            key = (info["detector"], info.get("train_data", ""), labels[name])
            entry = entries.setdefault(key, Entry(*key, baseline=bool(info.get("baseline"))))
            files.setdefault(key, []).append(path)
            entry.thresholds.append(float(info.get("threshold", 0.5)))
            entry.chosen_by.append(threshold_chosen_by(info))
            entry.eval_dirs.append(d)
    for key, e in entries.items():
        e.preds = SeedFiles(files[key])
    for e in entries.values():
        if len(e.preds) > 1:
            log.info("leaderboard: %s on %s: %d seeds", e.detector, e.test_data, len(e.preds))
    return list(entries.values())


def collect_results(
    eval_dirs: Sequence[str | Path],
    level: str = "frame",
    reduce: str = "mean",
    threshold: float | None = None,
) -> list[Result]:
    """One :class:`Result` per test set of each evaluation folder, recomputed from its
    predictions files (detector and training data come from ``eval.json``); a detector's
    folders of several seeds give one result, the mean over the seeds. ``threshold``: one for
    every row (default: each folder's own, its ``eval.json``'s)."""
    entries = collect_entries(eval_dirs)
    return [_result(e, level, reduce, threshold)[0] for e in entries]


def seed_thresholds(entry: Entry, threshold: float | None = None) -> list[float]:
    """Each seed's decision threshold: ``threshold`` for all when given, else its own."""
    return [threshold] * len(entry.preds) if threshold is not None else list(entry.thresholds)


def one_class(pred: Predictions, level: str, reduce: str, threshold: float) -> bool:
    """Whether the decisions at ``threshold`` put a test set of both classes in one class
    (every unit "fake", or every one "real"), at ``level``."""
    y, s = pred.label, pred.score
    if level == "video":
        y, s, _ = video_scores(y, s, factorize(pred.video_key)[0], reduce=reduce)
    fake = np.asarray(s) >= threshold
    return bool(len(np.unique(y)) > 1 and fake.all() == fake.any())


def _result(
    entry: Entry,
    level: str,
    reduce: str,
    threshold: float | None = None,
    *,
    preds: Sequence[Predictions] | None = None,
) -> tuple[Result, dict[str, float]]:
    """The entry's metrics (mean over its seeds, each at its threshold:
    :func:`seed_thresholds`) and their spread across seeds (sample standard deviation; none
    with one seed); ``preds``: its seeds' predictions, already read."""
    runs = [
        evaluate_predictions(p, level=level, reduce=reduce, threshold=t)
        for p, t in zip(
            entry.preds if preds is None else preds, seed_thresholds(entry, threshold), strict=True
        )
    ]
    names = list(runs[0]["metrics"])
    values = np.array([[r["metrics"][m] for m in names] for r in runs], dtype=np.float64)
    mean = dict(zip(names, values.mean(axis=0).tolist(), strict=True))
    sd = {}
    if len(runs) > 1:
        sd = dict(zip(names, values.std(axis=0, ddof=1).tolist(), strict=True))
    result = Result(entry.detector, entry.train_data, entry.test_data, mean, runs[0]["unit"])
    return result, sd


@dataclass
class Cells:
    """Per level: the results and, per (detector, test set, metric), what its cell carries."""

    results: list[Result] = field(default_factory=list)
    details: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)


def entry_cells(
    entry: Entry,
    level: str,
    *,
    reduce: str,
    threshold: float | None,
    n_boot: int,
    confidence: float,
    seed: int,
) -> tuple[Result, dict[str, dict[str, Any]], Predictions]:
    """One entry's cell at ``level``, its predictions read once: its result (mean over seeds),
    per metric what the cell carries (interval clustered by video; of the mean over seeds:
    :func:`evaluation.significance.seed_mean_ci`; spread across seeds; one class) and its
    seed-averaged predictions (what the tie test compares)."""
    seeds = list(entry.preds)
    result, sd = _result(entry, level, reduce, threshold, preds=seeds)
    averaged = seed_average(seeds)
    thresholds = seed_thresholds(entry, threshold)
    ci, over = {}, {}
    if n_boot and len(seeds) == 1:
        ci = evaluate_predictions(
            averaged, level=level, reduce=reduce, threshold=thresholds[0],
            n_boot=n_boot, confidence=confidence, seed=seed,
        )["ci"]  # fmt: skip
    elif n_boot:  # the interval of the mean over the seeds the cell shows
        intervals = seed_mean_intervals(
            seeds, level=level, reduce=reduce, threshold=float(np.mean(thresholds)),
            n_boot=n_boot, confidence=confidence, seed=seed,
        )  # fmt: skip
        ci = {k: [iv.low, iv.high] for k, iv in intervals[GIVEN_MODELS].items()}
        over = {k: [iv.low, iv.high] for k, iv in intervals[OVER_SEEDS].items()}
        if len(set(thresholds)) > 1:  # one threshold per seed: no interval of one
            ci = {k: v for k, v in ci.items() if k not in THRESHOLD_METRICS}
            over = {k: v for k, v in over.items() if k not in THRESHOLD_METRICS}
    split = any(one_class(p, level, reduce, t) for p, t in zip(seeds, thresholds, strict=True))
    details: dict[str, dict[str, Any]] = {}
    for metric in result.metrics:
        info: dict[str, Any] = {}
        if metric in ci:
            info["low"], info["high"] = ci[metric]
        if metric in over:
            info["seeds low"], info["seeds high"] = over[metric]
        if sd:
            info["sd"], info["seeds"] = sd[metric], len(seeds)
        if split and metric in THRESHOLD_METRICS:
            info["one_class"] = True
        details[metric] = info
    return result, details, averaged


def column_ties(
    averaged: dict[str, Predictions],
    shown: dict[str, float],
    baselines: set[str],
    *,
    test_data: str,
    level: str,
    reduce: str,
    alpha: float,
) -> dict[str, dict[str, Any]]:
    """Per detector of one column (its seed-averaged predictions), what its AUC cell says of
    the comparison with the column's best: ``p``, ``tied`` and ``best`` (:func:`_compare`)."""
    out = {}
    compared = _compare(averaged, baselines, level=level, reduce=reduce, alpha=alpha,
                        shown=shown)  # fmt: skip
    for d, c in compared.items():
        if c.note:
            log.warning("leaderboard: %s on %s (%s level): %s", d, test_data, level, c.note)
        out[d] = {"p": c.p_adjusted, "tied": c.tied, "best": c.best}
    return out


def _level_cells(
    entries: Sequence[Entry],
    level: str,
    *,
    reduce: str,
    threshold: float | None,
    n_boot: int,
    confidence: float,
    seed: int,
    alpha: float,
) -> Cells:
    """Results (means over seeds), what each cell carries (:func:`entry_cells`) and, for AUC,
    the comparison of each detector (its seed-averaged scores) with its column's best
    (:func:`column_ties`); baselines are never the best nor its reference."""
    cells = Cells()
    baselines = {e.detector for e in entries if e.baseline}
    columns: dict[tuple[str, str], list[int]] = {}
    for i, e in enumerate(entries):
        columns.setdefault((e.train_data, e.test_data), []).append(i)
    results: dict[int, Result] = {}
    for (_, test_data), members in columns.items():  # one column's predictions held at once
        averaged: dict[str, Predictions] = {}
        shown: dict[str, float] = {}  # the AUC each cell prints
        for i in members:
            e = entries[i]
            result, details, averaged[e.detector] = entry_cells(
                e, level, reduce=reduce, threshold=threshold, n_boot=n_boot,
                confidence=confidence, seed=seed,
            )  # fmt: skip
            results[i] = result
            shown[e.detector] = result.metrics["auc"]
            for metric, info in details.items():
                cells.details[(e.detector, e.test_data, metric)] = info
        ties = column_ties(averaged, shown, baselines, test_data=test_data, level=level,
                           reduce=reduce, alpha=alpha)  # fmt: skip
        for d, info in ties.items():
            cells.details[(d, test_data, "auc")].update(info)
        del averaged  # the next column is read after this one is released
    cells.results = [results[i] for i in range(len(entries))]
    return cells


def _compare(
    preds: dict[str, Predictions],
    baselines: set[str],
    *,
    level: str,
    reduce: str,
    alpha: float,
    shown: dict[str, float],
) -> dict[str, Any]:
    """:func:`evaluation.significance.compare_with_best` of a column's detectors; baselines are
    never the best nor the reference and get no tie mark. Nothing with fewer than two
    detectors that are not baselines."""
    if len([d for d in preds if d not in baselines]) < 2:
        return {}
    return compare_with_best(preds, level=level, reduce=reduce, alpha=alpha, shown=shown,
                             baselines=baselines)  # fmt: skip


def annotate(
    table: Table, details: dict[tuple[str, str, str], dict[str, Any]], metric: str
) -> Table:
    """Put each cell's interval, spread and tie mark (``details[(detector, test set,
    metric)]``) into ``table``, and after each ``Top3`` column the count of that group's test
    sets on which the detector is tied with the best (``<group> Tied``) when ties were tested."""
    det = table.columns.index("Detector")
    tested = any("tied" in v for (_, _, m), v in details.items() if m == metric)
    j = 0
    start = det + 1
    while j < len(table.columns):
        name = table.columns[j]
        top = re.fullmatch(r"(.+) Top\d+", name)
        if tested and top:
            group = top.group(1)
            sets = table.columns[start : j - 1]
            table.columns.insert(j + 1, f"{group} Tied")
            for i, row in enumerate(table.rows):
                tied = sum(bool(details.get((row[det], s, metric), {}).get("tied")) for s in sets)
                row.insert(j + 1, None if i in table.baseline_rows else tied)
            table.highlight = {(r, c + (c > j)) for r, c in table.highlight}
            start = j + 2
            j += 1
        j += 1
    for i, row in enumerate(table.rows):
        for j, name in enumerate(table.columns):
            info = details.get((row[det], name, metric))
            if info:
                table.details[(i, j)] = info
    if tested:
        table.title += (
            f"; {TIE_MARK.strip()}: not distinguishable from the column's best "
            "(paired DeLong test clustered by video, family-wise over all pairs: max-|z|)"
        )
    seeds = {v["seeds"] for (_, _, m), v in details.items() if m == metric and "seeds" in v}
    if seeds:
        table.title += (
            f"; rows of several seeds: mean ± sd; the cell's interval ('low'/'high') is "
            f"{GIVEN_MODELS} (test-set sampling only), 'seeds low'/'seeds high' {OVER_SEEDS} "
            "(+ between-seed variance / S, t with S - 1 df)"
        )
        if 2 in seeds:
            table.title += (
                "; with 2 seeds the over-seeds interval is wide: one difference of two seeds "
                "estimates the between-seed variance (t quantile 12.7 with 1 df)"
            )
    return table


def collect_robust_auc(eval_dirs: Sequence[str | Path], level: str = "frame") -> dict[str, float]:
    """``{detector: robust AUC}`` of the evaluation folders that hold a robustness run
    (``<eval>/robustness/robustness_run.json`` of ``fairforensics robustness``): the mean AUC over
    its perturbed cases at ``level`` (video when the run has no such level)."""
    out: dict[str, float] = {}
    for d in map(Path, eval_dirs):
        path = d / "robustness" / "robustness_run.json"  # evaluation.robustness.RUN_INFO
        if not path.is_file():
            continue
        info = json.loads(path.read_text(encoding="utf-8"))
        values = info.get("robust_auc") or {}
        value = values.get(level, values.get("video"))
        if value is not None:
            out[str(info["detector"])] = float(value)
    return out


#: How a threshold chosen on validation data is named (:data:`evaluation.thresholds.CHOSEN_BY`).
_VALIDATION = ("run's validation threshold", "chosen on validation data (--val-data)")


def _what(metric: str, entries: Sequence[Entry]) -> str:
    """What the table's values are: with seeds, the mean of the seeds' values; at each row's
    threshold for the metrics of decisions ("at the validation threshold of each row" when
    every row's was chosen on validation data)."""
    seeds = any(len(e.preds) > 1 for e in entries)
    validation = all(c in _VALIDATION for e in entries for c in e.chosen_by)
    what = f"{metric.upper()} of each seed, mean over seeds" if seeds else metric.upper()
    if metric in THRESHOLD_METRICS:
        where = "the validation threshold of each row" if validation else "each row's threshold"
        what += f" at {where} (columns Threshold, Chosen by; one class: every "
        what += "decision on a test set of both classes the same)"
    return what


def add_robust_column(table: Table, robust: dict[str, float]) -> Table:
    """The ``robust AUC`` column after the others (``None`` for a detector without a run)."""
    table.columns.append("robust AUC")
    detector = table.columns.index("Detector")
    for row in table.rows:
        row.append(robust.get(row[detector]))
    return table


def add_row_columns(table: Table, entries: Sequence[Entry], threshold: float | None) -> Table:
    """After the others: ``Seeds`` (the evaluation folders of each row), ``Threshold`` (each
    seed's decision threshold, or the one ``threshold`` for all) and ``Chosen by`` (how)."""
    detector = table.columns.index("Detector")
    by_name = {e.detector: e for e in entries}
    table.columns += ["Seeds", "Threshold", "Chosen by"]
    for row in table.rows:
        e = by_name[row[detector]]
        values = seed_thresholds(e, threshold)
        shown: Any = values[0] if len(set(values)) == 1 else ", ".join(f"{v:.4g}" for v in values)
        how = e.threshold_text if threshold is None else "given for every row"
        row += [len(e.preds), shown, how]
    return table


def acc_lost_table(
    entries: Sequence[Entry],
    level: str,
    *,
    reduce: str = "mean",
    threshold: float | None = None,
    within: Sequence[str] | None = None,
    train_data: str | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Table:
    """``leaderboard_<level>_acc_lost``: per detector and test set the ACC lost by deciding at
    the row's threshold instead of the test set's own EER threshold (an oracle), with its
    interval clustered by video (:mod:`evaluation.calibration.transfer`); lower is better."""
    results, details = [], {}
    for e in entries:
        try:
            est = acc_lost(
                list(e.preds), seed_thresholds(e, threshold), level=level, reduce=reduce,
                n_boot=n_boot, confidence=confidence, seed=seed,
            )  # fmt: skip
        except ValueError as exc:  # one class: no EER threshold
            log.warning("leaderboard: ACC lost of %s on %s: %s", e.detector, e.test_data, exc)
            est = None
        value = float("nan") if est is None else est.value
        results.append(Result(e.detector, e.train_data, e.test_data, {"acc_lost": value}))
        if est is not None and np.isfinite(est.low):
            details[(e.detector, e.test_data, "acc_lost")] = {"low": est.low, "high": est.high}
    baselines = {e.detector for e in entries if e.baseline}
    table = leaderboard(
        results, "acc_lost", within=within, train_data=train_data, baselines=baselines
    )
    annotate(table, details, "acc_lost")
    add_row_columns(table, entries, threshold)
    table.title = (
        f"ACC lost ({level} level): ACC at each test set's own EER threshold (an oracle, chosen "
        "on its labels) minus ACC at each row's threshold (columns Threshold, Chosen by: the "
        "run's validation threshold where it has one); lower is better (Top3: lowest; "
        "negative: the row's threshold beat the EER threshold's ACC); interval: bootstrap of "
        "videos within class, the EER threshold re-chosen in each replicate (none with fewer "
        "than 5 videos of a class)"
    )
    if any(len(e.preds) > 1 for e in entries):
        table.title += (
            "; rows of several seeds: the mean of the seeds' ACC lost, its interval with the "
            "trained models held fixed"
        )
    return table


def test_videos(entries: Sequence[Entry]) -> dict[str, str]:
    """Per test set, the number of test videos (``n = 128 videos``; a range where rows differ)."""
    counts: dict[str, set[int]] = {}
    for e in entries:
        counts.setdefault(e.test_data, set()).update(
            len(factorize(p.video_key)[1]) for p in e.preds
        )
    return videos_text(counts)


def videos_text(counts: dict[str, set[int]]) -> dict[str, str]:
    """Per test set, its rows' numbers of test videos in words (``n = 128 videos``, a range)."""
    return {
        t: f"n = {min(c)}" + (f"-{max(c)}" if len(c) > 1 else "") + " videos"
        for t, c in counts.items()
    }


def leaderboard_tables(
    cells: Cells,
    entries: Sequence[Entry],
    metrics: Sequence[str],
    *,
    videos: dict[str, str],
    robust: dict[str, float],
    within: Sequence[str] | None = None,
    train_data: str | None = None,
    threshold: float | None = None,
    show_intervals: bool = False,
) -> dict[str, Table]:
    """One level's leaderboard per metric from its cells (:func:`_level_cells`, or cells put
    together from cached ones): annotated (:func:`annotate`), the ``robust AUC`` column where
    ``robust`` has values, the row columns (:func:`add_row_columns`) and ``videos`` (per test
    set, :func:`test_videos`) under the columns and in the title."""
    baselines = {e.detector for e in entries if e.baseline}
    tables = {}
    for metric in metrics:
        table = leaderboard(
            cells.results, metric, within=within, train_data=train_data, baselines=baselines
        )
        annotate(table, cells.details, metric)
        table.show_intervals = show_intervals
        if metric == "auc" and robust:
            add_robust_column(table, robust)
        add_row_columns(table, entries, threshold)
        table.column_notes = videos
        table.title += f"; {_what(metric, entries)}; test videos: " + ", ".join(
            f"{t} {n.removeprefix('n = ')}" for t, n in videos.items()
        )
        tables[metric] = table
    return tables


def build_leaderboard(
    eval_dirs: Sequence[str | Path],
    out_dir: str | Path,
    metrics: Sequence[str] = ("auc", "ap", "eer", "acc"),
    levels: Sequence[str] | str = ("frame",),
    *,
    reduce: str = "mean",
    threshold: float | None = None,
    within: Sequence[str] | None = None,
    train_data: str | None = None,
    extra_sections: Sequence[Section | tuple] = (),
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    alpha: float = 0.05,
    show_intervals: bool = False,
    latex: bool = False,
) -> Path:
    """Leaderboards (paper 002 Table 3) per level and metric
    (``leaderboard_<level>_<metric>.*``), cross-manipulation heat maps (Figure 2) and a radar
    chart (of the first level) from several evaluation folders, with an HTML report; returns
    ``out_dir``.

    Image and video detectors share one table; at ``level="frame"`` a video detector's rows are
    its clips (the section title says ``frame/clip level``), at ``video`` both are videos.

    Every cell carries its interval (``n_boot`` bootstrap replicates over videos, at
    ``confidence``; 0: none) in the CSV and JSON (``<column> low``/``high``), in the Markdown
    and HTML with ``show_intervals``. In the AUC tables each detector is compared with its
    column's best (:mod:`evaluation.significance`, level ``alpha``): ties are marked and counted
    (``<group> Tied``). Folders of one detector with several seeds give one row: the mean over
    the seeds with its interval, their spread (``<column> sd``), and tests of the
    seed-averaged scores (:mod:`evaluation.significance`); an AUC cell of several seeds is the
    mean of the seeds' AUCs (the title says so). Folders whose ``eval.json`` says
    ``"baseline": true`` are baseline rows, set apart and never ranked.

    Each row decides at each seed's own threshold (its ``eval.json``'s; ``threshold``: one for
    every row) and says which and how it was chosen (:func:`add_row_columns`); ``within``: the
    within-domain test sets (default: from the rows' training data,
    :func:`evaluation.tables.within_domain`). ``latex``: each table also as
    ``leaderboard_<level>_<metric>.tex`` (booktabs, with intervals, tie marks, seeds and the
    number of test videos of each set)."""
    out = Path(out_dir)
    levels = [levels] if isinstance(levels, str) else list(levels)
    entries = collect_entries(eval_dirs)
    if not entries:
        raise ValueError("the evaluation folders hold no predictions")
    videos = test_videos(entries)
    by_level = {}
    sections = []
    for level in levels:
        cells = _level_cells(
            entries, level, reduce=reduce, threshold=threshold, n_boot=n_boot,
            confidence=confidence, seed=seed, alpha=alpha,
        )  # fmt: skip
        results = by_level[level] = cells.results
        label = level_label(level, [r.unit for r in results])  # frame/clip: image + video
        robust = collect_robust_auc(eval_dirs, level)
        tables = leaderboard_tables(
            cells, entries, metrics, videos=videos, robust=robust, within=within,
            train_data=train_data, threshold=threshold, show_intervals=show_intervals,
        )  # fmt: skip
        for metric, table in tables.items():
            table.write(out / f"leaderboard_{level}_{slug(metric)}", latex=latex)
            sections.append(Section(f"{metric.upper()} ({label} level)", [table]))
        if "acc" in metrics:  # what deciding at the row's threshold costs (issue 48, item 4)
            table = acc_lost_table(
                entries, level, reduce=reduce, threshold=threshold, within=within,
                train_data=train_data, n_boot=n_boot, confidence=confidence, seed=seed,
            )  # fmt: skip
            table.show_intervals = show_intervals
            table.column_notes = videos
            table.title += "; test videos: " + ", ".join(
                f"{t} {n.removeprefix('n = ')}" for t, n in videos.items()
            )
            table.write(out / f"leaderboard_{level}_acc_lost", latex=latex)
            sections.append(Section(f"ACC lost ({label} level)", [table]))
    level, results = levels[0], by_level[levels[0]]
    figures: list[Path] = []
    first = metrics[0]
    radar: dict[str, dict[str, float]] = {}
    for r in results:
        if train_data is None or r.train_data == train_data:
            radar.setdefault(r.detector, {})[r.test_data] = float(r.metrics[first])
    if len({t for row in radar.values() for t in row}) >= 3:
        figures.append(
            plots.radar_chart(radar, out / f"radar_{level}_{slug(first)}", title=first.upper())[0]
        )
    matrices = cross_manipulation(results, first)
    if matrices:
        for det, table in matrices.items():
            table.write(out / f"cross_manipulation_{slug(det)}_{slug(first)}")
        figures.append(
            plots.heatmaps(
                matrices, out / f"cross_manipulation_{slug(first)}", title=first.upper()
            )[0]
        )
        sections.append(Section("Cross-manipulation", list(matrices.values())))
    if figures:
        sections.append(Section("Figures", figures))
    write_report(
        out / "report.html",
        "Leaderboard",
        sections,
        extra_sections,
        meta={"evaluations": len(eval_dirs)},
    )
    return out
