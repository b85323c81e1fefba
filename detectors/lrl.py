"""Local-relation learning (Chen et al., AAAI 2021), DeepfakeBench v2's ``lrl_detector.py``.

Two EfficientNet-B4 encoders (efficientnet_pytorch numerics, drop-connect 0.2;
:mod:`detectors.dfb_efficientnet`): one on the RGB face, one on ``idct``, the face's high-frequency
component (grey image, DCT, coefficients with ``row + col < 0.33 * size`` removed, inverse DCT,
scaled as ``(v / 255 - 0.5) / 0.5``; the one-channel encoder's stem takes it). After blocks 0-9,
10-21 and 22-31 + head, an RGB-frequency attention module (RFAM: 1x1 conv + BN + ReLU, 3x3 conv,
two sigmoid maps) gates both streams, and their sums at the three depths are stacked at the
deepest resolution into a 2008-channel map. Its 2x2 patches (16 at 256 px) are compared by
cosine similarity, ``(s + 1) / 2``; the off-diagonal similarities (240) go to an MLP classifier.
A decoder (4 x [2x nearest upsampling, 3x3 conv, InstanceNorm, ReLU, 3x3 conv, InstanceNorm,
ReLU], 2x bilinear) and a 1x1 convolution predict the manipulation mask.

Loss (DeepfakeBench's, the paper's terms with unit weights): CE + MSE between the predicted
similarities and the mask's (``1 - |r_i - r_j|``, ``r`` = manipulated share of each patch) +
BCE between the predicted and true masks (zeros for real faces and for fakes without a mask, as
DeepfakeBench's data set gives them); the BCE is computed from the mask logits (the same value,
stable under AMP).

``idct`` comes from the batch when present (DeepfakeBench's data set computes it with OpenCV from the
augmented uint8 image); otherwise it is derived here from ``image`` on the device with the same
recipe (:class:`HighPassIDCT`), so every pipeline that gives images (evaluation, FairSWAP,
metamorphic testing) gives LRL a matching ``idct``. The patch grid follows the input size: (size /
64)^2 patches, so the classifier width depends on ``input_size`` (a multiple of 64; 256 in
DeepfakeBench).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
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

#: Where the encoders are split (efficientnet_pytorch's flat block index), as DeepfakeBench's
#: ``block_part1/2/3``; the fused map's channels are the sums at the three depths.
SPLITS = ((0, 10), (10, 22), (22, 32))
FUSED_CHANNELS = BLOCK_CHANNELS[9] + BLOCK_CHANNELS[21] + HEAD_CHANNELS  # 56 + 160 + 1792
DECODER_FILTERS = (64, 128, 256, 256)
#: cv2.COLOR_RGB2GRAY on uint8: fixed-point weights with a 14-bit shift.
_GRAY_WEIGHTS = (4899, 9617, 1868)
_GRAY_SHIFT = 14


@cache
def _dct_matrix(n: int) -> torch.Tensor:
    """Orthonormal DCT-II matrix [n, n] (float64), the transform of ``cv2.dct``."""
    k = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(n, dtype=torch.float64)[None, :]
    mat = torch.cos(math.pi * (2 * i + 1) * k / (2 * n)) * math.sqrt(2.0 / n)
    mat[0] /= math.sqrt(2.0)
    return mat


class HighPassIDCT(nn.Module):
    """DeepfakeBench's ``LRLDataset.image2dct`` on a normalised batch [B, 3, H, W] -> [B, 1, H, W].

    The image is brought back to uint8 RGB (``mean``/``std``), converted to grey as OpenCV does,
    transformed by the 2-D DCT, the coefficients with ``(W / H) * row + col < cutoff * W`` are
    set to 0, and the inverse DCT is scaled as ``(v / 255 - 0.5) / 0.5``.
    """

    def __init__(
        self, mean: tuple[float, ...], std: tuple[float, ...], cutoff: float = 0.33
    ) -> None:
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1), persistent=False)
        self.cutoff = cutoff

    @torch.no_grad()
    def gray(self, image: torch.Tensor) -> torch.Tensor:
        """[B, H, W] grey levels of the uint8 image behind ``image``, as OpenCV 4 computes them
        (``COLOR_RGB2GRAY``: 14-bit fixed-point weights; DeepfakeBench pins opencv-python 4.6;
        OpenCV 5 uses 15-bit weights, one level apart on about 0.03 % of pixels)."""
        std, mean = self.std.float(), self.mean.float()  # float32 in a float64 model too
        rgb = torch.round((image.float() * std + mean) * 255).clamp(0, 255)
        weights = torch.tensor(_GRAY_WEIGHTS, device=image.device, dtype=torch.float32)
        gray = torch.einsum("bchw,c->bhw", rgb, weights) + 2 ** (_GRAY_SHIFT - 1)
        return torch.floor(gray / 2**_GRAY_SHIFT)  # exact: every value is an integer < 2**24

    @torch.no_grad()
    def from_gray(self, gray: torch.Tensor) -> torch.Tensor:
        """High-pass IDCT [B, 1, H, W] of grey images [B, H, W], scaled to about [-1, 1]."""
        h, w = gray.shape[-2:]
        dh = _dct_matrix(h).to(gray.device, torch.float32)
        dw = _dct_matrix(w).to(gray.device, torch.float32)
        rows = torch.arange(h, device=gray.device)[:, None] * (w / h)
        keep = (rows + torch.arange(w, device=gray.device)[None, :]) >= self.cutoff * w
        coeffs = dh @ gray.float() @ dw.T * keep
        return ((dh.T @ coeffs @ dw) / 255 - 0.5).div(0.5).unsqueeze(1)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        with torch.autocast(image.device.type, enabled=False):  # float32 DCTs under AMP too
            return self.from_gray(self.gray(image))


class RFAM(nn.Module):
    """RGB-frequency attention module: two sigmoid gates from the concatenated streams."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.attention = nn.Sequential(
            nn.Conv2d(2 * c, c, 1),
            nn.BatchNorm2d(c),
            nn.ReLU(),
            nn.Conv2d(c, 2, 3, padding=1),
            nn.Sigmoid(),
        )

    def forward(self, rgb: torch.Tensor, freq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        gates = self.attention(torch.cat([rgb, freq], dim=1))
        return rgb * gates[:, 0:1], freq * gates[:, 1:2]


class _UpBlock(nn.Module):
    """DeepfakeBench's ``DecoderBlock``: 2x nearest upsampling, 3x3 conv, InstanceNorm, ReLU."""

    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.layer = nn.Sequential(
            nn.Upsample(scale_factor=2),
            nn.Conv2d(cin, cout, 3, padding=1),
            nn.InstanceNorm2d(cout),
            nn.ReLU(inplace=True),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


class _Bottleneck(nn.Module):
    """DeepfakeBench's ``ConcatBottleneck`` without a skip input: 3x3 conv, InstanceNorm, ReLU."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.seq = nn.Sequential(
            nn.Conv2d(c, c, 3, padding=1), nn.InstanceNorm2d(c), nn.ReLU(inplace=True)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.seq(x)


class Decoder(nn.Module):
    """Mask decoder: 2008 -> 256 -> 256 -> 128 -> 64 channels, 2x per stage, then 2x bilinear."""

    def __init__(self) -> None:
        super().__init__()
        f = DECODER_FILTERS
        ins = (*f[1:], FUSED_CHANNELS)
        self.decoder_stages = nn.ModuleList(_UpBlock(ins[i], f[i]) for i in range(len(f)))
        self.bottlenecks = nn.ModuleList(_Bottleneck(c) for c in reversed(f))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, bottleneck in enumerate(self.bottlenecks):
            x = bottleneck(self.decoder_stages[-(i + 1)](x))
        return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)


@dataclass
class LRLConfig(DetectorConfig):
    """``idct_cutoff``: the DCT high-pass cut-off (DeepfakeBench's ``r2`` = 0.33); ``sim_weight``,
    ``seg_weight``: weights of the similarity MSE and the mask BCE (1 and 1)."""

    idct_cutoff: float = 0.33
    dropout: float = 0.2
    sim_weight: float = 1.0
    seg_weight: float = 1.0

    def __post_init__(self) -> None:
        if self.input_size % 64 or self.input_size < 128:
            raise ValueError(
                f"input_size must be a multiple of 64 and >= 128 (2x2 patches of the 1/32 map), "
                f"got {self.input_size}"
            )
        if not 0 <= self.idct_cutoff <= 2:
            raise ValueError(f"idct_cutoff must be in [0, 2], got {self.idct_cutoff}")


@register_detector("lrl", family="Spatial")
class LocalRelation(Detector):
    """2x EfficientNet-B4 + RFAM fusion + patch-similarity classifier + mask decoder
    (48,599,984 parameters at 256 px)."""

    Config = LRLConfig
    requires = frozenset({"mask"})
    deepfakebench_name = "lrl"
    test_input_size = 128

    def __init__(self, cfg: LRLConfig) -> None:
        super().__init__(cfg)
        self.encoder_rgb = build_efficientnet_b4(cfg.pretrained)
        self.encoder_idct = build_efficientnet_b4(cfg.pretrained, in_chans=1)
        self.idct = HighPassIDCT(cfg.mean, cfg.std, cfg.idct_cutoff)
        self.rfam1, self.rfam2, self.rfam3 = (
            RFAM(c) for c in (BLOCK_CHANNELS[9], BLOCK_CHANNELS[21], HEAD_CHANNELS)
        )
        self.decoder = Decoder()
        self.final = nn.Conv2d(DECODER_FILTERS[0], 1, 1, bias=False)
        k = (cfg.input_size // 64) ** 2  # 2x2 patches of the 1/32 map
        self.overall_classifier = nn.Sequential(
            nn.Linear(k * (k - 1), 128), nn.ReLU(), nn.Dropout(cfg.dropout), nn.Linear(128, 2)
        )

    def fused_map(self, image: torch.Tensor, idct: torch.Tensor) -> torch.Tensor:
        """The 2008-channel map: RFAM-gated RGB + frequency sums at three depths, stacked at the
        deepest resolution (nearest downsampling by 4 and 2, as DeepfakeBench)."""
        rgb_net, freq_net = self.encoder_rgb, self.encoder_idct
        rgb, freq, sums = stem(rgb_net, image), stem(freq_net, idct), []
        for (start, stop), rfam in zip(SPLITS, (self.rfam1, self.rfam2, self.rfam3), strict=True):
            rgb, freq = (
                run_blocks(rgb_net, rgb, start, stop),
                run_blocks(freq_net, freq, start, stop),
            )
            if stop == 32:
                rgb, freq = head(rgb_net, rgb), head(freq_net, freq)
            rgb, freq = rfam(rgb, freq)
            sums.append(rgb + freq)
        low, mid, high = sums
        low = F.interpolate(low, scale_factor=0.25, mode="nearest")
        mid = F.interpolate(mid, scale_factor=0.5, mode="nearest")
        return torch.cat([low, mid, high], dim=1)

    @staticmethod
    def patch_similarity(fmap: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(off-diagonal similarities [B, K(K-1)], similarity matrix [B, K, K]) of the map's
        2x2 patches (K of them, row-major), ``(cos + 1) / 2``."""
        w = F.unfold(fmap, kernel_size=2, stride=2).transpose(1, 2)  # [B, K, 4C]
        w = w / (w * w).sum(dim=2, keepdim=True).sqrt()
        sim = (torch.bmm(w, w.transpose(1, 2)) + 1) / 2
        b, k, _ = sim.shape
        off = ~torch.eye(k, dtype=torch.bool, device=sim.device)
        return sim[:, off].view(b, k * (k - 1)), sim

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        image = batch["image"]
        size = self.cfg.input_size
        if tuple(image.shape[-2:]) != (size, size):
            raise ValueError(
                f"lrl is built for {size}x{size} inputs (its classifier width depends on it), "
                f"got {tuple(image.shape[-2:])}; set the model's input_size"
            )
        idct = batch.get("idct")
        if idct is None:
            idct = self.idct(image).to(image.dtype)
        fmap = self.fused_map(image, idct)
        relation, sim = self.patch_similarity(fmap)
        mask_logits = self.final(self.decoder(fmap))
        return self.outputs(
            self.overall_classifier(relation),
            relation,
            feature_map=fmap,
            sim=sim,
            mask_logits=mask_logits,
            mask_pred=torch.sigmoid(mask_logits),
        )

    @staticmethod
    def mask_similarity(mask: torch.Tensor, grid: int) -> torch.Tensor:
        """Target similarities [B, K, K]: ``1 - |r_i - r_j|`` of the manipulated shares ``r`` of
        the ``grid`` x ``grid`` patches (row-major) of ``mask`` [B, 1, H, W]."""
        ratios = F.adaptive_avg_pool2d(mask.float(), grid).flatten(1)
        return 1 - (ratios[:, :, None] - ratios[:, None, :]).abs()

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        mask = batch["mask"].float()
        ce = F.cross_entropy(out["logits"], batch["label"])
        sim = out["sim"].float()
        sim_loss = F.mse_loss(sim, self.mask_similarity(mask, math.isqrt(sim.shape[1])))
        seg = F.binary_cross_entropy_with_logits(out["mask_logits"].float(), mask)
        total = ce + self.cfg.sim_weight * sim_loss + self.cfg.seg_weight * seg
        return {"total": total, "ce": ce, "sim": sim_loss, "seg": seg}

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """The two ``encoder_*.efficientnet.*`` -> timm's names; the rest keeps DeepfakeBench's
        names. The encoders' own classifiers (``encoder_*.last_layer``), never used, are dropped."""
        rules = backbone_rules("encoder_rgb.", "encoder_rgb.")
        rules |= backbone_rules("encoder_idct.", "encoder_idct.")
        for name in ("decoder", "rfam1", "rfam2", "rfam3", "final", "overall_classifier"):
            rules[f"{name}."] = f"{name}."
        return remap(
            state_dict, rules, drop=["encoder_rgb.last_layer.", "encoder_idct.last_layer."]
        )
