"""Xception (Chollet, CVPR 2017) from timm's ``legacy_xception``, split into its flows.

Two-stream detectors (F3Net, SRM) run two Xceptions stage by stage and mix their features
between stages; :data:`STAGES` names the stages the way DeepfakeBench's ``fea_part*`` do:
``stem1`` (conv1, 3x3 stride 2), ``stem2`` (conv2), ``entry`` (blocks 1-3, 728 channels at 1/16
resolution), ``middle1`` (blocks 4-7), ``middle2`` (blocks 8-11), ``exit1`` (block 12, 1024 channels at 1/32)
and ``exit2`` (the two separable convolutions, 2048 channels, ReLU).
"""

from __future__ import annotations

import torch
from torch import nn

from fairforensics.detectors.backbones import create_timm_backbone

STAGES: dict[str, tuple[str, ...]] = {
    "stem1": ("conv1", "bn1", "act1"),
    "stem2": ("conv2", "bn2", "act2"),
    "entry": ("block1", "block2", "block3"),
    "middle1": ("block4", "block5", "block6", "block7"),
    "middle2": ("block8", "block9", "block10", "block11"),
    "exit1": ("block12",),
    "exit2": ("conv3", "bn3", "act3", "conv4", "bn4", "act4"),
}
FEATURES = 2048


def entry_side(side: int, first_stride: int = 2) -> int:
    """Side of the entry-flow output for a ``side`` input (conv1 3x3 with ``first_stride``, conv2
    3x3, both unpadded, then three stride-2 blocks)."""
    side = (side - 3) // first_stride + 1 - 2
    for _ in range(3):
        side = (side + 1) // 2
    return side


def create_xception(pretrained: bool | str = False) -> nn.Module:
    """timm ``legacy_xception`` without its classifier (``fc`` is an identity)."""
    return create_timm_backbone("legacy_xception", pretrained, num_classes=0)


def run_stage(model: nn.Module, stage: str, x: torch.Tensor) -> torch.Tensor:
    """Apply the layers of one named stage of a ``legacy_xception``."""
    for name in STAGES[stage]:
        x = getattr(model, name)(x)
    return x


def widen_first_conv(model: nn.Module, in_chans: int, stride: int = 2, mode: str = "mean") -> None:
    """Replace ``conv1`` by one with ``in_chans`` inputs initialised from the RGB kernels.

    ``mode="mean"`` copies the RGB-averaged kernel into every input channel (SPSL in
    DeepfakeBench); ``mode="split"`` tiles the RGB kernel over groups of three channels and
    divides it by the number of groups (F3Net), so a constant input keeps its response.
    """
    old = model.conv1.weight.data
    conv = nn.Conv2d(in_chans, old.shape[0], 3, stride, 0, bias=False)
    with torch.no_grad():
        if mode == "mean":
            conv.weight.copy_(old.mean(dim=1, keepdim=True).repeat(1, in_chans, 1, 1))
        elif mode == "split":
            if in_chans % old.shape[1]:
                raise ValueError(
                    f"mode 'split' needs a multiple of {old.shape[1]} channels, got {in_chans}"
                )
            groups = in_chans // old.shape[1]
            conv.weight.copy_(old.repeat(1, groups, 1, 1) / groups)
        else:
            raise ValueError(f"unknown widen mode {mode!r}; use 'mean' or 'split'")
    model.conv1 = conv
