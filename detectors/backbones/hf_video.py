"""Video transformers of Hugging Face ``transformers`` built from configs, and their local weights.

TimeSformer, VideoMAE and X-CLIP (``detectors/timesformer.py``, ``videomae.py``, ``xclip.py``) wrap
``TimesformerModel``, ``VideoMAEModel`` and ``XCLIPVisionModel``. The model is always built from a
config (:class:`VideoTransformerConfig` and each detector's fields), never downloaded; the
``transformers`` import happens inside the detector modules, so listing detectors does not need it.

:func:`load_hf_weights` loads a local ``pretrained:`` file or folder onto such a backbone:

* a Hugging Face ``save_pretrained`` folder (``config.json`` beside ``model.safetensors``,
  ``pytorch_model.bin`` or their sharded ``*.index.json`` forms) of the backbone or of a model that
  contains it (``TimesformerForVideoClassification``, ``VideoMAEForPreTraining``, ``XCLIPModel``...:
  the wrapper's prefix is removed and its other parts, heads and decoders, are left out by name);
  ``config.json`` must describe the same architecture as the detector config;
* a single ``.safetensors`` file or torch state-dict file with the same key names (a TorchScript
  archive, such as the ``ViT-L-14.pt`` that OpenAI's ``clip`` package downloads, is read with
  ``torch.jit.load`` and only its tensors are used).

Loading is strict (the detector config's ``pretrained_strict``, default true): every tensor of the
backbone must come from the file and every kept tensor of the file must fit, else one
:class:`~detectors.backbones.PretrainedWeightsError` names the missing, unexpected and mis-shaped keys.
"""

from __future__ import annotations

import json
import logging
import re
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from fairforensics.detectors.backbones import (
    PRETRAINED_STRICT,
    PretrainedWeightsError,
    read_torch_file,
    strip_module_prefix,
)
from fairforensics.detectors.base import ClipDetectorConfig

log = logging.getLogger(__name__)

_LIST = 8
#: ``pretrained:`` values that mean random initialisation.
NO_WEIGHTS = (False, None, "", "false", "none")
#: Weight files of a ``save_pretrained`` folder, in the order they are looked for.
FOLDER_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


@dataclass
class VideoTransformerConfig(ClipDetectorConfig):
    """A ViT-style video backbone: ``width`` (hidden size), ``layers``, ``heads``, ``mlp_dim``
    (MLP hidden size), ``patch_size``; the frame size is ``input_size``, the frames ``clip_size``.
    ``pretrained``: false or a local Hugging Face folder / weights file of the backbone."""

    width: int = 768
    layers: int = 12
    heads: int = 12
    mlp_dim: int = 3072
    patch_size: int = 16
    input_size: int = 224

    def __post_init__(self) -> None:
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not divisible by heads {self.heads}")
        if self.input_size % self.patch_size:
            raise ValueError(
                f"input_size {self.input_size} is not a multiple of patch_size {self.patch_size}"
            )


@dataclass(frozen=True)
class HFLayout:
    """How a backbone's weights appear in the files users have.

    ``prefixes``: wrapper prefixes removed from a key (the first that matches);
    ``ignore``: prefixes (after that) of tensors that are not part of the backbone (heads,
    decoders, text towers), left out; ``renames``: regex substitutions to the installed
    transformers' key names; ``add_prefix``: put before every kept key (a backbone whose own
    keys carry a prefix, as ``XCLIPVisionModel``'s ``vision_model.`` before transformers 5.x);
    ``config``: the ``config.json`` values the backbone's architecture depends on;
    ``config_section``: the sub-config holding them (``vision_config`` of an ``XCLIPConfig``);
    ``config_class``: the transformers config class of that (sub-)config, whose defaults stand
    for the values a ``config.json`` leaves out (as transformers itself reads it).
    """

    name: str
    prefixes: Sequence[str] = ()
    ignore: Sequence[str] = ()
    renames: Sequence[tuple[str, str]] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    config_section: str | None = None
    config_class: type | None = None
    add_prefix: str = ""


def _names(keys: Sequence[str]) -> str:
    more = f" (+{len(keys) - _LIST} more)" if len(keys) > _LIST else ""
    return ", ".join(keys[:_LIST]) + more


def _read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as exc:
        raise PretrainedWeightsError(f"{path}: cannot read safetensors file: {exc}") from None


