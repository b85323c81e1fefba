"""SIA: self-information attention (Sun et al., ECCV 2022), DeepfakeBench v2's ``sia_detector.py``.

An EfficientNet-B4 (efficientnet_pytorch numerics, :mod:`detectors.dfb_efficientnet`) whose blocks
are run one by one, with a parameter-free self-information attention (SAIA) after blocks 5, 9 and
21: the intra-feature distance ``|9 x - box3x3(x)|`` plus half the inter-feature distance to the
next channels measure how informative each position is; a spatial gate ``1 + sigmoid(a / 2 mean(a))``
and a channel gate ``1 + mean(-log(exp(-a / 2 mean(a)) + 0.1))`` rescale the features. Two
residual paths carry the first attention map forward (1x1 conv + BN + ReLU, adaptive max pooling
to the later resolution). Then the remaining blocks, the head (+ Swish) and a linear 2-way layer on
the pooled 1792-d features; cross-entropy loss (DeepfakeBench's).

SAIA normalises by a mean of the attention: by default each sample's own mean, so that a face's
score does not depend on the faces batched with it. DeepfakeBench takes the mean over the **whole
batch tensor**, so there a sample's score depends on the other samples of its batch;
``batch_coupled_attention: true`` reproduces that (the parity tests use it; docs/detectors.md says
what DeepfakeBench's published numbers were computed with). With one sample per batch both are the
same model. The attention is computed without gradient (``torch.no_grad``), as there.
DeepfakeBench builds its blocks without drop-connect here (``block(x)``), and so do we.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_efficientnet import (
    BLOCK_CHANNELS,
    HEAD_CHANNELS,
    backbone_rules,
    build_efficientnet_b4,
    head,
    run_blocks,
    stem,
)
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector

#: DeepfakeBench's SAIA modules: its ``att{i}conv`` acts on the output of block ``SAIA_BLOCKS[i]``.
SAIA_BLOCKS = {"att1conv": 5, "att2conv": 9, "att4conv": 21}
#: SAIA modules DeepfakeBench builds but never calls, and its unused ``linear`` head.
_UNUSED = ("att0conv.", "att3conv.", "att5conv.", "att6conv.", "linear.")
CHANNEL_RANGE = 5
BAND_WIDTH = 1.0


def saia(x: torch.Tensor, batch_coupled: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """DeepfakeBench's ``SAIA_conv(isspace=True, ischannel=True)``: (attended x, spatial map).

    The attention is normalised by each sample's mean, or with ``batch_coupled`` by the mean over
    the whole batch (DeepfakeBench's)."""
    b, c, h, w = x.shape
    with torch.no_grad():
        ones = torch.ones(c, 1, 3, 3, dtype=x.dtype, device=x.device)
        intra = (9.0 * x - F.conv2d(x, ones, padding=1, groups=c)).abs()
        shifted = torch.cat([x, x[:, : CHANNEL_RANGE + 1]], dim=1)
        diffs = torch.cat([x - shifted[:, i : c + i] for i in range(1, CHANNEL_RANGE + 1)], dim=1)
        # DeepfakeBench sums groups of 5 consecutive channels of the concatenated differences
        inter = diffs.view(b, c, CHANNEL_RANGE, h, w).sum(dim=2).abs()
        att = intra + 0.5 * inter
        mean = att.mean() if batch_coupled else att.mean(dim=(1, 2, 3), keepdim=True)
        scale = mean * 2 * BAND_WIDTH**2
        channel = -torch.log(torch.exp(-att / scale) + 0.1)
        channel = channel.view(b, c, -1).mean(dim=2).view(b, c, 1, 1) + 1
        space = att / scale
    return (torch.sigmoid(space) + 1) * x * channel, space


def _conv_bn_relu(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


@dataclass
class SIAConfig(DetectorConfig):
    """SIA has no variant: DeepfakeBench's model is the paper's (mean = std = 0.5).
    ``batch_coupled_attention``: normalise SAIA by the mean over the whole batch, as DeepfakeBench
    does (a face's score then depends on its batch-mates); ``false`` (default): by each face's own
    mean."""

    batch_coupled_attention: bool = False


@register_detector("sia", family="Spatial")
class SIA(Detector):
    """EfficientNet-B4 + three SAIA attentions + Linear(1792, 2) (17,569,202 parameters)."""

    Config = SIAConfig
    deepfakebench_name = "sia"
    test_input_size = 32

    def __init__(self, cfg: SIAConfig) -> None:
        super().__init__(cfg)
        self.backbone = build_efficientnet_b4(cfg.pretrained, drop_connect=0.0)
        c5, c9, c21 = (BLOCK_CHANNELS[i] for i in SAIA_BLOCKS.values())
        self.conv1 = _conv_bn_relu(c5, c9)
        self.conv2 = _conv_bn_relu(c5, c21)
        self.conv3 = _conv_bn_relu(c9, c21)
        self.head = nn.Linear(HEAD_CHANNELS, 2)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        net = self.backbone
        x = run_blocks(net, stem(net, batch["image"]), 0, 6)
        coupled = self.cfg.batch_coupled_attention
        x, att1 = saia(x, coupled)
        x = run_blocks(net, x, 6, 10)
        res12 = F.adaptive_max_pool2d(self.conv1(att1), x.shape[-2:])
        x, att2 = saia(x + res12, coupled)
        x = run_blocks(net, x, 10, 22)
        res14 = F.adaptive_max_pool2d(self.conv2(att1), x.shape[-2:])
        res24 = F.adaptive_max_pool2d(self.conv3(att2), x.shape[-2:])
        x, _ = saia(x + res24 + res14, coupled)
        fmap = head(net, run_blocks(net, x, 22, 32))
        feat = fmap.mean(dim=(2, 3))
        return self.outputs(self.head(feat), feat, feature_map=fmap)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """``backbone.efficientnet.*`` -> timm's names, ``backbone.last_layer`` -> ``head``;
        ``conv1``-``conv3`` keep their names. The SAIA kernels (``att*conv.weight``: ones,
        ``.weight2``: 9s, frozen) are constants computed here: a file whose kernels differ is
        refused; the unused ``att0/3/5/6conv`` and ``linear`` are dropped."""
        for key, value in state_dict.items():
            if key.startswith("att") and key.endswith((".weight", ".weight2")):
                const = 1.0 if key.endswith(".weight") else 9.0
                if not torch.equal(value, torch.full_like(value, const)):
                    raise KeyError(
                        f"{key} is not DeepfakeBench's constant SAIA kernel ({const:g}s)"
                    )
        used = tuple(f"{name}." for name in SAIA_BLOCKS)
        rules = backbone_rules("backbone.", "backbone.") | {"backbone.last_layer.": "head."}
        rules |= {f"conv{i}.": f"conv{i}." for i in (1, 2, 3)}
        return remap(state_dict, rules, drop=(*_UNUSED, *used))
