"""ResNet-DSC (DeepfakeBench, paper 002, Sec. 4.3 and Table 4).

ResNet-34 whose first convolution (7x7, stride 2, 3 -> 64 channels) is replaced by a
depthwise-separable convolution (Chollet, CVPR 2017): a 7x7 stride-2 depthwise convolution per
input channel followed by a 1x1 pointwise convolution to 64 channels. Everything else, including
the ImageNet-pretrained weights of the other layers, is the plain ResNet-34.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from fairforensics.detectors.backbones import create_timm_backbone
from fairforensics.detectors.registry import register_detector
from fairforensics.detectors.xception import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    TimmClassifier,
    TimmClassifierConfig,
)


def depthwise_separable(conv: nn.Conv2d) -> nn.Sequential:
    """A depthwise + pointwise pair with the kernel, stride, padding and channels of ``conv``."""
    cin, cout = conv.in_channels, conv.out_channels
    return nn.Sequential(
        nn.Conv2d(cin, cin, conv.kernel_size, conv.stride, conv.padding, groups=cin, bias=False),
        nn.Conv2d(cin, cout, 1, bias=False),
    )


@dataclass
class ResNetDSCConfig(TimmClassifierConfig):
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD


@register_detector("resnet_dsc", family="Naive")
class ResNetDSC(TimmClassifier):
    """ResNet-34 with a depthwise-separable stem convolution (21,276,629 parameters)."""

    Config = ResNetDSCConfig
    arch = "resnet34"

    def build_backbone(self, cfg: TimmClassifierConfig) -> nn.Module:
        model = create_timm_backbone(self.arch, cfg.pretrained, num_classes=0)
        model.conv1 = depthwise_separable(model.conv1)
        return model