def _read_torch(path: Path) -> dict[str, torch.Tensor]:
    state = read_torch_file(path, PretrainedWeightsError, "pass a complete local weights file")
    for key in ("state_dict", "model"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    if not isinstance(state, dict):
        raise PretrainedWeightsError(f"{path}: expected a state dict, got {type(state).__name__}")
    return strip_module_prefix(state)


def _is_torchscript(path: Path) -> bool:
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as archive:
        return any(n.endswith("/constants.pkl") or "/code/" in n for n in archive.namelist())


def _read_torchscript(path: Path) -> dict[str, torch.Tensor]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit's deprecation notice
        try:
            return dict(torch.jit.load(str(path), map_location="cpu").state_dict())
        except RuntimeError as exc:
            first = (str(exc).strip().splitlines() or ["unreadable"])[0]
            raise PretrainedWeightsError(
                f"{path}: cannot read TorchScript archive: {first}"
            ) from None


def read_weight_file(path: Path) -> dict[str, torch.Tensor]:
    """The tensors of one ``.safetensors``, sharded ``*.index.json`` or torch file."""
    if path.name.endswith(".index.json"):
        try:
            shards = sorted(set(json.loads(path.read_text())["weight_map"].values()))
        except (OSError, ValueError, KeyError, AttributeError) as exc:
            raise PretrainedWeightsError(f"{path}: not a shard index ({exc})") from None
        state: dict[str, torch.Tensor] = {}
        for shard in shards:
            state.update(read_weight_file(path.parent / shard))
        return state
    if not path.is_file():
        raise PretrainedWeightsError(f"{path}: weights file not found")
    if path.suffix == ".safetensors":
        return _read_safetensors(path)
    if path.stat().st_size and _is_torchscript(path):
        return _read_torchscript(path)
    return _read_torch(path)


def read_weights(path: str | Path) -> tuple[dict[str, torch.Tensor], dict[str, Any] | None]:
    """(tensors, ``config.json`` or None) of a ``save_pretrained`` folder or of a weights file."""
    path = Path(path).expanduser()
    if not path.exists():
        raise PretrainedWeightsError(
            f"{path}: weights file or folder not found; pass a local Hugging Face folder or "
            "weights file, or set 'pretrained: false'"
        )
    if not path.is_dir():
        return read_weight_file(path), None
    weights = next((path / n for n in FOLDER_FILES if (path / n).is_file()), None)
    if weights is None:
        raise PretrainedWeightsError(
            f"{path}: no weights in this folder (looked for {', '.join(FOLDER_FILES)})"
        )
    config = None
    if (path / "config.json").is_file():
        try:
            config = json.loads((path / "config.json").read_text())
        except ValueError as exc:
            raise PretrainedWeightsError(f"{path / 'config.json'}: not JSON ({exc})") from None
    return read_weight_file(weights), config


def check_config(config: Mapping[str, Any], layout: HFLayout, source: str) -> None:
    """Raise naming every architecture value of ``config`` that differs from ``layout.config``."""
    section = config.get(layout.config_section, config) if layout.config_section else config
    if layout.config_class is not None:
        section = {**layout.config_class().to_dict(), **section}
    wrong = [
        f"{k} {section[k]!r} (detector config: {v!r})"
        for k, v in layout.config.items()
        if k in section and section[k] != v
    ]
    if wrong:
        raise PretrainedWeightsError(
            f"{source}: config.json describes another {layout.name} ({'; '.join(wrong)}); set the "
            "detector config to match it or pass a folder of the same architecture"
        )


def to_backbone_keys(
    state: Mapping[str, torch.Tensor], layout: HFLayout
) -> dict[str, torch.Tensor]:
    """``state`` under the backbone's own key names: wrapper prefix removed, other parts left out,
    names of other transformers versions renamed."""
    out = {}
    for key, value in state.items():
        for prefix in layout.prefixes:
            if key.startswith(prefix):
                key = key[len(prefix) :]
                break
        if key.startswith(tuple(layout.ignore)):
            continue
        for pattern, repl in layout.renames:
            key = re.sub(pattern, repl, key)
        out[layout.add_prefix + key] = value
    return out


def load_matching(
    module: nn.Module,
    state: Mapping[str, torch.Tensor],
    source: str,
    *,
    allowed_missing: Sequence[str] = (),
) -> None:
    """Copy ``state`` onto ``module``; strict (see the module docstring) unless the config says
    ``pretrained_strict: false``. ``allowed_missing``: prefixes of tensors that no such file has
    (parts the detector adds, e.g. adapters), left at their initial values."""
    own = module.state_dict()
    kept = {
        k: v.to(own[k].dtype) if v.is_floating_point() else v
        for k, v in state.items()
        if k in own and own[k].shape == v.shape
    }
    missing = sorted(k for k in own if k not in kept and not k.startswith(tuple(allowed_missing)))
    unexpected = sorted(k for k in state if k not in own)
    shapes = sorted(
        f"{k} {tuple(v.shape)} vs {tuple(own[k].shape)}"
        for k, v in state.items()
        if k in own and own[k].shape != v.shape
    )
    problems = [
        f"{what} {len(keys)}: {_names(keys)}"
        for what, keys in (("missing", missing), ("unexpected", unexpected), ("shape", shapes))
        if keys
    ]
    if problems and PRETRAINED_STRICT.get():
        raise PretrainedWeightsError(
            f"{source} does not cover the backbone ({len(kept)} of {len(own)} tensors fit): "
            + "; ".join(problems)
            + "; pass a complete file, or set 'pretrained_strict: false' to load only what fits"
        )
    if not kept:
        raise PretrainedWeightsError(f"{source}: no tensor in the file matches the backbone")
    module.load_state_dict(kept, strict=False)
    log.info(
        "loaded %d of %d tensors from %s%s",
        len(kept),
        len(own),
        source,
        f" (pretrained_strict: false; {'; '.join(problems)})" if problems else "",
    )


def check_pretrained(pretrained: bool | str, what: str) -> Path | None:
    """The local path of a ``pretrained:`` value, None for random weights; hub names are refused."""
    if pretrained in NO_WEIGHTS:
        return None
    if pretrained is True or str(pretrained).lower() in ("true", "timm"):
        raise PretrainedWeightsError(
            f"{what} weights load from a local file or folder only (nothing is downloaded): set "
            "'pretrained: /path/to/folder' (see docs/detectors.md) or 'pretrained: false'"
        )
    return Path(str(pretrained)).expanduser()


def load_hf_weights(module: nn.Module, pretrained: bool | str, layout: HFLayout) -> None:
    """Load a local ``pretrained:`` folder or file (module docstring) onto ``module``, or nothing
    when ``pretrained`` is false."""
    path = check_pretrained(pretrained, layout.name)
    if path is None:
        return
    state, config = read_weights(path)
    if config is not None:
        check_config(config, layout, str(path))
    load_matching(module, to_backbone_keys(state, layout), str(path))
