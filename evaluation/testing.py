"""The evaluation of ``scripts/test.py``: load the detector, predict each test set (the folder
layout and everything computed from the predictions is in :mod:`evaluation.results`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fairforensics.configs import ConfigError
from fairforensics.configs.crop import crop_from_mapping, expected_crop
from fairforensics.configs.writable import check_writable
from fairforensics.detectors.weights import ACCEPTED, load_named_detector, weights_config
from fairforensics.evaluation.calibration.source import ChosenCalibration
from fairforensics.evaluation.model_package.load import LoadedModel
from fairforensics.evaluation.predict import clip_size_of, predict_index
from fairforensics.evaluation.predictions import FORMATS, write_predictions
from fairforensics.evaluation.provenance import (
    changed_keys,
    file_sha256,
    prediction_provenance,
    provenance_path,
    write_provenance,
)
from fairforensics.evaluation.report import Section, relative_to
from fairforensics.evaluation.results import evaluate_prediction_files, slug
from fairforensics.evaluation.runs import load_run
from fairforensics.evaluation.settings import TestConfig
from fairforensics.evaluation.thresholds import predictions_threshold
from fairforensics.preprocessing.crops import check_crop
from fairforensics.preprocessing.device import resolve_device
from fairforensics.preprocessing.index import DatasetIndex, DatasetIndexError
from fairforensics.preprocessing.resolve import resolve_index, resolve_index_path
from fairforensics.preprocessing.rundir import RunDir

log = logging.getLogger(__name__)


class TestSetsSkipped(Exception):
    """Requested test sets were skipped (an empty split, a failed prediction); the others are
    evaluated and written. The command exits 1 (:attr:`exit_code`) naming them."""

    __test__ = False  # not a pytest test class
    exit_code = 1

    def __init__(self, out_dir: Path, skipped: list[dict[str, str]]) -> None:
        self.out_dir, self.skipped = out_dir, skipped
        sets = "; ".join(f"{s['test_data']} ({s['reason']})" for s in skipped)
        super().__init__(
            f"{len(skipped)} requested test set(s) skipped: {sets}; the others are evaluated "
            f"in {out_dir}"
        )


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
    allow_missing: bool = False,
    fmt: str = "csv",
    calibration: ChosenCalibration | None = None,
) -> Path:
    """Predict every ``cfg.test_data`` set with ``detector`` and evaluate; returns ``out_dir``.
    ``fmt``: the predictions files' format, ``csv`` or ``parquet``. ``calibration``: applied to
    the scores before every metric (:func:`evaluation.results.evaluate_prediction_files`).

    A missing test-set index is an error naming every missing one, before anything is
    predicted, unless ``allow_missing``; then it, like a set whose prediction fails, is logged,
    recorded in ``manifest.json`` and ``eval.json`` (``skipped``) and the report, and skipped. A predictions file already in ``out_dir`` is reused (a killed run resumes where it
    stopped) only if ``overwrite`` is false and its provenance (:mod:`evaluation.provenance`:
    ``detector_name``, ``meta``'s ``weights_file``/``weights_sha256``/``model``, the index hash
    and the prediction settings) is unchanged; otherwise the set is predicted again.

    A set skipped for any other reason than a missing index under ``allow_missing`` (an empty
    split, a prediction that fails) raises :class:`TestSetsSkipped` once everything else is
    written.
    """
    if not cfg.test_data:
        raise ConfigError("no test sets: pass --test-data NAME ... or set test_data")
    if fmt not in FORMATS:
        raise ValueError(f"fmt={fmt!r}: predictions files are one of {', '.join(FORMATS)}")
    out = Path(out_dir)
    device = str(resolve_device(cfg.device))
    root = Path(cfg.data_root or "datasets")
    files: dict[str, Path] = {}
    skipped: list[dict[str, str]] = []
    missing = [n for n in cfg.test_data if not _index_exists(n, root)]
    if missing and not allow_missing:
        raise ConfigError(
            f"test sets without a dataset index under {root}: {', '.join(missing)}; fix the names "
            "or data_root, or pass --allow-missing to skip them"
        )
    check_writable(out / "predictions")
    producer = {
        "detector": detector_name,
        **{k: (meta or {}).get(k) for k in ("weights_file", "weights_sha256", "model")},
    }
    partial: dict[str, str] = {}
    expected = crop_from_mapping((meta or {}).get("expected_crop"), "expected_crop")
    crops: dict[str, str] = {}
    crop_notes: dict[str, str] = {}
    for name in cfg.test_data:
        target = out / "predictions" / f"{slug(name)}.{fmt}"
        index_path = root / f"{name}.json"
        try:
            index_path = resolve_index_path(name, root)
            index = resolve_index(name, root)
            if index.partial:
                partial[name] = index.partial
                log.warning("%s is partial: %s (named so in every table)", name, index.partial)
            crops[name] = index.crop.describe() if index.crop else "unknown"
            note = check_crop(index, expected)
            if note:
                crop_notes[name] = note
            provenance = prediction_provenance(producer, index_path, cfg)
            if target.is_file() and not overwrite:
                changed = changed_keys(target, provenance)
                if not changed:
                    log.info("%s: reusing %s (same provenance)", name, target)
                    files[name] = target
                    continue
                log.info("%s: predicting again, %s changed since %s", name, changed, target)
            provenance_path(target).unlink(missing_ok=True)
            pred = predict_index(
                detector,
                index,
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
        write_predictions(target, pred)
        write_provenance(target, provenance)
        files[name] = target
    info = {"device": device, "split": cfg.split, **(meta or {})}
    if partial:  # the tables name these sets "<name> (partial: ...)"
        info["partial"] = partial
    if crops:
        info["crops"] = crops
    if crop_notes:  # an index cropped otherwise than the detector's weights were trained on
        info["crop_notes"] = crop_notes
    sections = list(extra_sections)
    a = cfg.analysis
    if files and (a.gradcam or a.tsne or a.spectra) and clip_size_of(detector) is not None:
        log.warning("analysis tools (Grad-CAM, t-SNE, spectra) read single frames: skipped for "
                    "the video detector %s", detector_name)  # fmt: skip
    elif files and (a.gradcam or a.tsne or a.spectra):
        from fairforensics.evaluation.analysis.run import run_analysis

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
    evaluated = evaluate_prediction_files(
        files, out, cfg, detector_name, train_data, info, sections, skipped, tensorboard_dir,
        fmt=fmt, calibration=calibration,
    )  # fmt: skip
    failed = [s for s in skipped if s["test_data"] not in missing]
    failed += [
        {"test_data": n, "reason": "its predictions could not be evaluated (see manifest.json)"}
        for n in files
        if n not in evaluated
    ]
    if failed:
        raise TestSetsSkipped(out, failed)
    return out


def _index_exists(name: str, root: Path) -> bool:
    try:
        resolve_index_path(name, root)
    except DatasetIndexError:
        return False
    return True


def validation_threshold(
    detector: Any,
    index: DatasetIndex | str | Path | Sequence[DatasetIndex | str | Path],
    cfg: TestConfig,
    rule: str = "eer",
    out_dir: str | Path | None = None,
) -> float:
    """Decision threshold chosen on the ``val`` split of an index (``rule``: ``eer`` or ``youden``)
    at the first of ``cfg.levels``, so ACC/precision/recall/F1 do not use test labels.

    ``index``: a :class:`DatasetIndex` (from :func:`preprocessing.resolve.resolve_index`) or the
    path of an index file, or several of them (pooled, as the trainer pools its validation
    sets; each one's predictions ``predictions_val[_<n>].csv`` in ``out_dir``)."""
    device = str(resolve_device(cfg.device))
    indexes = [index] if isinstance(index, (DatasetIndex, str, Path)) else list(index)
    preds = []
    for n, one in enumerate(indexes):
        pred = predict_index(
            detector,
            one,
            "val",
            frame_num=cfg.frame_num,
            batch_size=cfg.batch_size,
            num_workers=cfg.num_workers,
            device=device,
            amp=cfg.amp,
        )
        if out_dir is not None:
            write_predictions(Path(out_dir) / f"predictions_val{f'_{n}' if n else ''}.csv", pred)
        preds.append(pred)
    threshold = predictions_threshold(preds, cfg.levels[0], cfg.reduce, rule)
    names = "+".join(str(i.dataset if isinstance(i, DatasetIndex) else i) for i in indexes)
    log.info("threshold %.6f chosen on %s/val (%s rule)", threshold, names, rule)
    return threshold


def load_for_test(
    run: str | Path | None,
    detector: str | None,
    weights: str,
    model_config: str | Path | None,
    cfg: TestConfig,
    out: str | Path | None = None,
    variant: str | None = None,
    *,
    package: LoadedModel | None = None,
) -> tuple[Any, str, str, dict[str, Any], Path]:
    """The detector to test, its name, its training data, meta for ``eval.json`` and the output
    folder, from a run directory or from a registered name and a weights file. Paths in the meta
    (``run``, ``tensorboard``, ``weights_file``) are relative to the output folder, which can
    then move with the run.

    With a run, unset ``cfg.data_root`` / ``cfg.frame_num`` take the run's ``data.data_root`` and
    ``train.test_frame_num``. ``variant`` (``paper`` or ``deepfakebench``) picks the detector
    YAML for ``detector`` when neither ``model_config`` nor the checkpoint names a model config.

    ``meta["expected_crop"]`` is the crop the weights were trained on: a run's training data's
    (its config's ``crop``), else the ``crop`` of the detector YAML that describes the file
    (:func:`detectors.weights.weights_config`); :func:`run_test` checks each index against it.

    ``package``: a loaded model package (:func:`evaluation.model_package.load.load_model`), in
    place of ``run``/``detector``: its crop, frames per video (for an unset ``cfg.frame_num``)
    and training data; the default folder is ``evals/<detector>_<package folder name>``.
    """
    if package is not None:
        model, name, train_data = package.detector, package.name, package.train_data
        crop, model_cfg = package.crop, package.config["model"]
        if cfg.frame_num is None:
            cfg.frame_num = package.frame_num
        out_dir = Path(out) if out else Path("evals") / f"{name}_{package.label}"
        weights_file = package.weights_file
        meta = {"model_package": package.ref}
    elif run is not None:
        model, run_cfg = load_run(run, weights=weights)
        crop = expected_crop(run_cfg, f"{run} config (crop)")  # its training data's crop
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
        weights_file = RunDir(run).checkpoint(weights)
        meta = {"run": relative_to(run, out_dir), "weights": str(weights)}
        meta["tensorboard"] = relative_to(Path(run) / "tensorboard", out_dir)
        model_cfg = run_cfg.get("model")
    else:
        if detector is None or weights in ("best", "last"):
            raise ConfigError(f"--detector needs --weights FILE: {ACCEPTED}")
        model, model_cfg = load_named_detector(detector, weights, model_config, variant)
        crop = expected_crop(weights_config(detector, weights, model_config, variant))
        name, train_data = detector, ""
        out_dir = Path(out) if out else Path("evals") / f"{detector}_{Path(weights).stem}"
        weights_file = Path(weights)
        meta = {}
    if package is None and weights not in ("best", "last"):
        meta["weights"] = relative_to(weights, out_dir)
    meta["weights_file"] = relative_to(weights_file, out_dir)
    meta["weights_sha256"] = file_sha256(weights_file)
    meta["model"] = model_cfg
    if crop is not None:
        meta["expected_crop"] = crop.to_json()
    return model, name, train_data, meta, out_dir
