"""SBI: Self-Blended Images (Shiohara & Yamasaki, CVPR 2022), DeepfakeBench v2's ``sbi_detector.py``.

The model is a plain EfficientNet-B4 classifier (DeepfakeBench's ``networks/efficientnetb4.py``:
efficientnet_pytorch numerics, drop-connect 0.2; :mod:`detectors.dfb_efficientnet`); what makes
SBI is its training data. Each batch holds real faces and their self-blended fakes
(``blend:sbi_paper``, :mod:`preprocessing.self_blending`: the source-target augmentation on the
source or the target, a landmark hull mask deformed by an affine and an elastic warp, blurred, and
scaled by a blend ratio; the same colour/JPEG transform on both images of a pair); fake frames of
the dataset are not used. The loss is cross-entropy.

Variants (``variant``): ``deepfakebench`` (the default) has DeepfakeBench's 3-way head (``sbi.yaml``
sets ``num_classes: 3`` while labels are 0/1), ImageNet mean/std and 256 px; ``prob`` is the softmax
probability of class 1 of 3, as DeepfakeBench computes it, and ``logits`` is the 2-way pair
``[logsumexp(z0, z2), z1]`` with the same softmax probability. ``paper``: the authors' 2-way head
(their ``src/train_sbi.py``: 380 px, inputs in [0, 1]; configs/detectors/paper/sbi.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_efficientnet import (
    HEAD_CHANNELS,
    backbone_rules,
    build_efficientnet_b4,
)
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector
from fairforensics.detectors.xception import IMAGENET_MEAN, IMAGENET_STD


@dataclass
class SBIConfig(DetectorConfig):
    """``variant``: DeepfakeBench's 3-way head (default) or the paper's 2-way head."""

    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    variant: Literal["deepfakebench", "paper"] = "deepfakebench"

    @property
    def num_classes(self) -> int:
        return 3 if self.variant == "deepfakebench" else 2


@register_detector("sbi", family="Spatial")
class SBI(Detector):
    """EfficientNet-B4 + Linear(1792, 3) (DeepfakeBench; 17,553,995 parameters)."""

    Config = SBIConfig
    requires = frozenset({"blend:sbi_paper"})
    deepfakebench_name = "sbi"
    test_input_size = 32

    def __init__(self, cfg: SBIConfig) -> None:
        super().__init__(cfg)
        self.backbone = build_efficientnet_b4(cfg.pretrained)
        self.head = nn.Linear(HEAD_CHANNELS, cfg.num_classes)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        fmap = self.backbone.forward_features(batch["image"])
        feat = fmap.mean(dim=(2, 3))
        z = self.head(feat)
        if z.shape[1] == 3:  # softmax of [logsumexp(z0, z2), z1] gives p1 of the 3 classes
            logits = torch.stack([torch.logsumexp(z[:, 0::2], dim=1), z[:, 1]], dim=1)
        else:
            logits = z
        return self.outputs(logits, feat, class_logits=z, feature_map=fmap)

    def sample_loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> torch.Tensor:
        """Cross-entropy over the head's classes (DeepfakeBench's loss), per sample."""
        return F.cross_entropy(out["class_logits"].float(), batch["label"], reduction="none")

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        ce = self.sample_loss(batch, out).mean()
        return {"total": ce, "ce": ce}

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """``backbone.efficientnet.*`` -> timm's names; ``backbone.last_layer`` -> ``head``."""
        rules = backbone_rules("backbone.", "backbone.") | {"backbone.last_layer.": "head."}
        return remap(state_dict, rules)
