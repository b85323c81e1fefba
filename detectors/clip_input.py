"""The input check every video detector shares: clips of exactly ``clip_size`` frames."""

from __future__ import annotations

import torch

from fairforensics.detectors.base import ClipDetectorConfig


def check_clip(x: torch.Tensor, cfg: ClipDetectorConfig) -> torch.Tensor:
    """``x`` when it is a batch of clips [B, clip_size, 3, H, W]; else a one-line ``ValueError``."""
    if x.dim() != 5 or x.shape[1] != cfg.clip_size or x.shape[2] != 3:
        raise ValueError(
            f"expected clips [B, {cfg.clip_size}, 3, H, W] (clip_size {cfg.clip_size}), got "
            f"{list(x.shape)}; a video detector takes clips of its config's clip_size frames"
        )
    return x
