"""FFD (Dang et al., "On the Detection of Digital Face Manipulation", CVPR 2020).

Xception with the *direct regression* attention-based layer (Sec. 3.2): a separable 3x3
convolution from the 728-channel feature map ``F`` to one channel and a sigmoid give the
attention map ``M_att``; the rest of the network sees ``F * M_att``. The paper inserts the layer
after Xception's Block 4 (``map_after``; DeepfakeBench uses block 7). Loss (Sec. 3.3):
cross-entropy plus ``map_weight`` times the map loss:

* supervised, for faces with a ground-truth manipulation mask (and every real face, whose mask
  is all zeros): ``L1(M_att, M_gt)`` with ``M_gt`` area-averaged to the map size;
* weakly supervised, for fakes without a mask (``has_mask`` false): the map must fire somewhere,
  ``|max(M_att) - 1|``.

So FFD trains on datasets with or without masks (then real faces still get zero maps).

Variants (``model.variant``): ``paper`` is the above. ``deepfakebench`` (default) is DeepfakeBench's
``ffd_detector.py``: the same layer after block 7 (its YAML sets ``map_after: 7``) and a plain
cross-entropy loss (the map gets no supervision and no mask is read). Its checkpoints load through
:meth:`FFD.map_deepfakebench_state_dict`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones.xception import FEATURES, create_xception
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_keys import remap_xception_detector
from fairforensics.detectors.registry import register_detector

_STEM = ("conv1", "bn1", "act1", "conv2", "bn2", "act2")  # timm legacy_xception layer names
_BLOCKS = tuple(f"block{i}" for i in range(1, 13))
_EXIT = ("conv3", "bn3", "act3", "conv4", "bn4", "act4")


@dataclass
class FFDConfig(DetectorConfig):
    """``map_after``: the Xception block (3-11) after which the attention map is applied
    (DeepfakeBench's, the default variant's: 7; the paper's: 4)."""

    map_after: int = 7
    map_weight: float = 1.0
    variant: Literal["deepfakebench", "paper"] = "deepfakebench"

    def __post_init__(self) -> None:
        if not 3 <= self.map_after <= 11:
            raise ValueError(
                f"map_after must be an Xception block with 728 channels (3..11), got {self.map_after}"
            )
        if self.map_weight < 0:
            raise ValueError(f"map_weight must be >= 0, got {self.map_weight}")


class RegressionMap(nn.Module):
    """Direct-regression attention: separable 3x3 conv (728 -> 1, no bias) and a sigmoid."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        separable = importlib.import_module("timm.models.xception").SeparableConv2d
        self.conv = separable(channels, 1, 3, stride=1, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.conv(x))


@register_detector("ffd", family="Spatial")
class FFD(Detector):
    """Xception + direct-regression attention map, supervised by manipulation masks."""

    Config = FFDConfig
    requires = frozenset({"mask"})
    deepfakebench_name = "ffd"

    def __init__(self, cfg: FFDConfig) -> None:
        super().__init__(cfg)
        if cfg.variant == "deepfakebench":
            self.requires = frozenset()
        self.backbone = create_xception(cfg.pretrained)
        self.map = RegressionMap(728)
        self.head = nn.Linear(FEATURES, 2)
        self._before = _STEM + _BLOCKS[: cfg.map_after]
        self._after = _BLOCKS[cfg.map_after :] + _EXIT

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        x = batch["image"]
        for name in self._before:
            x = getattr(self.backbone, name)(x)
        att = self.map(x)
        x = x * att
        for name in self._after:
            x = getattr(self.backbone, name)(x)
        feat = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.outputs(self.head(feat), feat, map=att)

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """CE + ``map_weight`` * (L1 to the mask where there is one, weak loss for maskless fakes);
        CE alone for the ``deepfakebench`` variant."""
        label = batch["label"]
        ce = F.cross_entropy(out["logits"], label)
        if self.cfg.variant == "deepfakebench":
            return {"total": ce, "ce": ce}
        att = out["map"].float()
        n = att.shape[0]
        mask = batch.get("mask")
        has_mask = batch.get("has_mask")
        if has_mask is None:
            has_mask = (
                torch.zeros(n, dtype=torch.bool, device=att.device)
                if mask is None
                else torch.ones(n, dtype=torch.bool, device=att.device)
            )
        supervised = has_mask.to(att.device).bool() | (label == 0)
        per_sample = torch.zeros(n, device=att.device)
        if supervised.any():
            if mask is None:
                target = torch.zeros_like(att)
            else:
                target = F.adaptive_avg_pool2d(mask.to(att.device).float(), att.shape[-2:])
                target = torch.where(
                    (label == 0).view(-1, 1, 1, 1), torch.zeros_like(target), target
                )
            per_sample = torch.where(
                supervised, (att - target).abs().mean(dim=(1, 2, 3)), per_sample
            )
        weak = ~supervised
        if weak.any():
            per_sample = torch.where(weak, (att.amax(dim=(1, 2, 3)) - 1.0).abs(), per_sample)
        map_loss = per_sample.mean()
        return {"total": ce + self.cfg.map_weight * map_loss, "ce": ce, "map": map_loss}

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        return remap_xception_detector(state_dict, [("map.c.", "map.conv.")])
