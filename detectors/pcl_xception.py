"""PCL-I2G (Zhao et al., "Learning Self-Consistency for Deepfake Detection", ICCV 2021), as in
DeepfakeBench v2 (``training/detectors/pcl_xception_detector.py``).

Training data are real faces and their inconsistency images (``blend:i2g``: another real face
pasted into a random face region, :mod:`preprocessing.i2g`) with the soft blending mask as
``mask``. The network is DeepfakeBench's Xception (:mod:`detectors.xception_sladd`); Pairwise
Self-Consistency Learning (PCL) reads the 728-channel map after block 7 (16 x 16 at 256 x 256):
a 1 x 1 convolution ``theta`` embeds every position and the consistency of positions ``p`` and
``q`` is ``sigmoid(theta_p . theta_q / sqrt(728))``, a 4-D volume [B, 16, 16, 16, 16]. Its target
is ``1 - |M_p - M_q|`` with ``M`` the mask resized to the map (bilinear, corners aligned): 1 where
both positions come from the same face. Loss: CE + ``pcl_weight`` (1) x binary cross-entropy of
the volume. At evaluation only the classifier runs.

The binary cross-entropy (``consistency_bce``). ``sigmoid`` (default), DeepfakeBench's: the
sigmoid of the logits, then ``nn.BCELoss`` (each log clamped at -100), in float32 (float64 for a
float64 model) also under AMP. Where the float32 sigmoid rounds to exactly 0 or 1 (a logit beyond
about +-17, common at the start of training) an entry whose target lies on the other side costs
100 and passes no gradient. ``logits``: the same loss computed from the logits
(``binary_cross_entropy_with_logits``), which stays exact and keeps its gradient there; the two
agree wherever the sigmoid does not saturate.

Variants (``model.variant``). ``deepfakebench`` (default) reproduces DeepfakeBench's code:
its ``Masks4D`` puts the mask ``M_q`` itself, not ``1 - |M_p - M_q|``, in the target row of every
position ``p`` in the first column of the map (a sixteenth of the volume), and its non-local block
builds a second embedding ``phi`` that it never uses (its key is dropped when a DeepfakeBench
checkpoint is imported). ``paper``: the target is ``1 - |M_p - M_q|`` everywhere. The network and
its eval function are the same in both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.base import DetectorConfig, loss_precision
from fairforensics.detectors.dfb_keys import XCEPTION_HEAD, XCEPTION_UNUSED, remap
from fairforensics.detectors.registry import register_detector
from fairforensics.detectors.xception_sladd import MIDDLE, XceptionSLADDBase


@dataclass
class PCLConfig(DetectorConfig):
    """``pcl_weight``: weight of the consistency loss (DeepfakeBench: 1); ``consistency_bce``:
    its binary cross-entropy after a sigmoid (DeepfakeBench's) or from the logits (module
    docstring)."""

    pcl_weight: float = 1.0
    variant: Literal["deepfakebench", "paper"] = "deepfakebench"
    consistency_bce: Literal["sigmoid", "logits"] = "sigmoid"

    def __post_init__(self) -> None:
        if self.pcl_weight < 0:
            raise ValueError(f"pcl_weight must be >= 0, got {self.pcl_weight}")


class ConsistencyVolume(nn.Module):
    """Pairwise consistency logits [B, N, N] (N = h * w) of a feature map, before the sigmoid."""

    def __init__(self, channels: int = MIDDLE) -> None:
        super().__init__()
        self.theta = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.theta(x).flatten(2)  # [B, C, N]
        return torch.einsum("bcp,bcq->bpq", t, t) / math.sqrt(t.shape[1])


def consistency_target(
    mask: torch.Tensor,
    size: tuple[int, int],
    first_column_quirk: bool,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """[B, N, N] target ``1 - |M_p - M_q|`` of a mask [B, 1, H, W] resized to ``size``, in
    ``dtype``.

    ``first_column_quirk``: DeepfakeBench's ``Masks4D``, whose rows of the positions in column 0
    hold ``M_q`` instead.
    """
    m = F.interpolate(mask.to(dtype), size=size, mode="bilinear", align_corners=True).flatten(1)
    target = 1 - (m[:, :, None] - m[:, None, :]).abs()
    if first_column_quirk:
        first = torch.arange(0, size[0] * size[1], size[1], device=mask.device)
        target[:, first, :] = m[:, None, :]
    return target


def consistency_bce(
    logits: torch.Tensor, target: torch.Tensor, after_sigmoid: bool
) -> torch.Tensor:
    """Mean binary cross-entropy of consistency ``logits`` against ``target`` in float32 (float64
    stays), also under AMP: after a sigmoid with ``nn.BCELoss``'s clamp (``after_sigmoid``,
    DeepfakeBench's) or from the logits."""
    with torch.autocast(logits.device.type, enabled=False):
        x = loss_precision(logits)
        target = target.to(x.dtype)
        if after_sigmoid:
            return F.binary_cross_entropy(torch.sigmoid(x), target)
        return F.binary_cross_entropy_with_logits(x, target)


@register_detector("pcl_xception", family="Spatial")
class PCLXception(XceptionSLADDBase):
    """Xception + pairwise self-consistency on I2G fakes (20,811,050 + 530,712 parameters)."""

    Config = PCLConfig
    requires = frozenset({"blend:i2g", "mask"})
    deepfakebench_name = "pcl_xception"

    def __init__(self, cfg: PCLConfig) -> None:
        super().__init__(cfg)
        self.consistency = ConsistencyVolume(MIDDLE)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        feat_map, middle = self.features(batch["image"])
        logits, pooled = self.classify(feat_map)
        if not self.training:
            return self.outputs(logits, pooled)
        return self.outputs(logits, pooled, consistency=self.consistency(middle), middle=middle)

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """CE + ``pcl_weight`` * BCE(consistency volume, target from ``mask``)."""
        ce = F.cross_entropy(out["logits"], batch["label"])
        if "consistency" not in out:
            return {"total": ce, "ce": ce}
        if "mask" not in batch:
            raise ValueError(
                "pcl_xception trains with 'mask' (the I2G blending masks) in the batch"
            )
        size = tuple(out["middle"].shape[-2:])
        quirk = self.cfg.variant == "deepfakebench"
        logits = loss_precision(out["consistency"])
        target = consistency_target(batch["mask"], size, quirk, logits.dtype)
        pcl = consistency_bce(logits, target, self.cfg.consistency_bce == "sigmoid")
        return {"total": ce + self.cfg.pcl_weight * pcl, "ce": ce, "pcl": pcl}

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """``Xception_SLADD`` backbone (its SLADD heads unused here), ``PCL.theta``; ``PCL.phi``
        is built but never used by DeepfakeBench."""
        unused = ("type_fc.", "mag_fc.", "map.", XCEPTION_UNUSED)
        return remap(
            state_dict,
            [("backbone." + XCEPTION_HEAD, "head."), ("backbone.", "backbone."),
             ("PCL.theta.", "consistency.theta.")],
            drop=[*("backbone." + u for u in unused), "PCL.phi."],
        )  # fmt: skip
