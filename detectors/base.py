"""The detector contract every registered model follows.

A detector is a :class:`Detector` (an ``nn.Module``) with a config dataclass ``Config`` that
subclasses :class:`DetectorConfig`. ``forward(batch)`` takes the batch dict made by the training
data pipeline and returns at least::

    logits  [B, 2]  (real, fake) scores before softmax
    prob    [B]     softmax probability of class 1 (fake / attack)
    feat    [B, D]  penultimate features (for t-SNE)

``loss(batch, out)`` returns a dict with ``total`` (the scalar to minimise) and every named term.

Video detectors (``input_kind = "clip"``, config :class:`ClipDetectorConfig`) take clips of
``clip_size`` consecutive frames: ``image`` is float [B, T, 3, H, W] and every output is one per clip
(``logits`` [B, 2], ``prob`` [B]); a model that has a single logit ``z`` returns ``logits = [0, z]``,
whose softmax probability of class 1 is ``sigmoid(z)``. The trainer gives them clips
(``preprocessing.frames.FrameDataset`` with ``clip_size``); per-frame keys gain the time axis
(``landmarks`` [B, T, 68, 2], ``mask`` [B, T, 1, H, W]), and ``blend:<name>``/``pairs`` are not
available for clips.

Batch keys. Always present: ``image`` float [B, 3, H, W] (video detectors: [B, T, 3, H, W]), already
normalised with the detector's ``mean``/``std`` (config); ``label`` long [B]. A detector lists what else it needs in
``requires``; the data pipeline (``training/``) provides exactly these keys:

=================  =================================================================================
``mask``           float [B, 1, H, W] in [0, 1], 1 = manipulated pixel; zeros for real faces and for
                   fakes without a mask (``has_mask`` bool [B] tells which are real masks)
``landmarks``      float [B, 68, 2], dlib points in pixel coordinates of ``image`` (after augmentation)
``method_label``   long [B]: 0 for real, 1..K for the dataset's manipulation methods (sorted names)
``identity``       long [B]: each face's subject (the index's ``identity``, else the video id) as a
                   class among the training split's subjects (sorted ``dataset/identity``; IID)
``views``          float [B, 2, 3, H, W]: two independent augmentations of each image (CORE)
``pairs``          each batch is half real, half fake, where possible from the same source video;
                   ``pair_index`` long [B] gives each sample's partner (UCF)
``random_pairs``   with ``pairs``: each fake's real partner drawn at random (PG-FDD)
``blend:<name>``   online self-blended fakes made from real faces by ``preprocessing.blending``
                   generator ``<name>`` (``fwa``, ``xray``, ``sbi``, ``sbi_paper``, ``i2g``); their
                   targets come as ``xray`` float [B, 1, H, W] where the generator makes one
``pixel_map``      float [B, 1, h, w] pixel-wise target map (DeepPixBis, LMFD-PAD; FairSWAP may edit it)
=================  =================================================================================

Every batch also carries ``video_id``, ``method``, ``dataset`` (lists of str) and ``attributes``
(dict of lists) so predictions can be grouped; detectors must not depend on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn
from torch.nn import functional as F


@dataclass
class DetectorConfig:
    """Settings every detector has; subclasses add their own fields.

    ``pretrained``: ``false`` (random init), ``"timm"`` (hub weights; needs network) or a path
    to a local state-dict file (a backbone file, or a whole detector: ours or DeepfakeBench's).
    ``pretrained_strict``: a backbone file must cover the backbone (``false``: load what fits).
    ``mean``/``std``: input normalisation applied by the data pipeline. ``input_size``: the
    resolution the detector is designed for.
    """

    pretrained: bool | str = False
    pretrained_strict: bool = True
    mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    std: tuple[float, float, float] = (0.5, 0.5, 0.5)
    input_size: int = 256


@dataclass
class ClipDetectorConfig(DetectorConfig):
    """A video detector's settings: ``clip_size`` consecutive frames per input clip."""

    clip_size: int = 16


class Detector(nn.Module):
    """Base class of all detectors; see the module docstring for the contract.

    Class attributes and hooks a subclass may override (the trainer, the tests and the
    leaderboard use only these; nothing is looked up with ``hasattr``):

    - ``Config``: the config dataclass (its ``mean``/``std`` are the default normalisation the
      data pipeline applies; ``input_size`` the default resolution).
    - ``requires``: the extra batch keys (table above).
    - ``family``: the leaderboard's detector type (paper 002, Table 1: ``Naive``, ``Spatial``,
      ``Frequency``; ``PAD`` for paper 001's detectors); set it with
      ``@register_detector(name, family=...)``.
    - ``test_input_size``: the input size the shared contract tests build the detector at;
      ``test_config``: other model config values they build it with (small widths for the
      large transformers and for LSDA's five EfficientNets, so that the suite stays fast; the
      contract does not depend on width).
    - ``input_kind``: ``frame`` (``image`` [B, 3, H, W]) or ``clip`` (a video detector: ``image``
      [B, T, 3, H, W], T = its config's ``clip_size``; ``test_clip_size`` in the contract tests).
    - :meth:`configure_from_data`: data-dependent config values (e.g. UCF's number of methods).
    - :meth:`configure_from_attributes`: config values from the training videos' attributes
      (PG-FDD's demographic groups).
    - :meth:`set_epoch`: called by the trainer before every epoch (epoch-dependent losses).
    - :meth:`set_schedule`: called by the trainer once, before training, with the batches per
      epoch and the number of epochs (losses on a step schedule, e.g. UIA-ViT's).
    - ``late_params``: parameters the loss reaches only after a warm-up phase (UIA-ViT's
      ``c_*`` from its second epoch); the contract tests do not expect their gradient at step 1.
    - :meth:`optimizer_groups`: the optimiser's parameter groups (a part trained with its own
      learning rate or betas, e.g. SLADD's adversarial synthesiser).
    """

    Config: ClassVar[type[DetectorConfig]] = DetectorConfig
    requires: ClassVar[frozenset[str]] = frozenset()
    name: ClassVar[str] = ""
    family: ClassVar[str] = "Other"
    test_input_size: ClassVar[int] = 64
    test_config: ClassVar[dict[str, Any]] = {}
    input_kind: ClassVar[str] = "frame"
    test_clip_size: ClassVar[int] = 4
    late_params: ClassVar[frozenset[str]] = frozenset()
    #: DeepfakeBench's config name for this model (``training/config/detector/<name>.yaml``), or None.
    deepfakebench_name: ClassVar[str | None] = None

    def __init__(self, cfg: DetectorConfig) -> None:
        super().__init__()
        self.cfg = cfg

    @classmethod
    def configure_from_data(
        cls, model_cfg: dict[str, Any], method_names: list[str]
    ) -> dict[str, Any]:
        """The ``model`` config completed with values that depend on the training data.

        ``method_names``: the sorted fake/attack methods of the training split (the classes
        1..K of ``method_label``). The default returns ``model_cfg`` unchanged; values the user
        set must be kept.
        """
        return model_cfg

    @classmethod
    def configure_from_attributes(
        cls, model_cfg: dict[str, Any], videos: list[tuple[str, Mapping[str, str], int]]
    ) -> dict[str, Any]:
        """The ``model`` config completed from the training split's attributes (e.g. PG-FDD's
        demographic groups and their sizes).

        ``videos``: one ``(name, attributes, samples)`` per training video, ``samples`` being the
        number of its frames the training split uses. The default returns ``model_cfg``
        unchanged; values the user set must be kept.
        """
        return model_cfg

    def set_epoch(self, epoch: int) -> None:
        """Called by the trainer at the start of every epoch (0-based); a no-op by default."""

    def set_schedule(self, steps_per_epoch: int, epochs: int) -> None:
        """Called by the trainer before training: optimiser steps per epoch (per rank) and
        epochs; a no-op by default."""

    def optimizer_groups(self, lr: float, betas: tuple[float, float]) -> list[dict[str, Any]]:
        """The optimiser's parameter groups for base learning rate ``lr`` and Adam ``betas``.

        Default: one group of every trainable parameter. A group may set its own ``lr`` and
        ``betas``; the learning-rate schedule scales every group alike.
        """
        return [{"params": [p for p in self.parameters() if p.requires_grad]}]

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:  # pragma: no cover
        raise NotImplementedError

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Cross-entropy on ``logits``; detectors with more terms override this."""
        ce = F.cross_entropy(out["logits"], batch["label"])
        return {"total": ce, "ce": ce}

    def sample_loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> torch.Tensor:
        """Per-sample cross-entropy [B] on ``logits`` (``reduction="none"``); its mean is the
        ``ce`` term of :meth:`loss`. Only fairness-aware losses (``train.fair_loss``) call it."""
        return F.cross_entropy(out["logits"].float(), batch["label"], reduction="none")

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DeepfakeBench's tensors (prefix ``module.`` already removed) under this model's key names.

        Keys that DeepfakeBench builds but never uses in its forward pass (e.g. Xception's
        ``adjust_channel``) are dropped here by name; any other key that has no counterpart raises
        ``KeyError`` listing them, so nothing is dropped silently. Write it with
        :func:`detectors.dfb_keys.remap` (prefix rules), as every detector here does.
        """
        raise NotImplementedError(f"{type(self).__name__} has no DeepfakeBench key map")

    @staticmethod
    def outputs(
        logits: torch.Tensor, feat: torch.Tensor, **extra: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """The standard output dict from [B, 2] logits and [B, D] features."""
        return {
            "logits": logits,
            "prob": torch.softmax(logits.float(), dim=1)[:, 1],
            "feat": feat,
            **extra,
        }


def loss_precision(x: torch.Tensor) -> torch.Tensor:
    """``x`` in float32 for a loss term (half precision under AMP is promoted); a float64 model's
    tensors stay float64."""
    return x if x.dtype == torch.float64 else x.float()
