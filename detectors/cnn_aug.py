"""CNN-Aug (Wang et al., "CNN-generated images are surprisingly easy to spot... for now",
CVPR 2020).

A ResNet classifier whose generalisation comes from its training augmentations (Sec. 3.2 of
Wang et al.: Gaussian blur with sigma ~ U[0, 3] and JPEG compression with quality ~ U{30..100},
each with probability 0.5); DeepfakeBench uses ResNet-34 (paper 002, Appendix A.2 item 3). The
augmentations are training settings and live in ``configs/detectors/cnn_aug.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass

from detectors.registry import register_detector
from detectors.xception import IMAGENET_MEAN, IMAGENET_STD, TimmClassifier, TimmClassifierConfig


@dataclass
class CNNAugConfig(TimmClassifierConfig):
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD


@register_detector("cnn_aug", family="Naive")
class CNNAug(TimmClassifier):
    """timm ``resnet34`` with a 2-way head (21,285,698 parameters)."""

    Config = CNNAugConfig
    arch = "resnet34"
