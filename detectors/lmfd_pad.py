"""LMFD-PAD (Fang, Damer, Kirchbuchner & Kuijper, "Learnable Multi-level Frequency Decomposition
and Hierarchical Attention Mechanism for Generalized Face Presentation Attack Detection", WACV
2022), as used in the PAD fairness paper (``001_24ad1d03aa4f5e30.txt`` Sec. IV-A, IV-C).

Layer for layer as the authors' code (github.com/meilfang/LMFD-PAD, ``model/mfad.py``):

- Learnable frequency decomposition (the FAD head of F3Net): the image's 2-D DCT
  ``D x D^T`` is multiplied by four filters, each a fixed band mask on ``i + j`` (low
  ``(0, s/16]``, middle ``(s/16, s/8]``, high ``(s/8, s]``, all ``(0, s]``) plus a learnable
  ``2 * sigmoid(w) - 1`` (``w ~ N(0, 0.1)``), and each product is brought back with the inverse
  DCT: 4 bands x 3 colour channels = 12 channels at full resolution.
- Two ResNet-50 streams (frequency: first convolution widened to 12 channels; RGB), both with a
  dilated last stage (output stride 16: 14x14 at 224x224).
- Hierarchical attention fusion for the pixel-wise branch: the two streams' features are
  concatenated at three depths; the deepest (2 x 2048 ch, 1/16) passes a CBAM channel gate
  (reduction 16, avg + max pooling), the middle (after stage 2, 2 x 512 ch, 1/8) a CBAM spatial
  gate with a 5x5 kernel and the shallowest (after the stem's max pooling, 2 x 64 ch, 1/4) one
  with a 7x7 kernel; all three are resized bilinearly to 1/16, concatenated (5248 ch) and
  reduced by conv3x3(1024)-BN-ReLU-conv3x3(1)-sigmoid to the pixel-wise map.
- Binary branch: the two globally pooled 2048-d vectors concatenated, Linear(4096, 1024, no bias),
  BatchNorm1d, dropout 0.6, Linear(1024, 1, no bias).

Losses, as the authors' training script: a binary focal loss (alpha 0.5, gamma 2) on the binary
logit plus a Smooth-L1 loss between the sigmoid map and the pixel-wise target, weighted 1 for the
first four epochs and 100 afterwards. The trainer reports the epoch through :meth:`set_epoch`;
without it the full weight is used from the start. The score is the sigmoid of the binary output
(``score: binary``, the authors' inference); ``map`` and ``combined`` are options.

Pixel-wise targets follow our PAD convention (1 = attack; the authors' code uses ones for bona
fide, which is the same problem with the map flipped): ``pixel_map`` from the batch when present
(FairSWAP edits it), else all ones for attacks and zeros for bona fide.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from scipy.fft import dct
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones import create_timm_backbone
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.deeppixbis import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    Score,
    pixel_target,
    score_logits,
)
from fairforensics.detectors.registry import register_detector

log = logging.getLogger(__name__)


def dct_matrix(size: int) -> np.ndarray:
    """The orthonormal DCT-II matrix ``D`` (``D @ x`` is the DCT of the column ``x``)."""
    return dct(np.eye(size), type=2, norm="ortho", axis=0)


def band_mask(size: int, start: int, end: int) -> np.ndarray:
    """1 where ``start < i + j <= end`` on the ``size`` x ``size`` DCT grid, else 0."""
    idx = np.add.outer(np.arange(size), np.arange(size))
    return ((idx > start) & (idx <= end)).astype(np.float32)


def fad_bands(size: int) -> list[tuple[int, int]]:
    """The (start, end] diagonals of the low, middle, high and all-frequency filters."""
    return [(0, size // 16), (size // 16, size // 8), (size // 8, size), (0, size)]


class FrequencyDecomposition(nn.Module):
    """DCT -> four fixed-plus-learnable band filters -> inverse DCT: [B, 3, s, s] -> [B, 12, s, s]."""

    def __init__(self, size: int) -> None:
        super().__init__()
        mat = torch.from_numpy(dct_matrix(size)).float()
        self.register_buffer("dct", mat, persistent=False)
        bases = torch.stack([torch.from_numpy(band_mask(size, a, b)) for a, b in fad_bands(size)])
        self.register_buffer("base", bases, persistent=False)
        self.learnable = nn.Parameter(torch.empty(len(bases), size, size).normal_(0.0, 0.1))

    def filters(self) -> torch.Tensor:
        """[4, s, s] filters: base band mask + ``2 * sigmoid(w) - 1``."""
        return self.base + (2.0 * torch.sigmoid(self.learnable) - 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type=x.device.type, enabled=False):  # transforms in float32
            d = self.dct
            freq = d @ x.float() @ d.T  # [B, 3, s, s]
            bands = freq.unsqueeze(1) * self.filters()[None, :, None]  # [B, 4, 3, s, s]
            return (d.T @ bands @ d).flatten(1, 2)


class ChannelGate(nn.Module):
    """CBAM channel attention: shared MLP on global average and max pooling, sigmoid scaling."""

    def __init__(self, channels: int, reduction: int = 16) -> None:
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(channels, channels // reduction),
            nn.ReLU(),
            nn.Linear(channels // reduction, channels),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        att = self.mlp(x.mean(dim=(2, 3))) + self.mlp(x.amax(dim=(2, 3)))
        return x * torch.sigmoid(att)[:, :, None, None]


class SpatialGate(nn.Module):
    """CBAM spatial attention: conv over channel-wise max and mean, sigmoid scaling."""

    def __init__(self, kernel_size: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 1, kernel_size, padding=(kernel_size - 1) // 2, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = torch.cat([x.amax(dim=1, keepdim=True), x.mean(dim=1, keepdim=True)], dim=1)
        return x * torch.sigmoid(self.conv(pooled))


def resnet_stages(net: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """A timm ResNet's (pooled, deepest, after stage 2, after the stem) features."""
    x = net.maxpool(net.act1(net.bn1(net.conv1(x))))
    stem = x
    mid = net.layer2(net.layer1(x))
    deep = net.layer4(net.layer3(mid))
    return net.global_pool(deep), deep, mid, stem


