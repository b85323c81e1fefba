"""CNN-Aug (Wang et al., "CNN-generated images are surprisingly easy to spot... for now",
CVPR 2020).

A ResNet classifier whose generalisation comes from its training augmentations (Sec. 3.2 of
Wang et al.: Gaussian blur with sigma ~ U[0, 3] and JPEG compression with quality ~ U{30..100},
each with probability 0.5); DeepfakeBench uses ResNet-34 (paper 002, Appendix A.2 item 3). The
augmentations are training settings and live in ``configs/detectors/paper/cnn_aug.yaml``;
DeepfakeBench (``resnet34.yaml``, the default) uses its default augmentations and mean = std = 0.5.
The model itself is the same in both variants.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector
from fairforensics.detectors.xception import TimmClassifier, TimmClassifierConfig


@dataclass
class CNNAugConfig(TimmClassifierConfig):
    """DeepfakeBench's mean = std = 0.5 by default; the paper variant's YAML sets ImageNet's."""


@register_detector("cnn_aug", family="Naive")
class CNNAug(TimmClassifier):
    """timm ``resnet34`` with a 2-way head (21,285,698 parameters)."""

    Config = CNNAugConfig
    arch = "resnet34"
    deepfakebench_name = "resnet34"

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DFB keeps torchvision's ResNet-34 children 0-7 as ``backbone.resnet.N``."""
        children = ("conv1", "bn1", None, None, "layer1", "layer2", "layer3", "layer4")
        prefixes = {
            f"backbone.resnet.{i}.": f"backbone.{name}." for i, name in enumerate(children) if name
        }
        return remap(state_dict, {**prefixes, "backbone.fc.": "head."})
