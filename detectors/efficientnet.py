"""EfficientNet-B4 baseline (Tan & Le, ICML 2019), a naive detector of DeepfakeBench.

Paper 002, Appendix A.2 item 4: the EfficientNet-B4 backbone (19.3M parameters with the ImageNet
head; Table 8: 19M) with a 2-way linear head on its 1792-d pooled features.

Variants (``variant``). ``deepfakebench`` (the default) computes DeepfakeBench's
``training/networks/efficientnetb4.py``, i.e. ``efficientnet_pytorch`` numerics on timm's
modules: the stem is an unpadded 3x3 stride-2 convolution (DeepfakeBench replaces it), every
depthwise convolution pads statically as "same" padding computed for the 380x380 input B4 is
defined for (asymmetric, e.g. (0, 1) in the stride-2 3x3 blocks, whatever the real input size),
BatchNorm eps 1e-3 and momentum 0.01, and drop-connect 0.2 (scaled by block index) in training,
drawn as efficientnet_pytorch draws it (one ``torch.rand`` per sample and block, kept where
``floor(keep + u)`` is 1: the same masks as DeepfakeBench's for the same seed);
mean = std = 0.5. DeepfakeBench re-initialises the stem after loading ImageNet weights; we keep
the ImageNet stem weights (same shape). ``paper``: timm's ``efficientnet_b4`` as it is
(symmetric padding, eps 1e-5, no drop-path), ImageNet statistics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones import create_timm_backbone
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector
from fairforensics.detectors.xception import TimmClassifier, TimmClassifierConfig

#: efficientnet_pytorch's EfficientNet-B4 image size, from which its static padding is computed.
B4_IMAGE_SIZE = 380
_STAGE_DEPTHS = (2, 4, 4, 6, 6, 8, 2)


@dataclass
class EfficientNetB4Config(TimmClassifierConfig):
    """``variant``: DeepfakeBench's numerics (default) or timm's model (``paper``)."""

    variant: Literal["deepfakebench", "paper"] = "deepfakebench"


class StaticPadConv2d(nn.Conv2d):
    """A convolution after a fixed zero padding ``(left, right, top, bottom)`` (TF "same" style)."""

    def __init__(self, conv: nn.Conv2d, pad: tuple[int, int, int, int]) -> None:
        super().__init__(
            conv.in_channels,
            conv.out_channels,
            conv.kernel_size,
            conv.stride,
            0,
            conv.dilation,
            conv.groups,
            conv.bias is not None,
        )
        self.static_pad = pad
        with torch.no_grad():
            self.weight.copy_(conv.weight)
            if conv.bias is not None:
                self.bias.copy_(conv.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(F.pad(x, self.static_pad))


class DropConnect(nn.Module):
    """efficientnet_pytorch's ``drop_connect``: in training, each sample's branch is kept where
    ``floor(keep + u)`` is 1 for ``u = torch.rand([B, 1, 1, 1])`` in the input's dtype, and scaled
    by ``1 / keep``. Same distribution as timm's ``DropPath`` (which draws with ``bernoulli_``),
    but the same masks as efficientnet_pytorch for the same generator state."""

    def __init__(self, drop_prob: float) -> None:
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or not self.drop_prob:
            return x
        keep = 1.0 - self.drop_prob
        u = torch.rand([x.shape[0], 1, 1, 1], dtype=x.dtype, device=x.device)
        return x / keep * torch.floor(keep + u)

    def extra_repr(self) -> str:
        return f"drop_prob={self.drop_prob:.3f}"


def _same_pad(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """efficientnet_pytorch's static "same" padding of one axis: (before, after)."""
    total = max((math.ceil(size / stride) - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def efficientnet_pytorch_numerics(
    model: nn.Module, image_size: int = B4_IMAGE_SIZE, same_stem: bool = False
) -> nn.Module:
    """Turn timm's ``efficientnet_b4`` into efficientnet_pytorch's function, as DeepfakeBench runs
    it (see the module docstring); weights are kept. ``image_size``: the size efficientnet_pytorch
    computes its static padding for (B4: 380; B0: 224). ``same_stem``: keep efficientnet_pytorch's
    own stem (static "same" padding) instead of DeepfakeBench's unpadded replacement. timm's
    drop-path becomes efficientnet_pytorch's :class:`DropConnect` (same rate)."""
    from timm.layers import DropPath  # timm is loaded: ``model`` is one of its models

    if same_stem:
        before, after = _same_pad(image_size, 3, 2)
        model.conv_stem = StaticPadConv2d(model.conv_stem, (before, after, before, after))
    else:
        model.conv_stem.padding = (0, 0)
    size = math.ceil(image_size / 2)  # efficientnet_pytorch's stem output size
    for stage in model.blocks:
        for block in stage:
            conv = block.conv_dw
            k, s = conv.kernel_size[0], conv.stride[0]
            before, after = _same_pad(size, k, s)
            block.conv_dw = StaticPadConv2d(conv, (before, after, before, after))
            size = math.ceil(size / s)
            if isinstance(block.drop_path, DropPath):
                block.drop_path = DropConnect(block.drop_path.drop_prob)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.eps, m.momentum = 1e-3, 0.01
    return model


def efficientnet_b4_rules(src: str, dst: str) -> dict[str, str]:
    """Prefix rules (for :func:`detectors.dfb_keys.remap`) from efficientnet_pytorch's
    EfficientNet-B4 under ``src`` (flat ``_blocks.N``, DeepfakeBench's layout) to timm's
    ``efficientnet_b4`` under ``dst`` (``blocks.stage.index``)."""
    prefixes = {
        src + "_conv_stem.": dst + "conv_stem.",
        src + "_bn0.": dst + "bn1.",
        src + "_conv_head.": dst + "conv_head.",
        src + "_bn1.": dst + "bn2.",
    }
    n = 0
    for stage, depth in enumerate(_STAGE_DEPTHS):
        for i in range(depth):
            a, b = f"{src}_blocks.{n}.", f"{dst}blocks.{stage}.{i}."
            names = {"_depthwise_conv": "conv_dw", "_se_reduce": "se.conv_reduce"}
            names["_se_expand"] = "se.conv_expand"
            if stage == 0:  # no expansion: timm's DepthwiseSeparableConv
                names |= {"_bn1": "bn1", "_project_conv": "conv_pw", "_bn2": "bn2"}
            else:
                names |= {"_expand_conv": "conv_pw", "_bn0": "bn1", "_bn1": "bn2"}
                names |= {"_project_conv": "conv_pwl", "_bn2": "bn3"}
            prefixes |= {f"{a}{k}.": f"{b}{v}." for k, v in names.items()}
            n += 1
    return prefixes


@register_detector("efficientnet_b4", family="Naive")
class EfficientNetB4(TimmClassifier):
    """timm ``efficientnet_b4`` with a 2-way head (17,552,202 parameters)."""

    Config = EfficientNetB4Config
    arch = "efficientnet_b4"
    deepfakebench_name = "efficientnetb4"

    def build_backbone(self, cfg: EfficientNetB4Config) -> nn.Module:
        if cfg.variant == "paper":
            return create_timm_backbone(self.arch, cfg.pretrained, num_classes=0)
        model = create_timm_backbone(self.arch, cfg.pretrained, num_classes=0, drop_path_rate=0.2)
        return efficientnet_pytorch_numerics(model)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """efficientnet_pytorch's flat ``_blocks.N`` -> timm's ``blocks.stage.index``."""
        prefixes = efficientnet_b4_rules("backbone.efficientnet.", "backbone.")
        prefixes["backbone.last_layer."] = "head."
        return remap(state_dict, prefixes)
