"""Import DeepfakeBench (paper 002) checkpoints onto our detectors.

DeepfakeBench saves ``model.state_dict()`` as a raw dict of tensors (``training/trainer/trainer.py``
``save_ckpt``), with a ``module.`` prefix on every key when it trained under DDP. Our own
checkpoints are ``{"model": state_dict, "meta": {...}}`` and keep loading as they are. A raw state
dict is taken as ours when its keys are exactly the model's, else as DeepfakeBench's, which each
detector's :meth:`~detectors.base.Detector.map_deepfakebench_state_dict` renames. Loading is
strict: missing, unexpected and shape-mismatched tensors are one error that lists them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from fairforensics.detectors.backbones import read_torch_file, strip_module_prefix
from fairforensics.detectors.base import Detector
from fairforensics.detectors.dfb_keys import UnmappedKeys

_LIST = 8  # names shown per kind of mismatch


class WeightsError(RuntimeError):
    """A weights file is unreadable or does not fit the detector."""


def read_weights_file(path: str | Path) -> dict[str, Any]:
    """The dict saved in ``path`` (``weights_only``); a one-line error naming the file otherwise."""
    path = Path(path).expanduser()
    data = read_torch_file(path, WeightsError, "copy or download it again")
    if not isinstance(data, dict):
        raise WeightsError(f"{path}: expected a dict of tensors, got {type(data).__name__}")
    return data


def is_raw_state_dict(data: Mapping[str, Any]) -> bool:
    """True for a plain ``{name: tensor}`` dict (DeepfakeBench's format), not our checkpoint."""
    return bool(data) and all(isinstance(v, torch.Tensor) for v in data.values())


def _names(keys: list[str]) -> str:
    more = f" (+{len(keys) - _LIST} more)" if len(keys) > _LIST else ""
    return ", ".join(keys[:_LIST]) + more


def check_fits(model: torch.nn.Module, state_dict: Mapping[str, torch.Tensor], source: str) -> None:
    """Raise :class:`WeightsError` listing missing, unexpected and shape-mismatched keys."""
    own = model.state_dict()
    missing = sorted(set(own) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(own))
    shapes = sorted(
        f"{k} {tuple(v.shape)} vs model {tuple(own[k].shape)}"
        for k, v in state_dict.items()
        if k in own and tuple(v.shape) != tuple(own[k].shape)
    )
    problems = [
        f"{what} {len(keys)}: {_names(keys)}"
        for what, keys in (("missing", missing), ("unexpected", unexpected), ("shape", shapes))
        if keys
    ]
    if problems:
        raise WeightsError(
            f"{source}: weights do not fit {type(model).__name__}: " + "; ".join(problems)
        )


def map_deepfakebench(
    detector: Detector, state_dict: Mapping[str, torch.Tensor], source: str = "state dict"
) -> dict[str, torch.Tensor]:
    """DeepfakeBench's tensors (``module.`` prefixes allowed) renamed to ``detector``'s keys."""
    if type(detector).deepfakebench_name is None:
        raise WeightsError(
            f"{source}: detector {type(detector).name!r} has no DeepfakeBench counterpart"
        )
    try:
        return detector.map_deepfakebench_state_dict(strip_module_prefix(state_dict))
    except KeyError as exc:
        raise _not_deepfakebench(source, type(detector), exc) from None


def _not_deepfakebench(source: str, cls: type[Detector], exc: KeyError) -> WeightsError:
    """The error for a state dict that the key map of ``cls`` refuses (``exc`` names the keys)."""
    return WeightsError(
        f"{source}: not a DeepfakeBench {cls.deepfakebench_name!r} checkpoint: "
        f"{exc.args[0] if exc.args else exc}"
    )


def load_deepfakebench_state_dict(
    detector: Detector, state_dict: Mapping[str, torch.Tensor], source: str = "state dict"
) -> Detector:
    """Load a DeepfakeBench state dict onto ``detector`` strictly; returns the detector."""
    mapped = map_deepfakebench(detector, state_dict, source)
    check_fits(detector, mapped, f"{source} (DeepfakeBench {type(detector).deepfakebench_name})")
    detector.load_state_dict(mapped, strict=True)
    return detector


def load_weights(
    detector: Detector, state_dict: Mapping[str, torch.Tensor], source: str = "state dict"
) -> Detector:
    """Load our state dict or a DeepfakeBench one (told apart by their keys), strictly."""
    plain = strip_module_prefix(state_dict)
    if set(plain) == set(detector.state_dict()) or type(detector).deepfakebench_name is None:
        check_fits(detector, plain, source)
        detector.load_state_dict(plain, strict=True)
        return detector
    return load_deepfakebench_state_dict(detector, plain, source)


def checkpoint_state_dict(
    data: Mapping[str, Any], name: str, source: str
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """(state dict, meta) of our checkpoint format or of a raw (DeepfakeBench) state dict.

    A meta that names another detector is an error naming both.
    """
    if "model" in data and isinstance(data["model"], Mapping):
        meta = dict(data.get("meta") or {})
        saved = meta.get("detector")
        if saved is not None and saved != name:
            raise WeightsError(
                f"{source}: checkpoint of detector {saved!r}, but {name!r} was asked for; "
                f"pass --detector {saved}"
            )
        return dict(data["model"]), meta
    if is_raw_state_dict(data):
        return dict(data), {}
    if "state_dict" in data and isinstance(data["state_dict"], Mapping):
        return dict(data["state_dict"]), {}
    raise WeightsError(
        f"{source}: neither a FairForensics checkpoint ('model' + 'meta') nor a state dict "
        f"of tensors (keys: {_names(sorted(map(str, data)))})"
    )


def build_from_detector_file(cls: type[Detector], config: Any) -> Detector | None:
    """``cls(config)`` with ``config.pretrained`` loaded as a whole-detector file, or None.

    None means the file is not a whole detector and is left to the backbone's ``pretrained``
    loading: a file torch cannot read as a dict (a Keras or safetensors file, a folder: the
    backbone's readers take it or report it), or a state dict none of whose keys this detector's
    DeepfakeBench key map recognises (a backbone's own file). A file that is ours (its meta names
    the detector), or one the key map recognises in part, must fit: a key the map does not know,
    a failed check of the map, or a missing, unexpected or mis-shaped tensor is an error naming
    the keys.
    """
    path = config.pretrained
    if not isinstance(path, str) or path.lower() in ("", "timm", "false", "none", "true"):
        return None
    try:
        data = read_weights_file(path)
    except WeightsError:
        return None
    state, meta = checkpoint_state_dict(data, cls.name, path)
    bare = dataclasses.replace(config, pretrained=False)
    with torch.device("meta"):  # decide on the key names without allocating the model
        probe = cls(bare)
    plain = strip_module_prefix(state)
    if set(plain) != set(probe.state_dict()) and "detector" not in meta:
        if cls.deepfakebench_name is None:
            return None
        try:
            plain = probe.map_deepfakebench_state_dict(plain)
        except UnmappedKeys as exc:
            if exc.recognised == 0:
                return None
            raise _not_deepfakebench(path, cls, exc) from None
        except KeyError as exc:
            raise _not_deepfakebench(path, cls, exc) from None
    detector = cls(bare)
    check_fits(detector, plain, path)
    detector.load_state_dict(plain, strict=True)
    detector.cfg = config
    return detector
