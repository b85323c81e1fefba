"""SRM: "Generalizing Face Forgery Detection with High-frequency Features" (Luo et al., CVPR 2021).

Two Xception streams, RGB and high-frequency noise (Sec. 3, Fig. 2):

- the noise stream starts from three fixed SRM high-pass filters (Fridrich & Kodovsky 2012: the
  KB 3x3 and KV 5x5 kernels and a horizontal second-order one, summed over the colour channels,
  truncated to [-3, 3]); multi-scale high-frequency features (Sec. 3.2): the same filters applied
  depthwise to the RGB stream's first two feature maps (32 and 64 channels), projected by
  1x1 conv + BN + ReLU and added to the noise stream;
- SRM-guided spatial attention (Sec. 3.2): a map computed from the SRM features (two 3x3 convs,
  then channel-avg/max pooling and a 7x7 conv, sigmoid) reweights the RGB features as
  ``x * att + x``, followed by BN + ReLU;
- dual cross-modality attention (Sec. 3.3) after the entry flow and after block 7 (728 channels)
  exchanges information between the streams, with zero-initialised residual gains;
- a fusion module (1x1 conv + BN + ReLU and channel attention) merges the 2048-d outputs.

The classifier is the AM-softmax head the authors use (cosine logits, margin 0.45, scale 30;
``loss: am_softmax``) or a plain linear layer with cross-entropy (``loss: ce``). Layer layout
follows the authors' modules as shipped in DeepfakeBench (paper 002, Appendix A.2 item 15).

Variants (``variant``). ``deepfakebench`` (the default) computes DeepfakeBench's
``training/detectors/srm_detector.py``: the head is the RGB Xception's plain ``Linear`` and the
AM-softmax margin is applied to its raw outputs in the loss (``prob`` = softmax of those
outputs); the attention branch filters the already SRM-filtered image a second time; the two
streams enter the fusion without Xception's final ReLU; the depthwise SRM kernels are ordered
``f1 x C, f2 x C, f3 x C`` (``np.repeat``) rather than ``(f1, f2, f3)`` per channel. ``paper``:
the cosine (AM-softmax) head of the authors' paper, one SRM filtering, the ReLU'd streams.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones.xception import (
    FEATURES,
    STAGES,
    create_xception,
    entry_side,
    run_stage,
)
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector

_KB = [[0, 0, 0, 0, 0], [0, -1, 2, -1, 0], [0, 2, -4, 2, 0], [0, -1, 2, -1, 0], [0, 0, 0, 0, 0]]
_KV = [
    [-1, 2, -2, 2, -1],
    [2, -6, 8, -6, 2],
    [-2, 8, -12, 8, -2],
    [2, -6, 8, -6, 2],
    [-1, 2, -2, 2, -1],
]
_H2 = [[0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 1, -2, 1, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0]]


def srm_kernels() -> torch.Tensor:
    """The three normalised SRM high-pass kernels [3, 5, 5]: KB / 4, KV / 12, H2 / 2."""
    return torch.stack(
        [torch.tensor(_KB) / 4.0, torch.tensor(_KV) / 12.0, torch.tensor(_H2) / 2.0]
    ).float()


class SRMFilter(nn.Module):
    """Fixed SRM filters summed over ``channels`` inputs: [B, C, H, W] -> [B, 3, H, W] in [-3, 3]."""

    def __init__(self, channels: int = 3) -> None:
        super().__init__()
        kernel = srm_kernels().unsqueeze(1).repeat(1, channels, 1, 1)
        self.register_buffer("kernel", kernel, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(F.conv2d(x, self.kernel, padding=2), -3.0, 3.0)


class SRMSeparate(nn.Module):
    """Depthwise SRM on a feature map (3 filters per channel), then 1x1 conv + BN + ReLU.

    ``repeat_filters``: DeepfakeBench's kernel order ``f1 x C, f2 x C, f3 x C`` (so channel ``c``
    gets filters ``3c // C .. (3c + 2) // C``) instead of ``(f1, f2, f3)`` for every channel.
    """

    def __init__(self, channels: int, out_channels: int, repeat_filters: bool = False) -> None:
        super().__init__()
        self.channels = channels
        kernels = srm_kernels().unsqueeze(1)
        kernel = (
            kernels.repeat_interleave(channels, dim=0)
            if repeat_filters
            else kernels.repeat(channels, 1, 1, 1)
        )
        self.register_buffer("kernel", kernel, persistent=False)
        self.project = nn.Sequential(
            nn.Conv2d(3 * channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )
        nn.init.kaiming_normal_(self.project[0].weight, a=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        high = F.hardtanh(F.conv2d(x, self.kernel, padding=2, groups=self.channels), -3.0, 3.0)
        return self.project(high)


class SpatialAttention(nn.Module):
    """CBAM spatial attention: sigmoid(conv7x7([mean_c(x), max_c(x)]))."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 1, 7, padding=3, bias=False)
        nn.init.xavier_normal_(self.conv.weight, gain=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = torch.cat([x.mean(dim=1, keepdim=True), x.amax(dim=1, keepdim=True)], dim=1)
        return torch.sigmoid(self.conv(pooled))


class SRMPixelAttention(nn.Module):
    """SRM features [B, 3, H, W] -> attention map at the resolution after Xception's conv2."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2, 0, bias=False),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, 3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
        )
        for m in self.conv:
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, a=1)
        self.attention = SpatialAttention()

    def forward(self, srm: torch.Tensor) -> torch.Tensor:
        return self.attention(self.conv(srm))


class DualCrossModalAttention(nn.Module):
    """Dual cross-modality attention between RGB ``x`` and noise ``y`` maps of side ``size``."""

    def __init__(self, channels: int, size: int, ratio: int = 8) -> None:
        super().__init__()
        inner = channels // ratio
        self.key1 = nn.Conv2d(channels, inner, 1)
        self.key2 = nn.Conv2d(channels, inner, 1)
        self.key_shared = nn.Conv2d(inner, inner, 1)
        self.linear1 = nn.Linear(size * size, size * size)
        self.linear2 = nn.Linear(size * size, size * size)
        self.value1 = nn.Conv2d(channels, channels, 1)
        self.value2 = nn.Conv2d(channels, channels, 1)
        self.gamma1 = nn.Parameter(torch.zeros(1))
        self.gamma2 = nn.Parameter(torch.zeros(1))
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.xavier_normal_(m.weight, gain=0.02)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, c, h, w = x.shape
        if self.linear1.in_features != h * w:
            side = int(self.linear1.in_features**0.5)
            raise ValueError(f"cross-modal attention was built for {side}x{side} maps, got {h}x{w}")
        k1 = self.key_shared(self.key1(x)).reshape(b, -1, h * w).transpose(1, 2)  # [B, N, C']
        k2 = self.key_shared(self.key2(y)).reshape(b, -1, h * w)  # [B, C', N]
        energy = torch.bmm(k1, k2)  # [B, N, N]
        att_y_on_x = torch.softmax(self.linear1(energy), dim=-1)
        att_x_on_y = torch.softmax(self.linear2(energy.transpose(1, 2)), dim=-1)
        y_on_x = torch.bmm(self.value2(y).reshape(b, c, h * w), att_y_on_x.transpose(1, 2)).view(
            b, c, h, w
        )
        x_on_y = torch.bmm(self.value1(x).reshape(b, c, h * w), att_x_on_y.transpose(1, 2)).view(
            b, c, h, w
        )
        return x + self.gamma1 * y_on_x, y + self.gamma2 * x_on_y


class FeatureFusion(nn.Module):
    """Concatenate, 1x1 conv + BN + ReLU to 2048 channels, channel attention (ratio 16)."""

    def __init__(self, channels: int = FEATURES, ratio: int = 16) -> None:
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(2 * channels, channels, 1, bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(inplace=True),
        )
        nn.init.kaiming_normal_(self.block[0].weight, a=1)
        self.mlp = nn.Sequential(
            nn.Conv2d(channels, channels // ratio, 1, bias=False),
            nn.ReLU(inplace=True),
            nn.Conv2d(channels // ratio, channels, 1, bias=False),
        )
        for m in self.mlp:
            if isinstance(m, nn.Conv2d):
                nn.init.xavier_normal_(m.weight, gain=0.02)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        fused = self.block(torch.cat([x, y], dim=1))
        att = torch.sigmoid(
            self.mlp(F.adaptive_avg_pool2d(fused, 1)) + self.mlp(F.adaptive_max_pool2d(fused, 1))
        )
        return fused * att


class CosineLinear(nn.Module):
    """``cos(theta)`` between L2-normalised features and class weights (AM-softmax head)."""

    def __init__(self, in_features: int, classes: int = 2) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, classes).uniform_(-1.0, 1.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, dim=1) @ F.normalize(self.weight, dim=0)


def am_softmax_loss(
    cos: torch.Tensor, label: torch.Tensor, margin: float, scale: float
) -> torch.Tensor:
    """AM-softmax (Wang et al. 2018): cross-entropy on ``scale * (cos - margin * onehot)``."""
    onehot = F.one_hot(label, cos.shape[1]).to(cos.dtype)
    return F.cross_entropy(scale * (cos - margin * onehot), label)


@dataclass
class SRMConfig(DetectorConfig):
    """``variant``: DeepfakeBench's model (default) or the paper's (``paper``); ``loss``:
    ``am_softmax`` (the authors', margin 0.45, scale 30) or ``ce``."""

    variant: Literal["deepfakebench", "paper"] = "deepfakebench"
    loss: Literal["am_softmax", "ce"] = "am_softmax"
    am_margin: float = 0.45
    am_scale: float = 30.0

    def __post_init__(self) -> None:
        if entry_side(self.input_size) < 1:
            raise ValueError(f"input_size {self.input_size} is too small for Xception")


@register_detector("srm", family="Frequency")
class SRM(Detector):
    """RGB and SRM-noise Xception streams with SRM attention, dual cross-modal attention, fusion."""

    Config = SRMConfig
    deepfakebench_name = "srm"
    test_input_size: ClassVar[int] = 32  # two 20M+ streams: keep the shared contract test fast

    def __init__(self, cfg: SRMConfig) -> None:
        super().__init__(cfg)
        self.rgb = create_xception(cfg.pretrained)
        self.noise = create_xception(cfg.pretrained)
        dfb = cfg.variant == "deepfakebench"
        self.srm = SRMFilter(3)
        self.srm_conv1 = SRMSeparate(32, 32, repeat_filters=dfb)
        self.srm_conv2 = SRMSeparate(64, 64, repeat_filters=dfb)
        self.srm_attention = SRMPixelAttention()
        self.attention_post = nn.Sequential(nn.BatchNorm2d(64), nn.ReLU(inplace=True))
        side = entry_side(cfg.input_size)
        self.dual_cma0 = DualCrossModalAttention(728, side)
        self.dual_cma1 = DualCrossModalAttention(728, side)
        self.fusion = FeatureFusion(FEATURES)
        cosine = cfg.loss == "am_softmax" and not dfb
        self.head = CosineLinear(FEATURES) if cosine else nn.Linear(FEATURES, 2)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        image = batch["image"]
        srm = self.srm(image)
        x = run_stage(self.rgb, "stem1", image)
        y = F.relu(run_stage(self.noise, "stem1", srm) + self.srm_conv1(x))
        x = run_stage(self.rgb, "stem2", x)
        y = F.relu(run_stage(self.noise, "stem2", y) + self.srm_conv2(x))
        dfb = self.cfg.variant == "deepfakebench"
        att = self.srm_attention(self.srm(srm) if dfb else srm)  # DFB filters twice
        x = self.attention_post(x * att + x)
        x, y = run_stage(self.rgb, "entry", x), run_stage(self.noise, "entry", y)
        x, y = self.dual_cma0(x, y)
        x, y = run_stage(self.rgb, "middle1", x), run_stage(self.noise, "middle1", y)
        x, y = self.dual_cma1(x, y)
        for stage in ("middle2", "exit1"):
            x, y = run_stage(self.rgb, stage, x), run_stage(self.noise, stage, y)
        for name in STAGES["exit2"][:-1] if dfb else STAGES["exit2"]:  # DFB: no final ReLU
            x, y = getattr(self.rgb, name)(x), getattr(self.noise, name)(y)
        feat = F.adaptive_avg_pool2d(F.relu(self.fusion(x, y)), 1).flatten(1)
        out = self.head(feat)
        if self.cfg.loss == "am_softmax" and not dfb:
            return self.outputs(self.cfg.am_scale * out, feat, cos=out)
        return self.outputs(out, feat)

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if self.cfg.loss == "ce":
            return super().loss(batch, out)
        # paper: margin on the cosines; DeepfakeBench: on the raw linear outputs.
        scores = out["cos"] if self.cfg.variant == "paper" else out["logits"]
        am = am_softmax_loss(scores, batch["label"], self.cfg.am_margin, self.cfg.am_scale)
        return {"total": am, "am_softmax": am}

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DFB's SRMDetector names. Its SRM kernels are constants we compute; ``blur`` (used only
        by an unused augmentation), ``adjust_channel`` and the noise stream's head are unused."""
        if self.cfg.variant != "deepfakebench":
            raise KeyError("DeepfakeBench weights need 'variant: deepfakebench'")
        constants = ("blur.weight", "srm_conv0.kernel", "srm_conv1.kernel", "srm_conv2.kernel")
        prefixes = {
            "backbone_rgb.last_linear.": "head.",
            "backbone_rgb.": "rgb.",
            "backbone_srm.": "noise.",
            "srm_sa.pa.conv.": "srm_attention.attention.conv.",
            "srm_sa.conv.": "srm_attention.conv.",
            "srm_sa_post.": "attention_post.",
            "fusion.convblk.": "fusion.block.",
            "fusion.ca.sharedMLP.": "fusion.mlp.",
        }
        for i in (1, 2):
            prefixes[f"srm_conv{i}.out_conv."] = f"srm_conv{i}.project."
        for i in (0, 1):
            a, b = f"dual_cma{i}.", f"dual_cma{i}."
            for old, new in (("key_conv1", "key1"), ("key_conv2", "key2")):
                prefixes[f"{a}{old}."] = f"{b}{new}."
            prefixes[f"{a}key_conv_share."] = f"{b}key_shared."
            prefixes[f"{a}value_conv1."] = f"{b}value1."
            prefixes[f"{a}value_conv2."] = f"{b}value2."
            for name in ("linear1.", "linear2.", "gamma1", "gamma2"):
                prefixes[a + name] = b + name
        drop = (*constants, "srm_sa.srm.kernel", "backbone_srm.last_linear.")
        drop += ("backbone_rgb.adjust_channel.", "backbone_srm.adjust_channel.")
        return remap(state_dict, prefixes, drop=drop)
