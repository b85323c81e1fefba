"""Detector weights and checkpoints: ``{"model": state_dict, "meta": JSON-able dict}`` (+ ``"state"`` in last.pt).

Every file loads with ``torch.load(..., weights_only=True)``. ``last.pt`` also holds the
trainer state needed for an exact resume (optimiser, scheduler, scaler, epoch, step, sampler
position, RNG states, selection history).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from fairforensics.configs.filekind import ACCEPTED_WEIGHTS, TORCH_KINDS, describe_kind, file_kind
from fairforensics.configs.filemode import atomic_path
from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.base import Detector
from fairforensics.detectors.deepfakebench import (
    WeightsError,
    checkpoint_state_dict,
    load_weights,
    read_weights_file,
)
from fairforensics.detectors.registry import build_detector, get_detector_class, load_detector_yaml


class CheckpointError(RuntimeError):
    """A run directory or checkpoint file is missing or unreadable."""


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> None:
    """``torch.save`` through a temporary file and a rename (atomic)."""
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """A checkpoint dict, loaded with ``weights_only=True``; a bare state dict is wrapped."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: checkpoint not found")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - corrupt files fail in many ways
        raise CheckpointError(f"{path}: cannot read checkpoint: {exc}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: expected a dict, got {type(data).__name__}")
    if "model" not in data:
        data = {"model": data, "meta": {}}
    return data


#: What ``load_detector_file`` reads, for error messages.
ACCEPTED = ACCEPTED_WEIGHTS


def load_detector_file(
    name: str, weights_file: str | Path, model_cfg: dict[str, Any] | None = None
) -> Detector:
    """Build detector ``name`` and load ``weights_file`` (strictly).

    The file is our checkpoint, a DeepfakeBench one (raw state dict, ``module.`` prefixes and
    its key names; see :mod:`detectors.deepfakebench`), or a Keras ``.h5`` for a detector that
    reads them (MesoNet, :mod:`detectors.keras_meso`); the kind is read from the file's first
    bytes, and a file of another kind is an error naming it. ``model_cfg`` defaults to the
    ``model`` config stored in the checkpoint's meta, else to ``configs/detectors/<name>.yaml``
    (for a Keras file, ``configs/detectors/paper/<name>.yaml``).
    """
    source = str(weights_file)
    path = Path(weights_file).expanduser()
    kind = file_kind(path) if path.is_file() and path.stat().st_size else "torch"
    if kind == "hdf5":
        return _load_keras_file(name, path, model_cfg)
    if kind not in (*TORCH_KINDS, "unknown"):
        raise CheckpointError(f"{path}: {describe_kind(kind)}; weights must be {ACCEPTED}")
    try:
        state, meta = checkpoint_state_dict(read_weights_file(weights_file), name, source)
        detector = build_detector(name, model_cfg if model_cfg is not None else meta.get("model"))
        load_weights(detector, state, source)
    except WeightsError as exc:
        raise CheckpointError(str(exc)) from None
    detector.eval()
    return detector


def _load_keras_file(name: str, path: Path, model_cfg: dict[str, Any] | None) -> Detector:
    """Detector ``name`` built with ``pretrained: <path>`` (a Keras ``.h5``)."""
    if not getattr(get_detector_class(name), "keras_weights", False):
        raise CheckpointError(
            f"{path}: {describe_kind('hdf5')}, which detector {name!r} cannot read; "
            f"weights must be {ACCEPTED}"
        )
    if model_cfg is None:
        model_cfg = load_detector_yaml(name, variant="paper").get("model") or {}
    try:
        detector = build_detector(name, {**model_cfg, "pretrained": str(path)})
    except PretrainedWeightsError as exc:
        raise CheckpointError(str(exc)) from None
    detector.eval()
    return detector


def weights_config(
    name: str,
    weights_file: str | Path,
    model_config: str | Path | None = None,
    variant: str | None = None,
) -> dict[str, Any]:
    """The detector YAML that describes ``weights_file`` as ``--detector/--weights`` give it:
    ``model_config`` or ``variant``'s if given, else the paper YAML for a Keras file (the
    authors' weights), else ``configs/detectors/<name>.yaml``. Its ``crop`` section is the crop
    the weights were trained on (:func:`configs.crop.expected_crop`)."""
    path = Path(weights_file).expanduser()
    keras = path.is_file() and path.stat().st_size and file_kind(path) == "hdf5"
    if model_config is None and variant is None and keras:
        variant = "paper"
    return load_detector_yaml(name, model_config, variant)


def load_named_detector(
    name: str,
    weights_file: str | Path,
    model_config: str | Path | None = None,
    variant: str | None = None,
) -> tuple[Detector, dict[str, Any] | None]:
    """A registered detector and a weights file, as ``--detector/--weights`` of the commands give
    them; returns the detector and the model config that was asked for (None: the checkpoint's).

    ``model_config`` (a detector YAML) or ``variant`` (``paper`` / ``deepfakebench``) choose
    the ``model`` config; without them the checkpoint's stored config (or, for a Keras file, the
    paper YAML) is used. What files are read: :func:`load_detector_file`.
    """
    model_cfg = None
    if model_config is not None or variant is not None:
        model_cfg = dict(load_detector_yaml(name, model_config, variant).get("model") or {})
    return load_detector_file(name, weights_file, model_cfg), model_cfg
