"""Multi-attentional deepfake detection (Zhao et al., CVPR 2021), DeepfakeBench v2's
``multi_attention_detector.py`` (itself from the authors' code, github.com/yoctta/multiple-attention).

EfficientNet-B4 (efficientnet_pytorch numerics, no drop-connect; :mod:`detectors.dfb_efficientnet`)
run as DeepfakeBench runs it here: stem and head **without** their Swish, blocks one by one. The
output of block 21 (``attention_layer: b5``) gives M = 4 attention maps (3x3 conv + BN + ReLU,
1x1 conv + BN, ELU + 1, times a border mask); the shallow features of block 5 (``feature_layer:
b2``) go through the texture-enhancement block (local average removed, a dense block); bilinear
attention pooling gives the textural matrix P (L2-normalised rows) and, with the summed attention,
a global vector G of the head's 1792-channel map; two projections and an MLP classify [P, G].

Training, as DeepfakeBench does it (its code follows the authors'):

- **Two phases.** For the first ``backbone_epochs`` epochs (DeepfakeBench: 10) only the plain
  EfficientNet-B4 is trained, cross-entropy on its own linear head (``base_head``); from then on the
  multi-attention network, with ``loss = CE + RIL``. The trainer reports epochs through
  :meth:`set_epoch`; which phase a model is in is kept in its state (``mat_active``), so a saved
  checkpoint is scored with the head it was trained with (``phase`` forces one).
- **Regional independence loss (RIL).** Per attention region, the pooled textural feature is
  pulled within ``intra_margin`` (real 0.05, fake 0.1) of a moving feature centre (update rate
  ``ril_alpha``, 0.05, times 0.9 every epoch of the second phase); centres are pushed
  ``inter_margin`` (0.2) apart. As in DeepfakeBench, the centres are detached, so the inter-class
  term is a logged constant that does not move the weights.
- **Attention-guided data augmentation (AGDA).** In training, one attention map per image (drawn
  with weights ``sqrt(sum + 1)``) soft-masks a blurred (11x11, sigma 7), noised (0.1), half-scale
  copy of the image into it, with a random threshold (0.4-0.6) and steepness (3-5), drawn as
  DeepfakeBench draws them (the map by torch, threshold and steepness by Python's ``random``), so
  a seeded step makes DeepfakeBench's images.

DeepfakeBench differs from this only where its code has side effects: its phase counter also counts
evaluation batches and starts again from 0 when a model is loaded, so a freshly loaded
DeepfakeBench model scores with the plain EfficientNet head for its first 35,910 batches. A
DeepfakeBench checkpoint imported here is taken as trained through both phases (``mat_active``
set); ``phase: backbone`` gives DeepfakeBench's fresh-model output.
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_efficientnet import (
    BLOCK_CHANNELS,
    HEAD_CHANNELS,
    backbone_rules,
    build_efficientnet_b4,
    flat_blocks,
    head,
    stem,
)
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector

log = logging.getLogger(__name__)

#: DeepfakeBench's names of the tapped block outputs (efficientnet_pytorch's flat block index).
LAYERS = {"b1": 1, "b2": 5, "b3": 9, "b4": 15, "b5": 21, "b6": 29, "b7": 31}
Layer = Literal["b1", "b2", "b3", "b4", "b5", "b6", "b7"]


@dataclass
class MultiAttentionConfig(DetectorConfig):
    """Architecture, loss and AGDA settings (DeepfakeBench's ``multi_attention.yaml``).

    ``phase``: which head scores a model: ``auto`` (the one it was trained with, from its state),
    ``backbone`` (the plain EfficientNet head) or ``mat`` (the multi-attention head).
    """

    feature_layer: Layer = "b2"
    attention_layer: Layer = "b5"
    num_attentions: int = 4
    mid_dim: int = 256
    dropout: float = 0.25
    backbone_epochs: int = 10
    phase: Literal["auto", "backbone", "mat"] = "auto"
    ril_weight: float = 1.0
    ril_alpha: float = 0.05
    ril_alpha_decay: float = 0.9
    inter_margin: float = 0.2
    intra_margin: tuple[float, float] = (0.05, 0.1)
    agda_kernel_size: int = 11
    agda_sigma: float = 7.0
    agda_threshold: tuple[float, float] = (0.4, 0.6)
    agda_zoom: tuple[float, float] = (3.0, 5.0)
    agda_scale_factor: float = 0.5
    agda_noise_rate: float = 0.1

    def __post_init__(self) -> None:
        if self.num_attentions < 1:
            raise ValueError(f"num_attentions must be >= 1, got {self.num_attentions}")
        if self.backbone_epochs < 0:
            raise ValueError(f"backbone_epochs must be >= 0, got {self.backbone_epochs}")
        if self.agda_kernel_size < 1 or self.agda_kernel_size % 2 == 0:
            raise ValueError(f"agda_kernel_size must be odd, got {self.agda_kernel_size}")
        if LAYERS[self.feature_layer] >= LAYERS[self.attention_layer]:
            raise ValueError("feature_layer must come before attention_layer")


def border_mask() -> torch.Tensor:
    """DeepfakeBench's constant [1, 1, 24, 24] mask: 0 on a 2-pixel border, 1 inside."""
    mask = torch.zeros(1, 1, 24, 24)
    mask[0, 0, 2:-2, 2:-2] = 1
    return mask


class AttentionMap(nn.Module):
    """M attention maps from deep features: conv-BN-ReLU, 1x1 conv-BN, ELU + 1, border mask."""

    def __init__(self, channels: int, num: int) -> None:
        super().__init__()
        self.register_buffer("mask", border_mask(), persistent=False)
        self.conv_extract = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, num, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(num)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.bn2(self.conv2(F.relu(self.bn1(self.conv_extract(x)))))
        return (F.elu(x) + 1) * F.interpolate(self.mask, x.shape[-2:], mode="nearest")


class TextureEnhance(nn.Module):
    """Texture enhancement block (the paper's Sec. 3.3, DeepfakeBench's ``TextureEnhanceV1``):
    the local average (at the attention resolution) is removed and a dense block of three 3x3
    convolutions follows; returns (enhanced map with 4C channels, the local averages D)."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv0 = nn.Conv2d(c, c, 1)
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(2 * c, c, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(2 * c)
        self.conv3 = nn.Conv2d(3 * c, c, 3, padding=1)
        self.bn3 = nn.BatchNorm2d(3 * c)
        self.conv_last = nn.Conv2d(4 * c, 4 * c, 1)
        self.bn4 = nn.BatchNorm2d(4 * c)
        self.bn_last = nn.BatchNorm2d(4 * c)

    def forward(
        self, x: torch.Tensor, attention: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        d = F.adaptive_avg_pool2d(x, attention.shape[-2:])
        x = x - F.interpolate(d, x.shape[-2:], mode="nearest")
        f = self.conv0(x)
        f = torch.cat([f, self.conv1(F.relu(self.bn1(f)))], dim=1)
        f = torch.cat([f, self.conv2(F.relu(self.bn2(f)))], dim=1)
        f = torch.cat([f, self.conv3(F.relu(self.bn3(f)))], dim=1)
        return self.bn_last(self.conv_last(F.relu(self.bn4(f)))), d


def attention_pooling(features: torch.Tensor, attentions: torch.Tensor, norm: int) -> torch.Tensor:
    """Bilinear attention pooling [B, M, C]: ``norm`` 2 L2-normalises each row (textural matrix
    P), ``norm`` 1 divides by each map's mass (global vector G)."""
    if features.shape[-2:] != attentions.shape[-2:]:
        attentions = F.interpolate(
            attentions, features.shape[-2:], mode="bilinear", align_corners=True
        )
    pooled = torch.einsum("imjk,injk->imn", attentions, features)
    if norm == 1:
        return pooled / torch.sum(attentions + 1e-8, dim=(2, 3)).unsqueeze(-1)
    return F.normalize(pooled, p=2, dim=-1)


def _gaussian_blur(x: torch.Tensor, size: int, sigma: float) -> torch.Tensor:
    """Separable Gaussian blur with reflected borders (kornia's ``GaussianBlur2d``)."""
    t = torch.arange(size, dtype=x.dtype, device=x.device) - size // 2
    k = torch.exp(-(t**2) / (2 * sigma**2))
    k = k / k.sum()
    c = x.shape[1]
    x = F.pad(x, (size // 2,) * 4, mode="reflect")
    x = F.conv2d(x, k.view(1, 1, 1, size).expand(c, 1, 1, size), groups=c)
    return F.conv2d(x, k.view(1, 1, size, 1).expand(c, 1, size, 1), groups=c)


@register_detector("multi_attention", family="Spatial")
class MultiAttention(Detector):
    """EfficientNet-B4 + 4 attention maps, texture enhancement, attention pooling and an MLP
    (18,645,556 parameters; ``base_head`` trains in the first phase only)."""

    Config = MultiAttentionConfig
    deepfakebench_name = "multi_attention"
    test_input_size = 32

    def __init__(self, cfg: MultiAttentionConfig) -> None:
        super().__init__(cfg)
        self.backbone = build_efficientnet_b4(cfg.pretrained, drop_connect=0.0)
        self.base_head = nn.Linear(HEAD_CHANNELS, 2)
        m, c_shallow = cfg.num_attentions, BLOCK_CHANNELS[LAYERS[cfg.feature_layer]]
        self.attention_generation = AttentionMap(BLOCK_CHANNELS[LAYERS[cfg.attention_layer]], m)
        self.texture_enhance = TextureEnhance(c_shallow)
        d = cfg.mid_dim
        self.projection_local = nn.Sequential(
            nn.Linear(m * 4 * c_shallow, d), nn.Hardswish(), nn.Linear(d, d), nn.Hardswish()
        )
        self.projection_final = nn.Sequential(nn.Linear(HEAD_CHANNELS, d), nn.Hardswish())
        self.ensemble_classifier_fc = nn.Sequential(
            nn.Linear(2 * d, d), nn.Hardswish(), nn.Linear(d, 2)
        )
        self.drop = nn.Dropout(cfg.dropout)
        self.register_buffer("mat_active", torch.tensor(False))
        self.register_buffer("ril_centers", torch.zeros(m, c_shallow))
        self.ril_alpha = cfg.ril_alpha

    @property
    def late_params(self) -> frozenset[str]:  # type: ignore[override]
        """The multi-attention head: trained only after the backbone phase."""
        first = ("backbone.", "base_head.")
        return frozenset(k for k, _ in self.named_parameters() if not k.startswith(first))

    def set_epoch(self, epoch: int) -> None:
        """Phase and RIL centre rate of ``epoch`` (DeepfakeBench decays the rate every epoch of
        the second phase)."""
        mat = epoch >= self.cfg.backbone_epochs
        if mat and not bool(self.mat_active):
            log.info("multi_attention: epoch %d starts the multi-attention phase", epoch)
        self.mat_active.fill_(mat)
        self.ril_alpha = self.cfg.ril_alpha * self.cfg.ril_alpha_decay ** max(
            0, epoch - self.cfg.backbone_epochs
        )

    def _uses_mat(self) -> bool:
        return self.cfg.phase == "mat" or (self.cfg.phase == "auto" and bool(self.mat_active))

    def _features(self, image: torch.Tensor) -> dict[str, torch.Tensor]:
        """Shallow, attention and final maps (DeepfakeBench's ``features``: no Swish after the
        stem and head BatchNorms)."""
        net, wanted = (
            self.backbone,
            {LAYERS[self.cfg.feature_layer], LAYERS[self.cfg.attention_layer]},
        )
        x, taps = stem(net, image, act=False), {}
        for i, block in enumerate(flat_blocks(net)):
            x = block(x)
            if i in wanted:
                taps[i] = x
        taps["final"] = head(net, x, act=False)
        return taps

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        image = batch["image"]
        if not self._uses_mat():
            final = self._features(image)["final"]
            feat = final.mean(dim=(2, 3))
            return self.outputs(self.base_head(feat), feat, feature_map=final)
        shallow, deep = LAYERS[self.cfg.feature_layer], LAYERS[self.cfg.attention_layer]
        if self.training:
            with torch.no_grad():
                attention = self.attention_generation(self._features(image)[deep])
                image = self.agda(image, attention)
        taps = self._features(image)
        attention = self.attention_generation(taps[deep])
        enhanced, local_avg = self.texture_enhance(taps[shallow], attention)
        textural = attention_pooling(enhanced, attention, norm=2)
        local = self.projection_local(self.drop(textural).flatten(1))
        pooled = attention_pooling(taps["final"], attention.sum(1, keepdim=True), norm=1)
        glob = F.hardswish(self.projection_final(pooled.squeeze(1)))
        feat = torch.cat([local, glob], dim=1)
        return self.outputs(
            self.ensemble_classifier_fc(feat),
            feat,
            feature_map=taps["final"],
            attentions=attention,
            feature_maps_d=local_avg,
        )

    def agda(self, image: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
        """Attention-guided data augmentation: soft-drop one attention region per image."""
        cfg, (h, w) = self.cfg, image.shape[-2:]
        weight = torch.sqrt(attention.sum(dim=(2, 3)) + 1)
        # one map per image, p ~ weight: torch.distributions.Categorical(weight).sample()'s call
        index = torch.multinomial(weight / weight.sum(dim=1, keepdim=True), 1, True)
        maps = F.interpolate(attention, (h, w), mode="bilinear", align_corners=True)
        amap = torch.gather(maps, 1, index.view(-1, 1, 1, 1).expand(-1, 1, h, w))
        amap = amap / (amap.flatten(1).max(dim=1)[0] + 1e-8).view(-1, 1, 1, 1)
        threshold = random.uniform(*cfg.agda_threshold)  # Python's generator, as DeepfakeBench
        zoom = random.uniform(*cfg.agda_zoom)
        bottom = 1 / (1 + math.exp(threshold * zoom))  # sigmoid((0 - threshold) * zoom)
        amap = (torch.sigmoid((amap - threshold) * zoom) - bottom) / (1 - bottom)
        small = F.interpolate(
            image, scale_factor=cfg.agda_scale_factor, mode="bilinear", align_corners=True
        )
        small = _gaussian_blur(small, cfg.agda_kernel_size, cfg.agda_sigma)
        small = small + torch.randn_like(small) * cfg.agda_noise_rate
        small = F.interpolate(small, (h, w), mode="bilinear", align_corners=True)
        return image * (1 - amap) + small * amap

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        ce = F.cross_entropy(out["logits"], batch["label"])
        if "attentions" not in out:
            return {"total": ce, "ce": ce}
        ril = self.regional_independence(out["feature_maps_d"], out["attentions"], batch["label"])
        return {"total": ce + self.cfg.ril_weight * ril, "ce": ce, "ril": ril}

    def regional_independence(
        self, local_avg: torch.Tensor, attention: torch.Tensor, label: torch.Tensor
    ) -> torch.Tensor:
        """RIL: intra-class distance to the updated (detached) centres beyond the class's
        margin, plus the inter-centre hinge (a constant, as in DeepfakeBench); updates the
        centres in training."""
        feats = attention_pooling(local_avg, attention, norm=2).float()  # [B, M, N]
        centres = self.ril_centers.float()
        new = (centres + self.ril_alpha * (feats.detach() - centres).mean(dim=0)).detach()
        if self.training:
            self.ril_centers.copy_(new)
        margins = torch.tensor(self.cfg.intra_margin, device=feats.device)[label].view(-1, 1)
        intra = F.relu(torch.norm(feats - new, dim=-1) - margins).mean()
        m = new.shape[0]
        i, j = torch.triu_indices(m, m, 1, device=new.device)
        gaps = (new[i] - new[j]).norm(dim=-1)  # each pair of centres once
        inter = F.relu(self.cfg.inter_margin - gaps).sum() / m / self.ril_alpha
        return intra + inter

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """``backbone.efficientnet.*`` -> timm's names, ``backbone.last_layer`` -> ``base_head``;
        the heads keep DeepfakeBench's names. The border mask is a constant computed here (a file
        whose mask differs is refused). DeepfakeBench checkpoints hold neither the phase nor the
        RIL centres: the model is taken as trained through both phases, with centres at 0."""
        mask = state_dict.get("attention_generation.mask")
        if mask is not None and not torch.equal(mask.cpu(), border_mask()):
            raise KeyError("attention_generation.mask is not DeepfakeBench's border mask")
        rules = backbone_rules("backbone.", "backbone.") | {"backbone.last_layer.": "base_head."}
        for name in ("attention_generation", "texture_enhance", "projection_local"):
            rules[f"{name}."] = f"{name}."
        rules |= {
            "projection_final.": "projection_final.",
            "ensemble_classifier_fc.": "ensemble_classifier_fc.",
        }
        mapped = remap(state_dict, rules, drop=["attention_generation.mask"])
        mapped["mat_active"] = torch.tensor(True)
        mapped["ril_centers"] = torch.zeros(tuple(self.ril_centers.shape))
        return mapped