def focal_loss(
    logit: torch.Tensor, target: torch.Tensor, alpha: float, gamma: float
) -> torch.Tensor:
    """Binary focal loss (Lin et al. 2017): ``a_t (1 - p_t)^gamma BCE``; ``alpha`` weighs class 0."""
    bce = F.binary_cross_entropy_with_logits(logit, target, reduction="none")
    a_t = torch.where(target > 0.5, 1.0 - alpha, alpha)
    return (a_t * (1.0 - torch.exp(-bce)) ** gamma * bce).mean()


@dataclass
class LMFDPADConfig(DetectorConfig):
    """Loss weights of the pixel branch: ``pixel_warmup_weight`` for the first
    ``pixel_warmup_epochs`` epochs, ``pixel_weight`` afterwards (authors' code: 1, 4, 100)."""

    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    input_size: int = 224
    backbone: str = "resnet50"
    hidden: int = 1024
    dropout: float = 0.6
    binary_loss: Literal["focal", "bce"] = "focal"
    focal_alpha: float = 0.5
    focal_gamma: float = 2.0
    pixel_loss: Literal["smooth_l1", "mse", "bce"] = "smooth_l1"
    pixel_weight: float = 100.0
    pixel_warmup_weight: float = 1.0
    pixel_warmup_epochs: int = 4
    score: Score = "binary"


