"""Write a model package (``fairforensics export``): from a training run (:func:`export_run`)
or from someone else's weights file with the preprocessing of its origin
(:func:`export_weights`: a DeepfakeBench checkpoint, the MesoNet authors' Keras ``.h5``).
Exporting reads the run and never changes it; every file is written atomically."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fairforensics.configs import config_to_dict
from fairforensics.configs.crop import CropSpec, expected_crop
from fairforensics.configs.filemode import atomic_path, file_mode
from fairforensics.detectors.base import Detector
from fairforensics.evaluation.model_package.card import evaluation_results, model_card
from fairforensics.evaluation.model_package.schema import (
    CARD_FILE,
    CONFIG_FILE,
    FORMAT,
    SCHEMA_VERSION,
    WEIGHTS_FILE,
    PackageError,
)
from fairforensics.evaluation.provenance import file_sha256
from fairforensics.evaluation.settings import load_test_config
from fairforensics.evaluation.thresholds import read_run_thresholds, run_threshold
from fairforensics.preprocessing.files import atomic_write_text, write_json
from fairforensics.preprocessing.index import DatasetIndexError
from fairforensics.preprocessing.resolve import resolve_index_path
from fairforensics.preprocessing.rundir import package_versions

log = logging.getLogger(__name__)

#: ``--preset``: the detector YAML variant whose model config and crop the weights were
#: trained with (DeepfakeBench's released checkpoints; the MesoNet authors' .h5 files)
PRESETS = {"deepfakebench": "deepfakebench", "mesonet": "paper"}


def export_run(
    run: str | Path,
    out: str | Path,
    *,
    weights: str = "best",
    fairness: str | Path | None = None,
) -> Path:
    """Package the ``weights`` checkpoint (``best`` or ``last``) of a training run into ``out``,
    with its training data's face-crop settings, its validation threshold, the temperature
    scaling the run fitted on validation (when it stored one) and the evaluation of
    that checkpoint in ``<run>/eval/<weights>`` (the card's results) if there is one.
    ``fairness``: a folder of ``fairforensics fairness`` on that evaluation's predictions, whose
    summary table goes into the card."""
    from fairforensics.evaluation.calibration.source import run_calibration
    from fairforensics.evaluation.detection.source import run_face_settings
    from fairforensics.evaluation.runs import load_run

    if weights not in ("best", "last"):
        raise PackageError(f"--weights {weights!r}: a run exports its best or last checkpoint")
    run = Path(run)
    detector, run_cfg = load_run(run, weights=weights)
    crop = expected_crop(run_cfg, f"{run} config (crop)")
    settings, settings_source = run_face_settings(run, crop)
    data = run_cfg.get("data") or {}
    root = data.get("data_root") or "datasets"
    found, why = run_threshold(run, weights)
    threshold = None
    if found is not None:
        record = read_run_thresholds(run) or {}
        threshold = {
            "value": found.value,
            "rule": record.get("rule", "eer"),
            "level": record.get("level", "frame"),
            "reduce": record.get("reduce", "mean"),
            "val_data": record.get("val_data") or [],
            "source": found.source.replace(f"run {run}", "the training run"),
        }
    else:
        log.warning("%s: no threshold exported: %s", run, why)
    calibration = run_calibration(run, weights)
    config = _config(
        detector,
        crop=crop,
        face_settings=settings.to_json(),
        face_settings_source=settings_source.replace(str(run), "the training run"),
        frame_num=(run_cfg.get("train") or {}).get("test_frame_num"),
        threshold=threshold,
        train_data=[_data_entry(n, root) for n in _names(data.get("train_data"))],
        val_data=[_data_entry(n, root) for n in _names(data.get("val_data"))],
        source={"kind": "run", "run": run.name, "weights": weights,
                "checkpoint_sha256": file_sha256(run / "checkpoints" / f"{weights}.pt")},
        calibration=None if calibration is None else calibration.to_json(),
    )  # fmt: skip
    eval_dir = run / "eval" / weights
    summary = None
    if fairness is not None:
        path = Path(fairness) / "summary.md"
        if not path.is_file():
            raise PackageError(f"--fairness {fairness}: no summary.md (a folder of fairness)")
        summary = path.read_text(encoding="utf-8")
    return _write(out, detector, config, evaluation_results(eval_dir), fairness=summary)


def export_weights(
    detector: str,
    weights_file: str | Path,
    out: str | Path,
    *,
    preset: str | None = None,
    model_config: str | Path | None = None,
    threshold: float | None = None,
) -> Path:
    """Package a registered ``detector``'s ``weights_file`` (a torch checkpoint, ours or
    DeepfakeBench's, or a Keras ``.h5`` for MesoNet) with the preprocessing of its origin:
    ``preset`` ``deepfakebench`` (DeepfakeBench's model config, crop and normalisation:
    ``configs/detectors/NAME.yaml``) or ``mesonet`` (the authors' crop and input:
    ``configs/detectors/paper/NAME.yaml``); neither: as ``--detector/--weights`` load it.
    ``threshold``: a decision threshold to record (none by default: decisions use 0.5 and say
    so)."""
    from fairforensics.detectors.weights import load_named_detector, weights_config
    from fairforensics.evaluation.detection.source import default_face_settings

    if preset is not None and preset not in PRESETS:
        raise PackageError(f"--preset {preset!r}: choose one of {', '.join(PRESETS)}")
    if preset is not None and model_config is not None:
        raise PackageError("give --preset or --model-config, not both")
    if preset == "mesonet" and detector not in ("meso4", "meso_inception4"):
        raise PackageError(f"--preset mesonet is the MesoNet authors' crop: not for {detector!r}")
    variant = PRESETS.get(preset) if preset else None
    model, _ = load_named_detector(detector, weights_file, model_config, variant)
    crop = expected_crop(weights_config(detector, weights_file, model_config, variant))
    settings, source = default_face_settings(crop, f"{detector}'s {preset or 'default'} config")
    recorded = None
    if threshold is not None:
        if not 0.0 <= float(threshold) <= 1.0:
            raise PackageError(f"--threshold {threshold}: must be in [0, 1]")
        recorded = {"value": float(threshold), "rule": "given", "source": "given at export"}
    path = Path(weights_file)
    config = _config(
        model,
        crop=crop,
        face_settings=settings.to_json(),
        face_settings_source=source,
        frame_num=load_test_config().frame_num,
        threshold=recorded,
        train_data=[],
        val_data=[],
        source={"kind": "weights", "file": path.name, "sha256": file_sha256(path),
                "preset": preset},
    )  # fmt: skip
    return _write(out, model, config, [])


def _names(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _data_entry(name: str, root: str | Path) -> dict[str, Any]:
    try:
        sha = file_sha256(resolve_index_path(name, root))
    except (DatasetIndexError, OSError):
        log.warning("%s: index not found under %s; its hash is not recorded", name, root)
        sha = None
    return {"name": name, "index_sha256": sha}


def _config(
    detector: Detector, *, crop: CropSpec | None, threshold: dict | None, **fields: Any
) -> dict[str, Any]:
    model = config_to_dict(detector.cfg)
    model["pretrained"] = False  # the package's weights replace any initialisation
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "fairforensics_version": package_versions().get("fairforensics"),
        "detector": type(detector).name,
        "model": model,
        "input_size": model.get("input_size"),
        "mean": model.get("mean"),
        "std": model.get("std"),
        "crop": None if crop is None else crop.to_json(),
        "reduce": load_test_config().reduce,
        "threshold": threshold,
        **fields,
    }


def _write(
    out: str | Path,
    detector: Detector,
    config: dict[str, Any],
    results: list[dict[str, Any]],
    *,
    fairness: str | None = None,
) -> Path:
    from safetensors.torch import save_file

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise PackageError(f"--out {out}: exists and is not a folder")
    others = sorted(p.name for p in out.iterdir() if p.name not in (WEIGHTS_FILE, CONFIG_FILE,
                                                                    CARD_FILE)) if out.is_dir() else []  # fmt: skip
    if others:
        raise PackageError(f"--out {out}: holds other files ({', '.join(others[:3])}); give an "
                           "empty or new folder")  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous().clone() for k, v in detector.state_dict().items()}
    with atomic_path(out / WEIGHTS_FILE) as tmp:
        save_file(state, str(tmp), metadata={"format": "pt", "detector": config["detector"]})
        tmp.chmod(file_mode())  # safetensors writes its file 0600, whatever the umask
    config["weights_sha256"] = file_sha256(out / WEIGHTS_FILE)
    write_json(out / CONFIG_FILE, config, indent=2)
    checksums = {f: file_sha256(out / f) for f in (WEIGHTS_FILE, CONFIG_FILE)}
    atomic_write_text(out / CARD_FILE, model_card(config, checksums, results, fairness=fairness))
    return out
