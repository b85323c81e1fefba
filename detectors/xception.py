"""Xception baseline (Rossler et al., FaceForensics++, ICCV 2019; Chollet, CVPR 2017).

The naive binary classifier of DeepfakeBench (paper 002, Appendix A.2 item 5): timm's
``legacy_xception`` (22.86M parameters with the ImageNet head, Table 8: 22.9M) whose classifier is
replaced by a 2-way linear layer on the 2048-d pooled features. This module also holds
:class:`TimmClassifier`, the shared body of every "backbone + linear head" detector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn

from fairforensics.detectors.backbones import create_timm_backbone
from fairforensics.detectors.backbones.xception import create_xception
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_keys import remap_xception_detector
from fairforensics.detectors.registry import register_detector

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass
class TimmClassifierConfig(DetectorConfig):
    """``dropout``: dropout before the 2-way linear head."""

    dropout: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


class TimmClassifier(Detector):
    """A timm backbone's pooled features -> dropout -> ``Linear(num_features, 2)``."""

    Config = TimmClassifierConfig
    arch: ClassVar[str] = ""

    def __init__(self, cfg: TimmClassifierConfig) -> None:
        super().__init__(cfg)
        self.backbone = self.build_backbone(cfg)
        self.drop = nn.Dropout(cfg.dropout)
        self.head = nn.Linear(self.backbone.num_features, 2)

    def build_backbone(self, cfg: TimmClassifierConfig) -> nn.Module:
        """The timm model ``arch`` without its classifier (``num_classes=0``)."""
        return create_timm_backbone(self.arch, cfg.pretrained, num_classes=0)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        feat = self.backbone(batch["image"])
        return self.outputs(self.head(self.drop(feat)), feat)


@dataclass
class XceptionConfig(TimmClassifierConfig):
    mean: tuple[float, float, float] = (0.5, 0.5, 0.5)
    std: tuple[float, float, float] = (0.5, 0.5, 0.5)


@register_detector("xception", family="Naive")
class Xception(TimmClassifier):
    """Xception with a 2-way head (20,811,050 parameters)."""

    Config = XceptionConfig
    arch = "legacy_xception"
    deepfakebench_name = "xception"

    def build_backbone(self, cfg: TimmClassifierConfig) -> nn.Module:
        return create_xception(cfg.pretrained)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DFB's ``training/networks/xception.py`` has timm's names; its head is ``last_linear``
        and its ``adjust_channel`` block is unused by the xception detector."""
        return remap_xception_detector(state_dict)
