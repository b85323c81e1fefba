"""F3Net: "Thinking in Frequency" (Qian et al., ECCV 2020).

Two Xception streams over two frequency views of the face, fused by cross-attention:

- FAD, frequency-aware decomposition (Sec. 3.1, Eq. 1-2): the 2-D DCT of each colour channel is
  split by three filters ``h_base + sigma(h_w)`` (fixed binary band plus a learnable part,
  ``sigma(x) = (1 - e^-x) / (1 + e^-x) = 2 sigmoid(x) - 1``) into the low (first 1/16 of the
  spectrum), middle (1/16 to 1/8) and high (last 7/8) bands, plus the full band; each filtered
  spectrum goes back through the inverse DCT, giving 4 x 3 = 12 channels.
- LFS, local frequency statistics (Sec. 3.2, Eq. 3): a 10x10 sliding-window DCT (stride 2,
  padding 4) of the grey image in [0, 255]; for each of M = 6 diagonal bands with learnable
  filters, ``q = log10 || D(p) * h ||_1`` gives one channel at half resolution.
- MixBlock (Sec. 3.3, Fig. 4): cross-attention between the streams after Xception's block 7
  (728 channels) and block 12 (1024 channels), in the layout of the public re-implementation
  github.com/yyk-wew/F3Net; the two pooled 2048-d features are concatenated, dropout 0.2,
  linear 4096 -> 2, cross-entropy.

Variants (``variant``). ``deepfakebench`` (the default) is DeepfakeBench's F3Net
(``training/detectors/f3net_detector.py``, paper 002 Appendix A.2 item 13): the FAD stream alone
(21.1M parameters), band masks ``start <= i + j <= end`` with edges ``256 // 2.82 = 90`` and 128
(inclusive, so the low and middle bands share the diagonal 90), dropout 0.5 before the head.
``paper``: ``mode: mix`` (the two streams and MixBlocks, 48.2M) or ``mode: fad``, half-open bands
of 1/16 and 1/8 of the spectrum area (edges ``size / sqrt(8)`` and ``size / 2``), dropout 0.2.
Each stream's first convolution is widened from the (pretrained) RGB one, split across its
input channels (DeepfakeBench's F3Net); the LFS stream's has stride 1 since LFS already halves
the resolution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones.xception import (
    FEATURES,
    create_xception,
    entry_side,
    run_stage,
    widen_first_conv,
)
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.frequency import band_mask, dct2d, dct_matrix, idct2d
from fairforensics.detectors.registry import register_detector


class BandFilter(nn.Module):
    """``h_base + (2 sigmoid(h_w) - 1)`` on a [size, size] DCT spectrum, ``h_w ~ N(0, 0.1)``."""

    def __init__(self, size: int, start: float, end: float, inclusive: bool = False) -> None:
        super().__init__()
        self.register_buffer("base", band_mask(size, start, end, inclusive), persistent=False)
        self.learnable = nn.Parameter(torch.randn(size, size) * 0.1)

    def forward(self) -> torch.Tensor:
        return self.base + 2.0 * torch.sigmoid(self.learnable) - 1.0


class FAD(nn.Module):
    """Frequency-aware decomposition: [B, 3, S, S] -> [B, 12, S, S] (low, mid, high, all)."""

    def __init__(self, size: int, deepfakebench: bool = False) -> None:
        super().__init__()
        self.register_buffer("dct", dct_matrix(size), persistent=False)
        if deepfakebench:  # generate_filter's edges: size // 2.82 and size // 2, inclusive
            low, mid = float(size // 2.82), float(size // 2)
        else:  # triangles of 1/16 and 1/8 of the area
            low, mid = size / math.sqrt(8.0), size / 2.0
        bands = [(0.0, low), (low, mid), (mid, 2.0 * size), (0.0, 2.0 * size)]
        self.filters = nn.ModuleList(BandFilter(size, a, b, deepfakebench) for a, b in bands)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(x.device.type, enabled=False):  # DCTs in float32, also under AMP
            freq = dct2d(x.to(torch.promote_types(x.dtype, self.dct.dtype)), self.dct)
            return torch.cat([idct2d(freq * f(), self.dct) for f in self.filters], dim=1)


def lfs_output_side(side: int, window: int, stride: int = 2) -> int:
    """Side of the LFS map: windows of ``window`` with padding ``window // 2 - 1``."""
    return (side + 2 * (window // 2 - 1) - window) // stride + 1


class LFS(nn.Module):
    """Local frequency statistics: grey [B, 1, S, S] in [0, 255] -> [B, M, S', S'] log-energies."""

    def __init__(
        self, window: int = 10, bands: int = 6, stride: int = 2, eps: float = 1e-15
    ) -> None:
        super().__init__()
        self.window, self.stride, self.eps = window, stride, eps
        self.register_buffer("dct", dct_matrix(window), persistent=False)
        width = 2.0 * window / bands
        self.filters = nn.ModuleList(
            BandFilter(window, width * i, width * (i + 1)) for i in range(bands)
        )

    def forward(self, gray: torch.Tensor) -> torch.Tensor:
        b, _, h, w = gray.shape
        s, pad = self.window, self.window // 2 - 1
        out_h, out_w = lfs_output_side(h, s, self.stride), lfs_output_side(w, s, self.stride)
        with torch.autocast(gray.device.type, enabled=False):  # log-energies in float32
            patches = F.unfold(gray.float(), s, padding=pad, stride=self.stride)  # [B, S*S, L]
            coeffs = dct2d(patches.transpose(1, 2).reshape(b, -1, s, s), self.dct).abs()
            stats = [
                torch.log10((coeffs * f().abs()).sum(dim=(-2, -1)) + self.eps) for f in self.filters
            ]
            return torch.stack(stats, dim=1).reshape(b, len(self.filters), out_h, out_w)


class MixBlock(nn.Module):
    """Cross-attention fusion of the FAD and LFS feature maps (square maps of ``channels``)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.fad_query = nn.Conv2d(channels, channels, 1)
        self.lfs_query = nn.Conv2d(channels, channels, 1)
        self.fad_key = nn.Conv2d(channels, channels, 1)
        self.lfs_key = nn.Conv2d(channels, channels, 1)
        self.fad_gamma = nn.Parameter(torch.zeros(1))
        self.lfs_gamma = nn.Parameter(torch.zeros(1))
        self.fad_conv = nn.Conv2d(channels, channels, 1, groups=channels)
        self.fad_bn = nn.BatchNorm2d(channels)
        self.lfs_conv = nn.Conv2d(channels, channels, 1, groups=channels)
        self.lfs_bn = nn.BatchNorm2d(channels)

    def forward(
        self, x_fad: torch.Tensor, x_lfs: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        b, c, h, w = x_fad.shape
        if h != w or x_lfs.shape != x_fad.shape:
            raise ValueError(
                f"MixBlock needs equal square maps, got {tuple(x_fad.shape)} and {tuple(x_lfs.shape)}"
            )
        query = torch.cat(
            [self.fad_query(x_fad).reshape(-1, h, w), self.lfs_query(x_lfs).reshape(-1, h, w)],
            dim=2,
        )
        key = torch.cat(
            [
                self.fad_key(x_fad).reshape(-1, h, w).transpose(1, 2),
                self.lfs_key(x_lfs).reshape(-1, h, w).transpose(1, 2),
            ],
            dim=1,
        )
        attention = torch.softmax(torch.bmm(query, key), dim=-1).reshape(b, c, h, w)
        att_lfs = x_lfs * attention * (2.0 * torch.sigmoid(self.lfs_gamma) - 1.0)
        att_fad = x_fad * attention * (2.0 * torch.sigmoid(self.fad_gamma) - 1.0)
        y_fad = x_fad + self.fad_bn(self.fad_conv(att_lfs))
        y_lfs = x_lfs + self.lfs_bn(self.lfs_conv(att_fad))
        return y_fad, y_lfs


@dataclass
class F3NetConfig(DetectorConfig):
    """``variant``: DeepfakeBench's FAD-only model (default) or the paper's (``paper``).

    ``mode`` (``paper`` only): ``mix`` (FAD + LFS + MixBlocks, the default there) or ``fad``;
    ``dropout`` defaults to 0.5 (DeepfakeBench) or 0.2 (``paper``).
    """

    variant: Literal["deepfakebench", "paper"] = "deepfakebench"
    mode: Literal["mix", "fad"] | None = None
    lfs_window: int = 10
    lfs_bands: int = 6
    dropout: float | None = None

    def __post_init__(self) -> None:
        dfb = self.variant == "deepfakebench"
        if self.mode is None:
            self.mode = "fad" if dfb else "mix"
        if dfb and self.mode != "fad":
            raise ValueError("mode 'mix' needs variant 'paper' (DeepfakeBench's F3Net is FAD-only)")
        if self.dropout is None:
            self.dropout = 0.5 if dfb else 0.2
        if self.lfs_bands % 3:
            raise ValueError(
                f"lfs_bands must be a multiple of 3 (RGB kernel split), got {self.lfs_bands}"
            )
        if self.lfs_window < 2:
            raise ValueError(f"lfs_window must be >= 2, got {self.lfs_window}")
        fad_side = entry_side(self.input_size)
        lfs_side = entry_side(lfs_output_side(self.input_size, self.lfs_window), first_stride=1)
        if fad_side < 1 or (self.mode == "mix" and fad_side != lfs_side):
            raise ValueError(
                f"input_size {self.input_size}: the FAD and LFS streams reach {fad_side}x{fad_side} and "
                f"{lfs_side}x{lfs_side} maps at the first MixBlock; they must be equal and >= 1"
            )


@register_detector("f3net", family="Frequency")
class F3Net(Detector):
    """FAD and LFS Xception streams with two MixBlocks, or the FAD stream alone."""

    Config = F3NetConfig
    deepfakebench_name = "f3net"
    test_input_size: ClassVar[int] = 32  # two 20M+ streams: keep the shared contract test fast

    def __init__(self, cfg: F3NetConfig) -> None:
        super().__init__(cfg)
        self.register_buffer("mean", torch.tensor(cfg.mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(cfg.std).view(1, 3, 1, 1), persistent=False)
        self.fad = FAD(cfg.input_size, deepfakebench=cfg.variant == "deepfakebench")
        self.fad_xception = create_xception(cfg.pretrained)
        widen_first_conv(self.fad_xception, 12, stride=2, mode="split")
        streams = 1
        if cfg.mode == "mix":
            streams = 2
            self.lfs = LFS(cfg.lfs_window, cfg.lfs_bands)
            self.lfs_xception = create_xception(cfg.pretrained)
            widen_first_conv(self.lfs_xception, cfg.lfs_bands, stride=1, mode="split")
            self.mix7 = MixBlock(728)
            self.mix12 = MixBlock(1024)
        self.drop = nn.Dropout(cfg.dropout)
        self.head = nn.Linear(streams * FEATURES, 2)

    def _gray255(self, image: torch.Tensor) -> torch.Tensor:
        """Un-normalise to [0, 255] and take the ITU-R 601 luma, as LFS works on grey pixels."""
        rgb = (image * self.std + self.mean) * 255.0
        return (0.299 * rgb[:, 0:1] + 0.587 * rgb[:, 1:2] + 0.114 * rgb[:, 2:3]).contiguous()

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        image = batch["image"]
        size = self.cfg.input_size
        if image.shape[-2:] != (size, size):
            raise ValueError(
                f"F3Net was built for {size}x{size} inputs (FAD's DCT), got {tuple(image.shape[-2:])}"
            )
        x = self.fad(image)
        if self.cfg.mode == "fad":
            x = F.adaptive_avg_pool2d(self.fad_xception.forward_features(x), 1).flatten(1)
            return self.outputs(self.head(self.drop(x)), x)
        y = self.lfs(self._gray255(image))
        for stage in ("stem1", "stem2", "entry", "middle1"):
            x, y = run_stage(self.fad_xception, stage, x), run_stage(self.lfs_xception, stage, y)
        x, y = self.mix7(x, y)
        x, y = (
            run_stage(self.fad_xception, "middle2", x),
            run_stage(self.lfs_xception, "middle2", y),
        )
        x, y = run_stage(self.fad_xception, "exit1", x), run_stage(self.lfs_xception, "exit1", y)
        x, y = self.mix12(x, y)
        x, y = run_stage(self.fad_xception, "exit2", x), run_stage(self.lfs_xception, "exit2", y)
        feat = torch.cat([F.adaptive_avg_pool2d(t, 1).flatten(1) for t in (x, y)], dim=1)
        return self.outputs(self.head(self.drop(feat)), feat)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DFB: ``FAD_head`` (its DCT matrices and band masks are constants we compute) and one
        12-channel Xception ``backbone`` (head ``last_linear.1``; ``adjust_channel`` unused)."""
        if self.cfg.mode != "fad":
            raise KeyError("DeepfakeBench's F3Net is FAD-only: build it with mode 'fad'")
        constants = ("FAD_head._DCT_all", "FAD_head._DCT_all_T")
        constants += tuple(f"FAD_head.filters.{i}.base" for i in range(4))
        return remap(
            state_dict,
            {
                "FAD_head.filters.": "fad.filters.",
                "backbone.last_linear.1.": "head.",  # Sequential(Dropout(0.5), Linear)
                "backbone.": "fad_xception.",
            },
            drop=("backbone.adjust_channel.", *constants),
        )
