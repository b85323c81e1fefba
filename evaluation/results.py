"""Evaluation folders: metrics, tables, plots and the report from predictions files.

An evaluation folder holds::

    eval.json                 detector, weights, training data, test sets, settings
    predictions/<set>.csv     one row per frame, or per clip for a video detector (the input
                              of everything below; its "frame" level is then the clip level)
    metrics/<set>.json        frame- and video-level metrics with bootstrap intervals
    tables/<level>_<metric>.{csv,md,json}   Table 3 layout (paper 002), one per metric
    tables/<level>_summary.{csv,md,json}    every metric with its 95% interval, per test set
    tables/calibration.{csv,md,json}        ECE (interval by videos), MCE, Brier, NLL
    tables/threshold_transfer.{csv,md,json} rates at the threshold used and at the own EER one
    figures/*.png|pdf         ROC + PR curves, score histograms
    manifest.json             test sets skipped, with the reason
    report.html

Every table and figure is computed from the predictions files, so
:func:`evaluate_prediction_files` also evaluates any other detector's predictions.
:func:`build_leaderboard` joins several evaluation folders into the cross-domain leaderboard and
the cross-manipulation heat maps.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fairforensics.configs import config_to_dict
from fairforensics.evaluation import plots
from fairforensics.evaluation.calibration.apply import calibrate_predictions, uncalibrated
from fairforensics.evaluation.calibration.section import (
    CALIBRATION_TEXT,
    TRANSFER_TEXT,
    calibration_table,
    reliability_figure,
    threshold_figure,
    threshold_transfer_table,
)
from fairforensics.evaluation.calibration.source import ChosenCalibration
from fairforensics.evaluation.metrics import video_scores
from fairforensics.evaluation.predictions import (
    FORMATS,
    Predictions,
    PredictionsError,
    read_predictions,
    slug,
    write_predictions,
)
from fairforensics.evaluation.report import Section, write_report
from fairforensics.evaluation.scoring import evaluate_levels, level_label, video_codes
from fairforensics.evaluation.settings import TestConfig
from fairforensics.evaluation.tables import Result, Table, leaderboard, metric_table
from fairforensics.evaluation.thresholds import threshold_chosen_by
from fairforensics.preprocessing.files import jsonable, write_json
from fairforensics.preprocessing.index import dataset_label

log = logging.getLogger(__name__)


def set_labels(names: Iterable[str], info: Mapping[str, Any] | None) -> dict[str, str]:
    """The name each test set has in tables: ``"FF-c23"``, or ``"FF-c23 (partial: 42 of 6,000
    listed videos)"`` when ``info["partial"]`` (``eval.json``) says its index is partial."""
    partial = (info or {}).get("partial") or {}
    return {name: dataset_label(name, partial.get(name)) for name in names}


def _summary_table(
    per_set: Mapping[str, Mapping[str, Any]], level: str, metrics: Sequence[str], label: str
) -> Table:
    """Rows test sets; per metric the value and its interval bounds; ``notes`` says why an
    interval is undefined (or how many bootstrap replicates were left out)."""
    columns = ["test_data", "n_real", "n_fake"]
    for m in metrics:
        columns += [m, f"{m}_low", f"{m}_high"]
    columns.append("notes")
    rows = []
    for name, levels in per_set.items():
        res = levels[level]
        row: list[Any] = [name, res["n_real"], res["n_fake"]]
        for m in metrics:
            low, high = res.get("ci", {}).get(m, [None, None])
            row += [res["metrics"][m], low, high]
        row.append(_interval_notes(res.get("ci_notes", {}), metrics))
        rows.append(row)
    ci = (
        f", {res.get('confidence', 0.95):.0%} bootstrap interval over videos"
        if rows and "ci" in res
        else ""
    )
    return Table(columns, rows, title=f"{label}-level metrics{ci}")


def _interval_notes(notes: Mapping[str, str], metrics: Sequence[str]) -> str:
    """``"auc, ap interval: <reason>; ..."`` for the ``metrics`` that have a note."""
    by_reason: dict[str, list[str]] = {}
    for m in metrics:
        if notes.get(m):
            by_reason.setdefault(notes[m], []).append(m)
    return "; ".join(f"{', '.join(ms)} interval: {why}" for why, ms in by_reason.items())


def _log_interval_notes(per_set: Mapping[str, Mapping[str, Any]], metrics: Sequence[str]) -> None:
    """One warning for the whole evaluation naming the undefined intervals (not one per metric)."""
    parts = []
    for name, levels in per_set.items():
        for level, res in levels.items():
            text = _interval_notes(res.get("ci_notes", {}), metrics)
            if text:
                parts.append(f"{name} {level}: {text}")
    if parts:
        log.warning(
            "bootstrap intervals: %s (see the notes column of tables/*_summary)", " | ".join(parts)
        )


