"""Local foundation-weight files for the transformer backbones (CLIP, ViT), read and loaded strictly.

:func:`read_weight_files` reads what users have on disk into one ``{name: float32 tensor}`` dict:

* a Hugging Face ``save_pretrained`` folder (``model.safetensors``, ``pytorch_model.bin`` or their
  sharded ``*.index.json`` forms; ``config.json`` is returned beside the tensors), or an
  open_clip hub folder (``open_clip_model.safetensors`` / ``open_clip_pytorch_model.bin``);
* a ``.safetensors`` file;
* a torch file (``torch.load(..., weights_only=True)``; a ``state_dict`` / ``model`` entry and
  DDP's ``module.`` prefix are unwrapped);
* a TorchScript archive (the ``ViT-B-16.pt`` / ``ViT-L-14.pt`` files OpenAI's ``clip`` package
  downloads), read with ``torch.jit.load``; only its tensors are used.

Half-precision tensors (OpenAI's files are fp16) become float32. :func:`load_matching` then copies a
converted dict onto a module: with ``strict`` (the detector config's ``pretrained_strict``,
default true) every tensor of the module must come from the file and every tensor of the file must
fit, else one :class:`~detectors.backbones.PretrainedWeightsError` names the missing, unexpected
and mis-shaped keys. :func:`check_tower_shape` is the config check of every such tower.
"""

from __future__ import annotations

import json
import logging
import warnings
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from fairforensics.detectors.backbones import (
    PRETRAINED_STRICT,
    PretrainedWeightsError,
    load_fitting,
    read_torch_file,
    strip_module_prefix,
)

log = logging.getLogger(__name__)

#: ``pretrained:`` values that mean random initialisation.
NO_WEIGHTS = (False, None, "", "false", "none")
#: Weight files of a folder, in the order they are looked for.
FOLDER_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
    "open_clip_model.safetensors",
    "open_clip_pytorch_model.bin",
)
_HOW = "pass a local weights file or folder (see docs/detectors.md), or set 'pretrained: false'"


def _is_torchscript(path: Path) -> bool:
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as zf:
        return any(n.endswith("/constants.pkl") or "/code/" in n for n in zf.namelist())


def _read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as exc:
        raise PretrainedWeightsError(f"{path}: cannot read safetensors file: {exc}") from None


def _read_torchscript(path: Path) -> dict[str, torch.Tensor]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit.load's deprecation notice
        try:
            module = torch.jit.load(str(path), map_location="cpu")
        except Exception as exc:  # noqa: BLE001 - broken archives fail in many ways
            raise PretrainedWeightsError(
                f"{path}: cannot read TorchScript archive: {exc}"
            ) from None
    return dict(module.state_dict())


def _read_torch(path: Path) -> dict[str, torch.Tensor]:
    data = read_torch_file(path, PretrainedWeightsError, _HOW)
    for key in ("state_dict", "model"):
        if isinstance(data, dict) and isinstance(data.get(key), dict):
            data = data[key]
    if not isinstance(data, dict) or not all(isinstance(v, torch.Tensor) for v in data.values()):
        raise PretrainedWeightsError(f"{path}: expected a state dict of tensors")
    return strip_module_prefix(data)


def _read_file(path: Path) -> dict[str, torch.Tensor]:
    if path.suffix == ".safetensors":
        return _read_safetensors(path)
    if path.name.endswith(".index.json"):
        try:
            shards = sorted(
                set(json.loads(path.read_text(encoding="utf-8"))["weight_map"].values())
            )
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            raise PretrainedWeightsError(f"{path}: not a shard index ({exc})") from None
        out: dict[str, torch.Tensor] = {}
        for shard in shards:
            out.update(_read_file(path.parent / shard))
        return out
    if not path.is_file():
        raise PretrainedWeightsError(f"{path}: weights file not found")
    if path.stat().st_size and _is_torchscript(path):
        return _read_torchscript(path)
    return _read_torch(path)


def local_weights(pretrained: bool | str | None, what: str) -> str | None:
    """The path ``pretrained:`` names, None for random initialisation; hub weights (``true``,
    ``timm``) are refused, naming ``what`` to pass instead."""
    if pretrained in NO_WEIGHTS:
        return None
    if pretrained is True or str(pretrained).lower() in ("true", "timm"):
        raise PretrainedWeightsError(
            f"{what} weights load from a local file or folder only (nothing is downloaded): set "
            f"'pretrained: /path/to/file' or 'pretrained: false'"
        )
    return str(pretrained)


def read_weight_files(path: str | Path) -> tuple[dict[str, torch.Tensor], dict[str, Any] | None]:
    """(float32 tensors, the folder's ``config.json`` or None) of a weights file or folder."""
    path = Path(path).expanduser()
    config = None
    if path.is_dir():
        found = next((path / n for n in FOLDER_FILES if (path / n).is_file()), None)
        if found is None:
            raise PretrainedWeightsError(
                f"{path}: folder holds no weights file (looked for {', '.join(FOLDER_FILES)})"
            )
        if (path / "config.json").is_file():
            try:
                config = json.loads((path / "config.json").read_text(encoding="utf-8"))
            except ValueError as exc:
                raise PretrainedWeightsError(f"{path / 'config.json'}: not JSON ({exc})") from None
        path = found
    elif not path.exists():
        raise PretrainedWeightsError(f"{path}: weights file or folder not found; {_HOW}")
    state = _read_file(path)
    return {k: v.float() if v.is_floating_point() else v for k, v in state.items()}, config


def load_matching(
    module: nn.Module,
    state: Mapping[str, torch.Tensor],
    source: str,
    *,
    strict: bool | None = None,
    not_in_file: Iterable[str] = (),
    hint: str = "",
) -> None:
    """Copy ``state`` (already in ``module``'s key names) onto ``module``.

    ``not_in_file``: prefixes of ``module`` keys a foundation file does not have (a new head, a
    new normalisation layer); they keep their initial values. ``strict`` (default: the config's
    ``pretrained_strict``): anything else missing, unexpected or mis-shaped is one error naming
    the keys, followed by ``hint``.
    """
    strict = PRETRAINED_STRICT.get() if strict is None else strict
    not_in_file = tuple(not_in_file)
    own = {k: v for k, v in module.state_dict().items() if not k.startswith(not_in_file or ("\0",))}
    kept = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    missing = sorted(set(own) - set(kept) - set(state))
    unexpected = sorted(set(state) - set(own))
    shapes = sorted(
        f"{k} {tuple(v.shape)} vs {tuple(own[k].shape)}"
        for k, v in state.items()
        if k in own and own[k].shape != v.shape
    )
    load_fitting(
        module, kept, len(own), source, missing=missing, unexpected=unexpected, shapes=shapes,
        strict=strict, hint=hint,
    )  # fmt: skip


__all__ = ["FOLDER_FILES", "NO_WEIGHTS", "load_matching", "local_weights", "read_weight_files"]


def check_tower_shape(cfg: Any) -> None:
    """A transformer tower's config (``width``, ``heads``, ``input_size``, ``patch_size``): the
    width splits into the heads and the image into whole patches, else a ``ValueError``."""
    if cfg.width % cfg.heads:
        raise ValueError(f"width {cfg.width} is not divisible by heads {cfg.heads}")
    if cfg.input_size % cfg.patch_size:
        raise ValueError(
            f"input_size {cfg.input_size} is not a multiple of patch_size {cfg.patch_size}"
        )
