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
Files are read and loaded by :mod:`detectors.backbones.vit_weights`, as for the CLIP detectors.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.backbones.vit_weights import (
    check_tower_shape,
    load_matching,
    local_weights,
    read_weight_files,
)
from fairforensics.detectors.base import ClipDetectorConfig

log = logging.getLogger(__name__)


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
        check_tower_shape(self)


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


def load_hf_weights(module: nn.Module, pretrained: bool | str, layout: HFLayout) -> None:
    """Load a local ``pretrained:`` folder or file (module docstring) onto ``module``, or nothing
    when ``pretrained`` is false."""
    path = local_weights(pretrained, layout.name)
    if path is None:
        return
    state, config = read_weight_files(path)
    if config is not None:
        check_config(config, layout, path)
    load_matching(module, to_backbone_keys(state, layout), path)