def evaluate_prediction_files(
    pred_files: Mapping[str, str | Path],
    out_dir: str | Path,
    cfg: TestConfig,
    detector: str,
    train_data: str = "",
    meta: Mapping[str, Any] | None = None,
    extra_sections: Sequence[Section | tuple] = (),
    skipped: Sequence[Mapping[str, str]] = (),
    tensorboard_dir: str | Path | None = None,
    scores: str = "prob",
    *,
    fmt: str = "csv",
    calibration: ChosenCalibration | None = None,
) -> dict[str, Any]:
    """Metrics, tables, figures and report of ``{test set: predictions CSV}``; returns the metrics.

    The predictions are copied to ``out_dir/predictions/`` (as ``<set>.csv``, or ``<set>.parquet``
    with ``fmt="parquet"``) so the folder can join a leaderboard.
    ``scores="logits"``: the files hold logits (the sigmoid is applied; the copies hold the
    probabilities, so they cannot be the input files themselves).
    ``tensorboard_dir``: the run's logs, drawn as metric-vs-step curves when present.
    ``calibration``: mapped onto every row's score before any metric (the copies keep the
    original as ``score_uncalibrated``; ``eval.json`` says which); without one, the folder's own
    copy of a file calibrated before is evaluated on its original scores.

    An unreadable predictions file, or one that cannot be scored, is logged, listed in
    ``manifest.json`` and skipped.
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt={fmt!r}: predictions files are one of {', '.join(FORMATS)}")
    out = Path(out_dir)
    skipped = list(skipped)
    per_set: dict[str, dict[str, Any]] = {}
    preds = {}
    labels = set_labels(pred_files, meta)
    for name, path in pred_files.items():
        own = out / "predictions" / f"{slug(name)}.{fmt}"
        if scores != "prob" and Path(path).resolve() == own.resolve():
            raise ValueError(
                f"{path}: reading its {scores} would overwrite it with probabilities; "
                "pass an output folder that does not hold the input files"
            )
        try:
            pred = read_predictions(path, scores=scores)
            changed = _calibrated(pred, calibration, Path(path).resolve() == own.resolve(), name)
            rewrite = changed is not None
            pred = changed if changed is not None else pred
            per_set[name] = evaluate_levels(
                pred,
                cfg.levels,
                reduce=cfg.reduce,
                threshold=cfg.threshold,
                fpr_targets=cfg.fpr_targets,
                n_boot=cfg.n_boot,
                confidence=cfg.confidence,
                seed=cfg.seed,
            )
        except (PredictionsError, ValueError) as exc:
            log.error("%s: skipped: %s", name, exc)
            skipped.append({"test_data": name, "reason": str(exc)})
            continue
        preds[name] = pred
        if rewrite or Path(path).resolve() != own.resolve():  # the folder keeps its inputs
            own.parent.mkdir(parents=True, exist_ok=True)
            write_predictions(own, pred)
        partial = {"partial": labels[name]} if labels[name] != name else {}
        write_json(
            out / "metrics" / f"{slug(name)}.json",
            {"test_data": name, **partial, "detector": detector, **per_set[name]},
            indent=2,
        )
    info = {
        "detector": detector,
        "train_data": train_data,
        "test_data": list(pred_files),
        **(meta or {}),
        "threshold": cfg.threshold,
    }
    info.setdefault("threshold_from", "the test settings (key threshold; default 0.5)")
    if calibration is not None:
        info["calibration"] = calibration.record()
    if skipped:  # named in eval.json and in the report's header
        info["skipped"] = [f"{s['test_data']}: {s['reason']}" for s in skipped]
    info["settings"] = config_to_dict(cfg)
    write_json(out / "eval.json", info, indent=2)
    write_json(out / "manifest.json", {"skipped": skipped}, indent=2)
    if not per_set:
        why = "; ".join(f"{s['test_data']}: {s['reason']}" for s in skipped)
        raise ValueError(
            f"no test set could be evaluated ({why or 'none given'}); see manifest.json"
        )
    _log_interval_notes(per_set, cfg.metrics)
    sections: list[Section] = []
    for level in cfg.levels:
        results = [
            Result(detector, train_data, labels[name], levels[level]["metrics"])
            for name, levels in per_set.items()
        ]
        label = level_label(level, [p.row_unit for p in preds.values()])  # frame, clip, video
        shown = {labels[name]: levels for name, levels in per_set.items()}
        summary = _summary_table(shown, level, cfg.metrics, label)
        summary.write(out / "tables" / f"{level}_summary")
        items: list[Table | Path] = [summary]
        for metric in cfg.metrics:
            table = leaderboard(results, metric)
            table.title = f"{label}-level {table.title}"
            table.write(out / "tables" / f"{level}_{slug(metric)}")
        items.append(metric_table(results, cfg.metrics))
        sections.append(Section(f"{label.capitalize()}-level metrics", items))
    sections += _calibration_sections(
        {labels[n]: p for n, p in preds.items()}, out, cfg, threshold_chosen_by(info)
    )
    if cfg.plots:
        sections.append(
            Section("Curves and score histograms", _figures(preds, out / "figures", cfg))
        )
        if tensorboard_dir is not None and Path(tensorboard_dir).is_dir():
            try:
                curves = plots.training_curves(tensorboard_dir, out / "figures" / "training_curves")
                sections.append(Section("Metrics during training", [curves[0]]))
            except ValueError as exc:
                log.warning("no training curves: %s", exc)
    if cfg.report:
        write_report(
            out / "report.html",
            f"Evaluation of {detector}",
            sections,
            extra_sections,
            meta=_report_meta(info),
        )
    return per_set


def _calibrated(
    pred: Predictions, calibration: ChosenCalibration | None, own: bool, name: str
) -> Predictions | None:
    """``pred`` with ``calibration`` applied, or the folder's ``own`` copy of a file calibrated
    before with its original scores back (no calibration now); None: evaluated as read."""
    if calibration is not None:
        return calibrate_predictions(pred, calibration.calibration)
    if pred.score_uncalibrated is None:
        return None
    if own:
        log.info("%s: calibrated before; evaluated on its original scores", name)
        return uncalibrated(pred)
    log.info("%s: its scores were calibrated before (it has score_uncalibrated)", name)
    return None


def _calibration_sections(
    preds: Mapping[str, Any], out: Path, cfg: TestConfig, chosen_by: str
) -> list[Section]:
    """``tables/calibration`` and ``tables/threshold_transfer`` with their figures (issue 48)."""
    calibration = calibration_table(preds, n_boot=cfg.n_boot, seed=cfg.seed)
    calibration.write(out / "tables" / "calibration")
    transfer = threshold_transfer_table(preds, cfg.threshold, chosen_by)
    transfer.write(out / "tables" / "threshold_transfer")
    cal_items: list[Table | Path] = [calibration]
    transfer_items: list[Table | Path] = [transfer]
    if cfg.plots:
        for name, pred in preds.items():
            stem = out / "figures" / slug(name)
            cal_items += reliability_figure(pred, f"{stem}_reliability", name)[:1]
            transfer_items += threshold_figure(
                pred, f"{stem}_threshold_transfer", name, cfg.threshold
            )[:1]
    return [
        Section("Calibration", cal_items, text=CALIBRATION_TEXT),
        Section("Threshold transfer", transfer_items, text=TRANSFER_TEXT),
    ]


def _report_meta(info: Mapping[str, Any]) -> dict[str, str]:
    """The report's header: ``eval.json`` without the settings, the threshold in one line, lists
    as names and mappings as JSON (never Python reprs)."""
    meta = {}
    for key, value in info.items():
        if key in ("settings", "threshold", "threshold_from"):
            continue
        if key == "calibration":
            meta[key] = f"{value['source']}: {value['method']} {json.dumps(_short(value))}"
            continue
        if isinstance(value, (list, tuple)):
            value = ", ".join(map(str, value))
        elif isinstance(value, Mapping):
            value = json.dumps(jsonable(value), separators=(", ", ": "))
        meta[key] = str(value)
    meta["decision threshold"] = f"{info['threshold']:.6g} ({info['threshold_from']})"
    return meta


def _short(record: Mapping[str, Any]) -> dict[str, Any]:
    """A calibration's parameters without an isotonic map's knots (eval.json has them)."""
    return {k: v for k, v in record["params"].items() if k not in ("x", "y")}


def _figures(preds: Mapping[str, Any], fig_dir: Path, cfg: TestConfig) -> list[Path]:
    """ROC/PR curves of all test sets per level and a score histogram per test set (PNG paths)."""
    pngs: list[Path] = []
    for level in cfg.levels:
        label = level_label(level, [p.row_unit for p in preds.values()])
        curves = {}
        for name, pred in preds.items():
            if level == "video":
                y, s, _ = video_scores(
                    pred.label, pred.score, video_codes(pred)[0], reduce=cfg.reduce
                )
            else:
                y, s = pred.label, pred.score
            curves[name] = (y, s)
            paths = plots.score_histogram(
                y, s, fig_dir / f"hist_{level}_{slug(name)}", title=f"{name} ({label})"
            )
            pngs.append(paths[0])
        pngs.insert(
            0, plots.roc_pr_figure(curves, fig_dir / f"roc_pr_{level}", title=f"{label} level")[0]
        )
    return pngs
