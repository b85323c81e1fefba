"""Load a model package: the detector with its weights, its face-crop settings, frames per
video and validation threshold (:func:`load_model`, also ``fairforensics.load_model``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairforensics.configs.crop import CropSpec, crop_from_mapping
from fairforensics.detectors.base import Detector
from fairforensics.evaluation.calibration.fitting import Calibration, CalibrationError
from fairforensics.evaluation.model_package.hub import PREFIX, resolve_model_ref
from fairforensics.evaluation.model_package.schema import (
    WEIGHTS_FILE,
    PackageError,
    read_package_config,
)
from fairforensics.evaluation.provenance import file_sha256
from fairforensics.evaluation.thresholds import DecisionThreshold
from fairforensics.preprocessing.config import FaceSettings


@dataclass
class LoadedModel:
    """A package's detector (in eval mode, on the CPU) and what makes its scores true."""

    detector: Detector
    name: str  # the registered detector
    ref: str  # the reference it was loaded from (folder or hf:...)
    folder: Path  # where its files lie (a Hub package: in the cache)
    config: dict[str, Any]  # config.json
    crop: CropSpec | None
    face_settings: FaceSettings | None  # None: DeepfakeBench's defaults with ``crop``
    face_settings_source: str
    frame_num: int | None
    reduce: str
    threshold: DecisionThreshold | None  # None: the package records none
    calibration: Calibration | None = None  # None: the package carries none

    @property
    def weights_file(self) -> Path:
        return self.folder / WEIGHTS_FILE

    @property
    def label(self) -> str:
        """A name for default output folders: the package folder's, or ``OWNER_NAME[@REV]``
        of a Hub reference."""
        if self.ref.startswith(PREFIX):
            return self.ref[len(PREFIX) :].replace("/", "_")
        return self.folder.name

    @property
    def train_data(self) -> str:
        return "+".join(d["name"] for d in self.config.get("train_data") or [])


def package_threshold(config: dict[str, Any], ref: str) -> DecisionThreshold | None:
    """The validation threshold ``config.json`` records, said with where it came from."""
    entry = config.get("threshold")
    if not entry:
        return None
    try:
        value = float(entry["value"])
    except (KeyError, TypeError, ValueError):
        raise PackageError(f"{ref}: config.json key 'threshold' has no number 'value'") from None
    how = entry.get("source") or f"{str(entry.get('rule', 'eer')).upper()} rule"
    return DecisionThreshold(value, f"threshold of model package {ref}: {how}")


def load_model(ref: str | Path) -> LoadedModel:
    """The package at ``ref``: a folder written by ``fairforensics export``, or
    ``hf:OWNER/NAME[@REVISION]`` (through ``huggingface_hub``'s cache). Every way a package
    cannot be used (missing or corrupted file, unknown detector, a model config or weights
    this version cannot build, a newer schema) is a :class:`PackageError` naming it."""
    from fairforensics.detectors.deepfakebench import WeightsError, load_weights
    from fairforensics.detectors.registry import build_detector, list_detectors

    ref = str(ref)
    folder = resolve_model_ref(ref)
    config = read_package_config(folder)
    name = str(config["detector"])
    if name not in list_detectors():
        raise PackageError(
            f"{ref}: detector {name!r} is not registered in this fairforensics (package written "
            f"by {config.get('fairforensics_version')}); --import the module that registers it"
        )
    weights = folder / WEIGHTS_FILE
    if not weights.is_file():
        raise PackageError(f"{weights}: missing; the package has no weights")
    if file_sha256(weights) != config["weights_sha256"]:
        raise PackageError(
            f"{weights}: its SHA-256 differs from config.json's weights_sha256 (corrupted or "
            "replaced); download or export the package again"
        )
    state = _read_safetensors(weights)
    try:
        detector = build_detector(name, dict(config["model"] or {}))
    except (ValueError, TypeError, KeyError) as exc:  # ConfigError is a ValueError
        raise PackageError(f"{ref}: this fairforensics cannot build its {name}: {exc}") from None
    try:
        load_weights(detector, state, str(weights))
    except WeightsError as exc:
        raise PackageError(f"{ref}: weights do not fit {name}: {exc}") from None
    detector.eval()
    crop = crop_from_mapping(config.get("crop"), f"{ref} config.json (crop)")
    settings = config.get("face_settings")
    face_settings = (
        None if settings is None else FaceSettings.from_json(settings, f"{ref} config.json")
    )
    return LoadedModel(
        detector=detector,
        name=name,
        ref=ref,
        folder=folder,
        config=config,
        crop=crop,
        face_settings=face_settings,
        face_settings_source=f"model package {ref}: "
        + str(config.get("face_settings_source") or "recorded settings"),
        frame_num=config.get("frame_num"),
        reduce=str(config.get("reduce") or "mean"),
        threshold=package_threshold(config, ref),
        calibration=_calibration(config, ref),
    )


def _calibration(config: dict[str, Any], ref: str) -> Calibration | None:
    """The calibration the package carries; one that cannot be read is a PackageError."""
    from fairforensics.evaluation.calibration.source import package_calibration

    try:
        return package_calibration(config, ref)
    except CalibrationError as exc:
        raise PackageError(str(exc)) from None


def _read_safetensors(path: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    try:
        return load_file(str(path), device="cpu")
    except Exception as exc:  # noqa: BLE001 - a corrupt file fails in many ways
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PackageError(f"{path}: not a readable safetensors file ({first})") from None
