"""DeepPixBiS (George & Marcel, "Deep Pixel-wise Binary Supervision for Face Presentation Attack
Detection", ICB 2019), as used in the PAD fairness paper (``001_24ad1d03aa4f5e30.txt`` IV-A, IV-C).

Architecture (paper Sec. 3 and the authors' ``bob.learn.pytorch`` code): the first eight blocks of
DenseNet-161 (stem, dense block 1, transition 1, dense block 2, transition 2; 384 channels at
1/16 of the input, 14x14 at 224x224), a 1x1 convolution to a one-channel map with a sigmoid (the
pixel-wise output) and a linear layer from the flattened sigmoid map to one binary output.
Loss: ``0.5 * BCE(map, pixel target) + 0.5 * BCE(binary, label)``. The score at test time is the
mean of the map (``score: map``, the paper's choice); ``binary`` and ``combined`` (their average)
are the other scoring methods of the authors' code.

Pixel-wise targets (PAD convention: 1 = attack): the batch key ``pixel_map`` when present (the map
FairSWAP edits, any resolution, area-resampled to the output map), otherwise all ones for attacks
and all zeros for bona fide, derived from ``label``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones import create_timm_backbone
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.registry import register_detector

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
Score = Literal["map", "binary", "combined"]


def pixel_target(batch: dict[str, Any], size: tuple[int, int]) -> torch.Tensor:
    """The pixel-wise target [B, 1, h, w] at ``size``: ``batch['pixel_map']`` area-resampled when
    the batch has it, else the label broadcast (all ones for attacks, zeros for bona fide)."""
    label = batch["label"]
    n = label.shape[0]
    pixel_map = batch.get("pixel_map")
    if pixel_map is None:
        return label.float().view(n, 1, 1, 1).expand(n, 1, *size)
    target = torch.as_tensor(pixel_map)
    if target.ndim == 3:
        target = target.unsqueeze(1)
    if target.ndim != 4 or target.shape[0] != n or target.shape[1] != 1:
        raise ValueError(
            f"batch key 'pixel_map' must be [B, 1, h, w] or [B, h, w] with B={n}, got {tuple(target.shape)}"
        )
    target = target.to(device=label.device, dtype=torch.float32)
    if not bool(((target >= 0) & (target <= 1)).all()):
        raise ValueError("batch key 'pixel_map' must hold values in [0, 1]")
    if tuple(target.shape[-2:]) != tuple(size):
        target = F.adaptive_avg_pool2d(target, size)
    return target


def score_logits(map_mean: torch.Tensor, binary_logit: torch.Tensor, score: Score) -> torch.Tensor:
    """[B, 2] logits whose softmax gives the configured attack score as class 1."""
    if score == "binary":
        z = binary_logit
    else:
        p = map_mean if score == "map" else 0.5 * (map_mean + torch.sigmoid(binary_logit))
        z = torch.logit(p.float(), eps=1e-6)
    z = z.float().unsqueeze(1)
    return torch.cat([torch.zeros_like(z), z], dim=1)


def densenet_map_side(size: int) -> int:
    """Side of the DenseNet stem + two transitions output for an input side ``size``."""
    side = -(-size // 2)  # conv0: k7 s2 p3
    side = -(-side // 2)  # pool0: k3 s2 p1
    return side // 2 // 2  # transition1, transition2: avg-pool 2


@dataclass
class DeepPixBisConfig(DetectorConfig):
    """``pixel_weight``: weight of the pixel-wise BCE (the binary BCE gets ``1 - pixel_weight``)."""

    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    input_size: int = 224
    backbone: str = "densenet161"
    pixel_weight: float = 0.5
    score: Score = "map"


@register_detector("deeppixbis", family="PAD")
class DeepPixBis(Detector):
    """DenseNet-161 blocks 1-2, 1x1 conv to a sigmoid map, linear binary head on the map."""

    Config = DeepPixBisConfig
    requires = frozenset({"pixel_map"})

    def __init__(self, cfg: DeepPixBisConfig) -> None:
        super().__init__(cfg)
        if not 0.0 <= cfg.pixel_weight <= 1.0:
            raise ValueError(
                f"deeppixbis: model.pixel_weight must be in [0, 1], got {cfg.pixel_weight}"
            )
        self.map_side = densenet_map_side(cfg.input_size)
        if self.map_side < 1:
            raise ValueError(
                f"deeppixbis: model.input_size {cfg.input_size} is too small (needs >= 16)"
            )
        features = getattr(create_timm_backbone(cfg.backbone, cfg.pretrained), "features", None)
        names = (
            [name for name, _ in features.named_children()]
            if isinstance(features, nn.Sequential)
            else []
        )
        if "transition2" not in names:
            raise ValueError(
                f"deeppixbis: backbone {cfg.backbone!r} has no 'transition2' block (a DenseNet is needed)"
            )
        self.encoder = features[: names.index("transition2") + 1]
        channels = self.encoder.transition2.conv.out_channels
        self.dec = nn.Conv2d(channels, 1, kernel_size=1)
        self.linear = nn.Linear(self.map_side * self.map_side, 1)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        image = batch["image"]
        enc = self.encoder(image)
        if enc.shape[-2:] != (self.map_side, self.map_side):
            raise ValueError(
                f"deeppixbis: input is {tuple(image.shape[-2:])} but model.input_size is {self.cfg.input_size} "
                f"(the linear head takes a {self.map_side}x{self.map_side} map); resize the input or set input_size"
            )
        map_logits = self.dec(enc)
        pixel_map = torch.sigmoid(map_logits)
        binary_logit = self.linear(pixel_map.flatten(1)).squeeze(1)
        logits = score_logits(pixel_map.flatten(1).mean(1), binary_logit, self.cfg.score)
        feat = F.adaptive_avg_pool2d(enc, 1).flatten(1)
        return self.outputs(
            logits, feat, map=pixel_map, map_logits=map_logits, binary_logit=binary_logit
        )

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``w * pixel BCE + (1 - w) * binary BCE`` with w = ``pixel_weight`` (0.5 in the paper)."""
        map_logits = out["map_logits"].float()
        target = pixel_target(batch, tuple(map_logits.shape[-2:]))
        pixel = F.binary_cross_entropy_with_logits(map_logits, target)
        binary = F.binary_cross_entropy_with_logits(
            out["binary_logit"].float(), batch["label"].float()
        )
        w = self.cfg.pixel_weight
        return {"total": w * pixel + (1.0 - w) * binary, "pixel_bce": pixel, "binary_bce": binary}
