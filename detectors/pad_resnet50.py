"""ResNet-50 face PAD baseline (He et al., "Deep Residual Learning for Image Recognition", CVPR
2016), as used in the PAD fairness paper (``001_24ad1d03aa4f5e30.txt`` Sec. IV-A, IV-C).

The timm ``resnet50`` trunk, global average pooling and one linear output for the attack logit
``z``, trained with binary cross-entropy only and DeepPixBiS's training settings (Sec. IV-C:
224x224 ImageNet-normalised faces, Adam, flip / rotation / colour jitter). ``z`` is returned as
logits ``[0, z]`` so that ``prob = sigmoid(z)`` and the two-class cross-entropy equals the BCE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones import create_timm_backbone
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.deeppixbis import IMAGENET_MEAN, IMAGENET_STD
from fairforensics.detectors.registry import register_detector


@dataclass
class PadResNet50Config(DetectorConfig):
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    input_size: int = 224
    backbone: str = "resnet50"


@register_detector("pad_resnet50", family="PAD")
class PadResNet50(Detector):
    """ResNet-50 with a one-logit head and binary cross-entropy."""

    Config = PadResNet50Config

    def __init__(self, cfg: PadResNet50Config) -> None:
        super().__init__(cfg)
        self.backbone = create_timm_backbone(cfg.backbone, cfg.pretrained, num_classes=0)
        self.fc = nn.Linear(self.backbone.num_features, 1)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        feat = self.backbone(batch["image"])
        z = self.fc(feat)
        return self.outputs(torch.cat([torch.zeros_like(z), z], dim=1), feat)

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Binary cross-entropy on the attack logit."""
        bce = F.binary_cross_entropy_with_logits(
            out["logits"][:, 1].float(), batch["label"].float()
        )
        return {"total": bce, "bce": bce}