@register_detector("lmfd_pad", family="PAD")
class LMFDPAD(Detector):
    """Frequency + RGB ResNet-50 streams, hierarchical attention map branch, binary branch."""

    Config = LMFDPADConfig
    requires = frozenset({"pixel_map"})

    def __init__(self, cfg: LMFDPADConfig) -> None:
        super().__init__(cfg)
        if cfg.input_size < 32:
            raise ValueError(f"lmfd_pad: model.input_size must be >= 32, got {cfg.input_size}")
        self.fad = FrequencyDecomposition(cfg.input_size)
        self.freq_encoder = create_timm_backbone(
            cfg.backbone, cfg.pretrained, num_classes=0, in_chans=12, output_stride=16
        )
        self.rgb_encoder = create_timm_backbone(
            cfg.backbone, cfg.pretrained, num_classes=0, output_stride=16
        )
        deep = 2 * self.rgb_encoder.num_features
        mid = 2 * self.rgb_encoder.layer2[-1].conv3.out_channels
        stem = 2 * self.rgb_encoder.conv1.out_channels
        self.channel_gate = ChannelGate(deep)
        self.spatial_mid = SpatialGate(5)
        self.spatial_stem = SpatialGate(7)
        self.map_head = nn.Sequential(
            nn.Conv2d(deep + mid + stem, 1024, 3, padding=1, bias=False),
            nn.BatchNorm2d(1024),
            nn.ReLU(),
            nn.Conv2d(1024, 1, 3, padding=1, bias=False),
        )
        self.linear1 = nn.Linear(deep, cfg.hidden, bias=False)
        self.bn = nn.BatchNorm1d(cfg.hidden)
        self.drop = nn.Dropout(cfg.dropout)
        self.cls = nn.Linear(cfg.hidden, 1, bias=False)
        self.epoch: int | None = None
        self._warned_epoch = False

    def set_epoch(self, epoch: int) -> None:
        """Called by the trainer at the start of every epoch (0-based) for the loss schedule."""
        self.epoch = int(epoch)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        image = batch["image"]
        if image.shape[-2:] != (self.cfg.input_size, self.cfg.input_size):
            raise ValueError(
                f"lmfd_pad: input is {tuple(image.shape[-2:])} but model.input_size is {self.cfg.input_size} "
                "(the DCT filters are sized for it); resize the input or set input_size"
            )
        f_pool, f_deep, f_mid, f_stem = resnet_stages(self.freq_encoder, self.fad(image))
        r_pool, r_deep, r_mid, r_stem = resnet_stages(self.rgb_encoder, image)
        side = tuple(f_deep.shape[-2:])
        fused = [
            self.spatial_stem(torch.cat([f_stem, r_stem], 1)),
            self.spatial_mid(torch.cat([f_mid, r_mid], 1)),
            self.channel_gate(torch.cat([f_deep, r_deep], 1)),
        ]
        fused = [F.interpolate(t, size=side, mode="bilinear", align_corners=False) for t in fused]
        map_logits = self.map_head(torch.cat(fused, 1))
        pixel_map = torch.sigmoid(map_logits)
        feat = self.bn(self.linear1(torch.cat([f_pool, r_pool], 1)))
        binary_logit = self.cls(self.drop(feat)).squeeze(1)
        logits = score_logits(pixel_map.flatten(1).mean(1), binary_logit, self.cfg.score)
        return self.outputs(
            logits, feat, map=pixel_map, map_logits=map_logits, binary_logit=binary_logit
        )

    def pixel_loss_weight(self) -> float:
        """The pixel loss weight for the current epoch (see :meth:`set_epoch`)."""
        if self.epoch is None:
            if self.training and not self._warned_epoch:
                log.warning(
                    "lmfd_pad: set_epoch() was never called; the pixel-loss warm-up is skipped"
                )
                self._warned_epoch = True
            return self.cfg.pixel_weight
        return (
            self.cfg.pixel_warmup_weight
            if self.epoch < self.cfg.pixel_warmup_epochs
            else self.cfg.pixel_weight
        )

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Binary focal (or BCE) loss + weighted pixel-wise Smooth-L1 (or MSE / BCE) loss."""
        label = batch["label"].float()
        logit = out["binary_logit"].float()
        if self.cfg.binary_loss == "focal":
            binary = focal_loss(logit, label, self.cfg.focal_alpha, self.cfg.focal_gamma)
        else:
            binary = F.binary_cross_entropy_with_logits(logit, label)
        pixel_map = out["map"].float()
        target = pixel_target(batch, tuple(pixel_map.shape[-2:]))
        if self.cfg.pixel_loss == "smooth_l1":
            pixel = F.smooth_l1_loss(pixel_map, target)
        elif self.cfg.pixel_loss == "mse":
            pixel = F.mse_loss(pixel_map, target)
        else:
            pixel = F.binary_cross_entropy_with_logits(out["map_logits"].float(), target)
        total = binary + self.pixel_loss_weight() * pixel
        return {"total": total, "binary": binary, "pixel": pixel}
