"""EfficientNet-B4 baseline (Tan & Le, ICML 2019), a naive detector of DeepfakeBench.

Paper 002, Appendix A.2 item 4: the EfficientNet-B4 backbone (19.3M parameters with the ImageNet
head; Table 8: 19M) with a 2-way linear head on its 1792-d pooled features.
"""

from __future__ import annotations

from dataclasses import dataclass

from detectors.registry import register_detector
from detectors.xception import IMAGENET_MEAN, IMAGENET_STD, TimmClassifier, TimmClassifierConfig


@dataclass
class EfficientNetB4Config(TimmClassifierConfig):
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD


@register_detector("efficientnet_b4", family="Naive")
class EfficientNetB4(TimmClassifier):
    """timm ``efficientnet_b4`` with a 2-way head (17,552,202 parameters)."""

    Config = EfficientNetB4Config
    arch = "efficientnet_b4"
