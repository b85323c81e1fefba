"""The cross-domain leaderboard and cross-manipulation heat maps of several evaluation folders;
the AUC leaderboard gains a ``robust AUC`` column (the mean AUC over DeeperForensics-1.0's
perturbation cases) for folders that hold a robustness run in ``<eval>/robustness/``."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from fairforensics.evaluation import plots
from fairforensics.evaluation.predictions import read_predictions
from fairforensics.evaluation.report import Section, write_report
from fairforensics.evaluation.results import set_labels, slug
from fairforensics.evaluation.scoring import evaluate_predictions, level_label
from fairforensics.evaluation.tables import Result, Table, cross_manipulation, leaderboard

log = logging.getLogger(__name__)


def collect_results(
    eval_dirs: Sequence[str | Path],
    level: str = "frame",
    reduce: str = "mean",
    threshold: float = 0.5,
) -> list[Result]:
    """One :class:`Result` per test set of each evaluation folder, recomputed from its
    predictions files (detector and training data come from ``eval.json``)."""
    return _results_by_level(eval_dirs, [level], reduce, threshold)[level]


def _results_by_level(
    eval_dirs: Sequence[str | Path], levels: Sequence[str], reduce: str, threshold: float
) -> dict[str, list[Result]]:
    """:func:`collect_results` at each of ``levels``, reading every predictions file once."""
    results: dict[str, list[Result]] = {level: [] for level in levels}
    for d in map(Path, eval_dirs):
        info_path = d / "eval.json"
        if not info_path.is_file():
            raise FileNotFoundError(f"{info_path}: not an evaluation folder (no eval.json)")
        info = json.loads(info_path.read_text(encoding="utf-8"))
        labels = set_labels(info.get("test_data", []), info)  # a partial set keeps its label
        for name in info.get("test_data", []):
            path = d / "predictions" / f"{slug(name)}.csv"
            if not path.is_file():
                log.warning("%s: no predictions for %s; left out", d, name)
                continue
            pred = read_predictions(path)
            for level in levels:
                res = evaluate_predictions(pred, level=level, reduce=reduce, threshold=threshold)
                results[level].append(
                    Result(
                        info["detector"],
                        info.get("train_data", ""),
                        labels[name],
                        res["metrics"],
                        res["unit"],
                    )
                )
    return results


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


def add_robust_column(table: Table, robust: dict[str, float]) -> Table:
    """The ``robust AUC`` column after the others (``None`` for a detector without a run)."""
    table.columns.append("robust AUC")
    detector = table.columns.index("Detector")
    for row in table.rows:
        row.append(robust.get(row[detector]))
    return table


def build_leaderboard(
    eval_dirs: Sequence[str | Path],
    out_dir: str | Path,
    metrics: Sequence[str] = ("auc", "ap", "eer", "acc"),
    levels: Sequence[str] | str = ("frame",),
    *,
    reduce: str = "mean",
    threshold: float = 0.5,
    within: Sequence[str] | None = None,
    train_data: str | None = None,
    extra_sections: Sequence[Section | tuple] = (),
) -> Path:
    """Leaderboards (paper 002 Table 3) per level and metric
    (``leaderboard_<level>_<metric>.*``), cross-manipulation heat maps (Figure 2) and a radar
    chart (of the first level) from several evaluation folders, with an HTML report; returns
    ``out_dir``.

    Image and video detectors share one table; at ``level="frame"`` a video detector's rows are
    its clips (the section title says ``frame/clip level``), at ``video`` both are videos."""
    out = Path(out_dir)
    levels = [levels] if isinstance(levels, str) else list(levels)
    by_level = _results_by_level(eval_dirs, levels, reduce, threshold)
    if not any(by_level.values()):
        raise ValueError("the evaluation folders hold no predictions")
    sections = []
    for level, results in by_level.items():
        label = level_label(level, [r.unit for r in results])  # frame/clip: image + video
        robust = collect_robust_auc(eval_dirs, level)
        for metric in metrics:
            table = leaderboard(results, metric, within=within, train_data=train_data)
            if metric == "auc" and robust:
                add_robust_column(table, robust)
            table.write(out / f"leaderboard_{level}_{slug(metric)}")
            sections.append(Section(f"{metric.upper()} ({label} level)", [table]))
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
