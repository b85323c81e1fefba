"""The evaluation of ``scripts/test.py``: predict each test set; metrics, tables, plots, report.

An evaluation folder holds::

    eval.json                 detector, weights, training data, test sets, settings
    predictions/<set>.csv     one row per frame (the input of everything below)
    metrics/<set>.json        frame- and video-level metrics with bootstrap intervals
    tables/<level>_<metric>.{csv,md,json}   Table 3 layout (paper 002), one per metric
    tables/<level>_summary.{csv,md,json}    every metric with its 95% interval, per test set
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
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from configs import CONFIG_DIR, ConfigError, config_to_dict, load_config
from detectors import load_detector_file
from evaluation import plots
from evaluation.metrics import choose_threshold, video_scores
from evaluation.predict import predict_index
from evaluation.predictions import PredictionsError, read_predictions, write_predictions
from evaluation.report import Section, write_report
from evaluation.runs import load_run
from evaluation.scoring import evaluate_levels, evaluate_predictions, video_codes
from evaluation.tables import Result, Table, cross_manipulation, leaderboard, metric_table
from preprocessing.device import resolve_device
from preprocessing.files import write_json
from preprocessing.resolve import resolve_index

log = logging.getLogger(__name__)

DEFAULT_CONFIG = CONFIG_DIR / "test" / "default.yaml"


@dataclass
class AnalysisConfig:
    """Frames per class for each analysis tool on the first test set (0 = off)."""

    gradcam: int = 0
    tsne: int = 0
    spectra: int = 0


@dataclass
class TestConfig:
    """Settings of ``scripts/test.py`` (``configs/test/default.yaml``)."""

    __test__ = False  # not a pytest test class

    data_root: str | None = None
    test_data: list[str] = field(default_factory=list)
    split: str = "test"
    frame_num: int | None = None
    batch_size: int = 32
    num_workers: int = 0
    device: str = "auto"
    amp: bool = True
    levels: list[Literal["frame", "video"]] = field(default_factory=lambda: ["frame", "video"])
    reduce: Literal["mean", "median", "max"] = "mean"
    threshold: float = 0.5
    metrics: list[str] = field(default_factory=lambda: ["auc", "ap", "eer", "acc"])
    fpr_targets: list[float] = field(default_factory=lambda: [0.01, 0.1])
    n_boot: int = 1000
    confidence: float = 0.95
    seed: int = 0
    plots: bool = True
    report: bool = True
    analysis: AnalysisConfig = field(default_factory=lambda: AnalysisConfig())

    def __post_init__(self) -> None:
        known = {"acc", "precision", "recall", "f1", "auc", "ap", "eer", "eer_threshold"}
        known |= {f"tpr@fpr={x:g}" for x in self.fpr_targets}
        bad = [m for m in self.metrics if m not in known]
        if bad:
            raise ConfigError(
                f"test config: key 'metrics' has unknown {bad}; allowed: {sorted(known)}"
            )
        if self.n_boot < 0 or not 0 < self.confidence < 1 or self.batch_size < 1:
            raise ConfigError(
                "test config: need n_boot >= 0, 0 < confidence < 1 and batch_size >= 1"
            )
        if not self.levels:
            raise ConfigError("test config: key 'levels' must name 'frame' and/or 'video'")


def load_test_config(
    *paths: str | Path | None, overrides: Sequence[str] | Mapping[str, Any] = ()
) -> TestConfig:
    """Defaults < ``configs/test/default.yaml`` < ``paths`` < ``overrides``."""
    return load_config(TestConfig, DEFAULT_CONFIG, *paths, overrides=overrides)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def _summary_table(
    per_set: Mapping[str, Mapping[str, Any]], level: str, metrics: Sequence[str]
) -> Table:
    """Rows test sets; per metric the value and its interval bounds."""
    columns = ["test_data", "n_real", "n_fake"]
    for m in metrics:
        columns += [m, f"{m}_low", f"{m}_high"]
    rows = []
    for name, levels in per_set.items():
        res = levels[level]
        row: list[Any] = [name, res["n_real"], res["n_fake"]]
        for m in metrics:
            low, high = res.get("ci", {}).get(m, [float("nan"), float("nan")])
            row += [res["metrics"][m], low, high]
        rows.append(row)
    ci = (
        f", {res.get('confidence', 0.95):.0%} bootstrap interval over videos"
        if rows and "ci" in res
        else ""
    )
    return Table(columns, rows, title=f"{level}-level metrics{ci}")


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
) -> dict[str, Any]:
    """Metrics, tables, figures and report of ``{test set: predictions CSV}``; returns the metrics.

    The predictions are copied to ``out_dir/predictions/`` so the folder can join a leaderboard.
    ``tensorboard_dir``: the run's logs, drawn as metric-vs-step curves when present.

    An unreadable predictions file, or one that cannot be scored, is logged, listed in
    ``manifest.json`` and skipped.
    """
    out = Path(out_dir)
    skipped = list(skipped)
    per_set: dict[str, dict[str, Any]] = {}
    preds = {}
    for name, path in pred_files.items():
        try:
            pred = read_predictions(path)
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
        own = out / "predictions" / f"{_slug(name)}.csv"
        if Path(path).resolve() != own.resolve():  # the folder keeps its inputs, for leaderboards
            own.parent.mkdir(parents=True, exist_ok=True)
            write_predictions(own, pred)
        write_json(
            out / "metrics" / f"{_slug(name)}.json",
            {"test_data": name, "detector": detector, **per_set[name]},
            indent=2,
        )
    info = {
        "detector": detector,
        "train_data": train_data,
        "test_data": list(pred_files),
        **(meta or {}),
    }
    info["settings"] = config_to_dict(cfg)
    write_json(out / "eval.json", info, indent=2)
    write_json(out / "manifest.json", {"skipped": skipped}, indent=2)
    if not per_set:
        raise ValueError("no test set could be evaluated; see manifest.json")
    sections: list[Section] = []
    for level in cfg.levels:
        results = [
            Result(detector, train_data, name, levels[level]["metrics"])
            for name, levels in per_set.items()
        ]
        summary = _summary_table(per_set, level, cfg.metrics)
        summary.write(out / "tables" / f"{level}_summary")
        items: list[Table | Path] = [summary]
        for metric in cfg.metrics:
            table = leaderboard(results, metric)
            table.title = f"{level}-level {table.title}"
            table.write(out / "tables" / f"{level}_{_slug(metric)}")
        items.append(metric_table(results, cfg.metrics))
        sections.append(Section(f"{level.capitalize()}-level metrics", items))
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
            meta={k: v for k, v in info.items() if k != "settings"},
        )
    return per_set


def _figures(preds: Mapping[str, Any], fig_dir: Path, cfg: TestConfig) -> list[Path]:
    """ROC/PR curves of all test sets per level and a score histogram per test set (PNG paths)."""
    pngs: list[Path] = []
    for level in cfg.levels:
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
                y, s, fig_dir / f"hist_{level}_{_slug(name)}", title=f"{name} ({level})"
            )
            pngs.append(paths[0])
        pngs.insert(
            0, plots.roc_pr_figure(curves, fig_dir / f"roc_pr_{level}", title=f"{level} level")[0]
        )
    return pngs


def run_test(
    detector: Any,
    detector_name: str,
    cfg: TestConfig,
    out_dir: str | Path,
    *,
    train_data: str = "",
    meta: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    extra_sections: Sequence[Section | tuple] = (),
    tensorboard_dir: str | Path | None = None,
) -> Path:
    """Predict every ``cfg.test_data`` set with ``detector`` and evaluate; returns ``out_dir``.

    A test set whose index is missing or fails is logged, recorded in ``manifest.json`` and
    skipped. Predictions already in ``out_dir`` are reused unless ``overwrite`` (a killed run
    resumes where it stopped).
    """
    if not cfg.test_data:
        raise ConfigError("no test sets: pass --test-data NAME ... or set test_data")
    out = Path(out_dir)
    device = str(resolve_device(cfg.device))
    root = Path(cfg.data_root or "datasets")
    files: dict[str, Path] = {}
    skipped: list[dict[str, str]] = []
    for name in cfg.test_data:
        target = out / "predictions" / f"{_slug(name)}.csv"
        if target.is_file() and not overwrite:
            log.info("%s: reusing %s", name, target)
            files[name] = target
            continue
        index_path = root / f"{name}.json"
        try:
            pred = predict_index(
                detector,
                resolve_index(name, root),
                cfg.split,
                frame_num=cfg.frame_num,
                batch_size=cfg.batch_size,
                num_workers=cfg.num_workers,
                device=device,
                amp=cfg.amp,
            )
            if len(pred) == 0:
                raise ValueError(f"split {cfg.split!r} gave no frames")
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            log.error("%s (%s): skipped: %s", name, index_path, exc)
            skipped.append(
                {
                    "test_data": name,
                    "index": str(index_path),
                    "reason": f"{type(exc).__name__}: {exc}",
                }
            )
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        write_predictions(target, pred)
        files[name] = target
    info = {"device": device, "split": cfg.split, **(meta or {})}
    sections = list(extra_sections)
    a = cfg.analysis
    if files and (a.gradcam or a.tsne or a.spectra):
        from evaluation.analysis.run import run_analysis

        first = next(iter(files))
        figures = run_analysis(
            detector,
            resolve_index(first, root),
            out / "analysis",
            gradcam=a.gradcam,
            tsne=a.tsne,
            spectra=a.spectra,
            split=cfg.split,
            seed=cfg.seed,
            device=device,
            batch_size=cfg.batch_size,
        )
        sections.insert(0, Section(f"Analysis on {first}", figures))
    evaluate_prediction_files(
        files, out, cfg, detector_name, train_data, info, sections, skipped, tensorboard_dir
    )
    return out


def collect_results(
    eval_dirs: Sequence[str | Path],
    level: str = "frame",
    reduce: str = "mean",
    threshold: float = 0.5,
) -> list[Result]:
    """One :class:`Result` per test set of each evaluation folder, recomputed from its
    predictions files (detector and training data come from ``eval.json``)."""
    results = []
    for d in map(Path, eval_dirs):
        info_path = d / "eval.json"
        if not info_path.is_file():
            raise FileNotFoundError(f"{info_path}: not an evaluation folder (no eval.json)")
        info = json.loads(info_path.read_text(encoding="utf-8"))
        for name in info.get("test_data", []):
            path = d / "predictions" / f"{_slug(name)}.csv"
            if not path.is_file():
                log.warning("%s: no predictions for %s; left out", d, name)
                continue
            res = evaluate_predictions(
                read_predictions(path), level=level, reduce=reduce, threshold=threshold
            )
            results.append(
                Result(info["detector"], info.get("train_data", ""), name, res["metrics"])
            )
    return results


def build_leaderboard(
    eval_dirs: Sequence[str | Path],
    out_dir: str | Path,
    metrics: Sequence[str] = ("auc", "ap", "eer", "acc"),
    level: str = "frame",
    *,
    reduce: str = "mean",
    threshold: float = 0.5,
    within: Sequence[str] | None = None,
    train_data: str | None = None,
    extra_sections: Sequence[Section | tuple] = (),
) -> Path:
    """Leaderboards (paper 002 Table 3) per metric, cross-manipulation heat maps (Figure 2) and a
    radar chart from several evaluation folders, with an HTML report; returns ``out_dir``."""
    out = Path(out_dir)
    results = collect_results(eval_dirs, level, reduce, threshold)
    if not results:
        raise ValueError("the evaluation folders hold no predictions")
    sections = []
    for metric in metrics:
        table = leaderboard(results, metric, within=within, train_data=train_data)
        table.write(out / f"leaderboard_{level}_{_slug(metric)}")
        sections.append(Section(f"{metric.upper()} ({level} level)", [table]))
    figures: list[Path] = []
    first = metrics[0]
    radar: dict[str, dict[str, float]] = {}
    for r in results:
        if train_data is None or r.train_data == train_data:
            radar.setdefault(r.detector, {})[r.test_data] = float(r.metrics[first])
    if len({t for row in radar.values() for t in row}) >= 3:
        figures.append(
            plots.radar_chart(radar, out / f"radar_{level}_{_slug(first)}", title=first.upper())[0]
        )
    matrices = cross_manipulation(results, first)
    if matrices:
        for det, table in matrices.items():
            table.write(out / f"cross_manipulation_{_slug(det)}_{_slug(first)}")
        figures.append(
            plots.heatmaps(
                matrices, out / f"cross_manipulation_{_slug(first)}", title=first.upper()
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


def validation_threshold(
    detector: Any,
    index_path: str | Path,
    cfg: TestConfig,
    rule: str = "eer",
    out_dir: str | Path | None = None,
) -> float:
    """Decision threshold chosen on the ``val`` split of an index (``rule``: ``eer`` or ``youden``)
    at the first of ``cfg.levels``, so ACC/precision/recall/F1 do not use test labels."""
    device = str(resolve_device(cfg.device))
    pred = predict_index(
        detector,
        index_path,
        "val",
        frame_num=cfg.frame_num,
        batch_size=cfg.batch_size,
        num_workers=cfg.num_workers,
        device=device,
        amp=cfg.amp,
    )
    if out_dir is not None:
        write_predictions(Path(out_dir) / "predictions_val.csv", pred)
    y, s = pred.label, pred.score
    if cfg.levels[0] == "video":
        y, s, _ = video_scores(y, s, video_codes(pred)[0], reduce=cfg.reduce)
    threshold = choose_threshold(y, s, rule)
    log.info("threshold %.6f chosen on %s/val (%s rule)", threshold, index_path, rule)
    return threshold


def load_for_test(
    run: str | Path | None,
    detector: str | None,
    weights: str,
    model_config: str | Path | None,
    cfg: TestConfig,
    out: str | Path | None = None,
) -> tuple[Any, str, str, dict[str, Any], Path]:
    """The detector to test, its name, its training data, meta for ``eval.json`` and the output
    folder, from a run directory or from a registered name and a weights file.

    With a run, unset ``cfg.data_root`` / ``cfg.frame_num`` take the run's ``data.data_root`` and
    ``train.test_frame_num``.
    """
    if run is not None:
        model, run_cfg = load_run(run, weights=weights)
        name = str(run_cfg.get("detector", type(model).name))
        data = run_cfg.get("data") or {}
        train = data.get("train_data") or []
        train_data = "+".join(train) if isinstance(train, list) else str(train)
        if cfg.data_root is None and data.get("data_root"):
            cfg.data_root = str(data["data_root"])
        if cfg.frame_num is None:
            cfg.frame_num = (run_cfg.get("train") or {}).get("test_frame_num")
        label = weights if weights in ("best", "last") else Path(weights).stem
        out_dir = Path(out) if out else Path(run) / "eval" / label
        tb = Path(run) / "tensorboard"
        meta = {"run": str(run), "weights": str(weights), "tensorboard": str(tb)}
    else:
        if detector is None or weights in ("best", "last"):
            raise ConfigError("--detector needs --weights FILE (a .pt state dict)")
        model_cfg = None
        if model_config is not None:
            from detectors.registry import load_detector_yaml

            model_cfg = dict(load_detector_yaml(detector, model_config).get("model") or {})
        model = load_detector_file(detector, weights, model_cfg)
        name, train_data = detector, ""
        out_dir = Path(out) if out else Path("evals") / f"{detector}_{Path(weights).stem}"
        meta = {"weights": str(weights)}
    return model, name, train_data, meta, out_dir
