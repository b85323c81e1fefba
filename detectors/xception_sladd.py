"""DeepfakeBench's ``Xception_SLADD`` (``training/networks/xception_sladd.py``), shared by SLADD and
PCL-I2G, on timm's ``legacy_xception``.

It is Xception (the same layer names and function as DeepfakeBench's ``xception``) whose
``features`` also return the 728-channel map after block 7 (the end of the first half of the
middle flow, 16 x 16 at 256 x 256), which the auxiliary heads read, and whose ``feat`` is the
2048-channel map *before* the final ReLU (its ReLU is not in place). The classifier applies the
ReLU, averages and a linear layer (``last_linear``, our ``head``). :class:`RegressionMap` is its
forgery-map head (a separable 3 x 3 convolution 728 -> 1 and a sigmoid).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones.xception import FEATURES, create_xception, run_stage
from fairforensics.detectors.base import Detector, DetectorConfig

MIDDLE = 728


def xception_features(model: nn.Module, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(the 2048-channel map before the final ReLU, the 728-channel map after block 7)."""
    x = run_stage(model, "entry", run_stage(model, "stem2", run_stage(model, "stem1", image)))
    middle = run_stage(model, "middle1", x)
    x = run_stage(model, "exit1", run_stage(model, "middle2", middle))
    x = model.bn4(model.conv4(model.act3(model.bn3(model.conv3(x)))))
    return x, middle


class SeparableConv2d(nn.Module):
    """Depthwise ``conv1`` (k x k) then ``pointwise`` 1 x 1, no biases (DeepfakeBench's names)."""

    def __init__(self, cin: int, cout: int, kernel: int = 3, padding: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cin, kernel, 1, padding, groups=cin, bias=False)
        self.pointwise = nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise(self.conv1(x))


class RegressionMap(nn.Module):
    """SLADD's forgery map: sigmoid of a separable 3 x 3 convolution ``cin`` -> 1 (``c``)."""

    def __init__(self, cin: int = MIDDLE) -> None:
        super().__init__()
        self.c = SeparableConv2d(cin, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.c(x))


class XceptionSLADDBase(Detector):
    """Xception + ``Linear(2048, 2)``; ``features`` gives the pre-ReLU map and the block-7 map."""

    def __init__(self, cfg: DetectorConfig) -> None:
        super().__init__(cfg)
        self.backbone = create_xception(cfg.pretrained)
        self.head = nn.Linear(FEATURES, 2)

    def features(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return xception_features(self.backbone, image)

    def classify(self, feat_map: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits, pooled features) from the pre-ReLU map: ReLU, average, ``head``."""
        pooled = F.adaptive_avg_pool2d(F.relu(feat_map), 1).flatten(1)
        return self.head(pooled), pooled
