"""A tiny video detector for the clip pipeline's tests (``--import tests.clip_detectors``).

It follows the video contract of ``detectors/base.py`` (``input_kind = "clip"``, a
``ClipDetectorConfig``, ``image`` [B, T, 3, H, W], one output per clip) with a 3-D convolution
(5-D weights, as I3D/FTCN have) and a frame-difference feature, so it can only score clips.
No batch norm and no dropout: runs can be compared exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors import ClipDetectorConfig, Detector, register_detector


@dataclass
class TinyClipConfig(ClipDetectorConfig):
    clip_size: int = 3
    input_size: int = 32


@register_detector("_tiny_clip", family="Video")
class TinyClip(Detector):
    """Conv3d over (T, H, W) + mean absolute frame difference -> linear."""

    Config = TinyClipConfig
    input_kind = "clip"
    test_clip_size = 3

    def __init__(self, cfg: TinyClipConfig) -> None:
        super().__init__(cfg)
        self.conv = nn.Conv3d(3, 4, kernel_size=(2, 3, 3), padding=(0, 1, 1))
        self.fc = nn.Linear(4 + 3, 2)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        x = batch["image"]
        if x.dim() != 5 or x.shape[1] != self.cfg.clip_size:
            raise ValueError(f"expected clips [B, {self.cfg.clip_size}, 3, H, W], got {x.shape}")
        motion = (x[:, 1:] - x[:, :-1]).abs().mean(dim=(1, 3, 4))  # [B, 3]
        conv = F.relu(self.conv(x.transpose(1, 2))).mean(dim=(2, 3, 4))  # [B, 4]
        feat = torch.cat([conv, motion], dim=1)
        return self.outputs(self.fc(feat), feat)
