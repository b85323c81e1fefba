"""Detector weights and checkpoints: ``{"model": state_dict, "meta": JSON-able dict}`` (+ ``"state"`` in last.pt).

Every file loads with ``torch.load(..., weights_only=True)``. ``last.pt`` also holds the
trainer state needed for an exact resume (optimiser, scheduler, scaler, epoch, step, sampler
position, RNG states, selection history).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from fairforensics.configs.filemode import atomic_path
from fairforensics.detectors.base import Detector
from fairforensics.detectors.deepfakebench import (
    WeightsError,
    checkpoint_state_dict,
    load_weights,
    read_weights_file,
)
from fairforensics.detectors.registry import build_detector


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


def load_detector_file(
    name: str, weights_file: str | Path, model_cfg: dict[str, Any] | None = None
) -> Detector:
    """Build detector ``name`` and load ``weights_file`` (strictly).

    The file is our checkpoint or a DeepfakeBench one (raw state dict, ``module.`` prefixes and
    its key names; see :mod:`detectors.deepfakebench`). ``model_cfg`` defaults to the ``model``
    config stored in the checkpoint's meta, else to ``configs/detectors/<name>.yaml``.
    """
    source = str(weights_file)
    try:
        state, meta = checkpoint_state_dict(read_weights_file(weights_file), name, source)
        detector = build_detector(name, model_cfg if model_cfg is not None else meta.get("model"))
        load_weights(detector, state, source)
    except WeightsError as exc:
        raise CheckpointError(str(exc)) from None
    detector.eval()
    return detector
