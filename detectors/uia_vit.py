"""UIA-ViT (Zhuang et al., "UIA-ViT: Unsupervised Inconsistency-Aware Method based on Vision
Transformer for Face Forgery Detection", ECCV 2022), DeepfakeBench v2's ``uia_vit_detector.py`` and
``loss/patch_consistency_loss.py``.

Network: a ViT-B/16 (``model.*``: 224 px, width 768, 12 blocks, 12 heads, MLP ratio 4, qkv bias,
exact GELU, LayerNorm eps 1e-6) with an extra LayerNorm ``norm_middle`` and a head
``Linear(1536, 2)`` on ``[CLS token, weighted mean of the patch tokens]``. The patch weights come
from the CLS row of the pre-softmax attention logits of blocks 7-11 (0-based; 5 x 12 maps):
``(w + (1 - w) * sigmoid(mean logits)) / P`` with ``w = sigmoid(-12 (step - 0.7))``, where ``step``
is the training progress (batches seen / all batches; 1 in evaluation) and the weights are uniform
while ``step < 1/8`` (progressive localisation).

Unsupervised patch-consistency learning (from the second epoch on): the patch features
``norm_middle(input of block 6)`` of the first 4 real faces of each batch (all patches) and of the
first 4 fakes (the inner patches: a border of 3 of the 14 x 14 grid left out) are collected; every
half epoch a Gaussian (mean, Ledoit-Wolf precision) is fitted to each class. A fake face's patch is
"fake" when its Mahalanobis distance to the real Gaussian exceeds that to the fake one. The
patch-consistency loss compares ``sigmoid(mean attention logits)`` between patches with targets:
1 on the diagonal and ``c_real`` elsewhere for real faces; ``c_fake`` between fake patches,
``c_real`` between real ones and ``c_cross`` across for fakes (L1, normalised by P^2 - P). The
total is ``CE + 0.06 * PCL + 0.05 * (1/|c_real| + 1/|c_fake|) + 0.5 * |c_cross|`` with ``c_*``
learned (initial 0.6, 0.6, 0.2).

Where we differ from DeepfakeBench's code: its evaluation forwards also count as batches and add
their features to the Gaussians (the test sets, when its trainer evaluates); here only training
batches do. The Gaussians are fitted right after the loss of the batch that completes a half
epoch (DeepfakeBench: before the next batch), which uses them identically and lets a checkpoint
written at a fit carry them (an exact resume; between fits the collected features are not saved). ``norm_middle``, whose output only selects patches,
gets no gradient in DeepfakeBench either; it is frozen here. The number of batches per epoch,
which DeepfakeBench's config asks for by hand (``batch_per_epoch``), comes from the trainer
(:meth:`Detector.set_schedule`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones.vit_weights import (
    load_matching,
    local_weights,
    read_weight_files,
)
from fairforensics.detectors.base import Detector, DetectorConfig, loss_precision
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector

log = logging.getLogger(__name__)

PROGRESSIVE_K, PROGRESSIVE_THR, PROGRESSIVE_START = 12.0, 0.7, 1 / 8
#: Buffers that carry the training state (not in DeepfakeBench's files).
STATE = (
    "batch_count",
    "stats_fitted",
    "real_mean",
    "real_precision",
    "fake_mean",
    "fake_precision",
)


@dataclass
class UIAViTConfig(DetectorConfig):
    """The ViT's widths; ``attn_blocks``/``feat_block``: 0-based blocks whose attention logits
    weight the patches / whose input gives the patch features; loss weights (PCL, 1/|c|, |c_cross|);
    ``inner_margin``: border of the patch grid left out of the fake Gaussian; ``stat_samples``:
    faces per class and batch whose patches feed the Gaussians. ``pretrained``: a local timm
    ViT-B/16 ImageNet file (DeepfakeBench: ``jx_vit_base_p16_224``) or false."""

    input_size: int = 224
    width: int = 768
    layers: int = 12
    heads: int = 12
    mlp_ratio: float = 4.0
    patch_size: int = 16
    attn_blocks: tuple[int, ...] = (7, 8, 9, 10, 11)
    feat_block: int = 6
    loss_weights: tuple[float, float, float] = (0.06, 0.05, 0.5)
    inner_margin: int = 3
    stat_samples: int = 4

    def __post_init__(self) -> None:
        bad = [b for b in (*self.attn_blocks, self.feat_block) if not 0 <= b < self.layers]
        if bad or not self.attn_blocks:
            raise ValueError(
                f"attn_blocks and feat_block must lie in [0, {self.layers}), got {bad}"
            )
        if self.input_size % self.patch_size or self.width % self.heads:
            raise ValueError("input_size must be a multiple of patch_size, width of heads")


class _Attention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(output, pre-softmax scaled logits [B, heads, N, N])."""
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        logits = (q @ k.transpose(-2, -1)) * self.scale
        out = (logits.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(out), logits


class _Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: float) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = _Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = _Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, logits = self.attn(self.norm1(x))
        x = x + out
        return x + self.mlp(self.norm2(x)), logits


class _PatchEmbed(nn.Module):
    def __init__(self, patch: int, dim: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch, patch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).flatten(2).transpose(1, 2)


class UIAVisionTransformer(nn.Module):
    """DeepfakeBench's UIA ViT (timm's ViT names plus ``norm_middle``, ``c_real/c_fake/c_cross``)."""

    def __init__(self, cfg: UIAViTConfig) -> None:
        super().__init__()
        dim, grid = cfg.width, cfg.input_size // cfg.patch_size
        self.cfg = cfg
        self.patch_embed = _PatchEmbed(cfg.patch_size, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, grid * grid + 1, dim))
        self.c_real = nn.Parameter(torch.tensor(0.6))
        self.c_fake = nn.Parameter(torch.tensor(0.6))
        self.c_cross = nn.Parameter(torch.tensor(0.2))
        self.blocks = nn.ModuleList(
            _Block(dim, cfg.heads, cfg.mlp_ratio) for _ in range(cfg.layers)
        )
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.norm_middle = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(2 * dim, 2)
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)
        self.norm_middle.requires_grad_(False)

    def forward(self, x: torch.Tensor, step: float) -> dict[str, torch.Tensor]:
        """Logits, the head's input, patch features [B, g, g, D] and attention logits."""
        cfg = self.cfg
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        maps = []
        for i, block in enumerate(self.blocks):
            if i == cfg.feat_block:
                patch_feat = self.norm_middle(x)
            x, logits = block(x)
            if i in cfg.attn_blocks:
                maps.append(logits)
        x = self.norm(x)
        attn = torch.cat(maps, dim=1)  # [B, blocks x heads, N, N]
        cls, patches = x[:, 0], x[:, 1:]
        b, p, _ = patches.shape
        if step < PROGRESSIVE_START:
            weights = torch.full((b, 1, p), 1.0 / p, device=x.device, dtype=patches.dtype)
        else:
            w = torch.sigmoid(torch.tensor(-PROGRESSIVE_K * (step - PROGRESSIVE_THR)))
            loc = torch.sigmoid(attn[:, :, 0, 1:].mean(dim=1)).reshape(b, 1, p)
            weights = ((w * torch.ones_like(loc) + (1 - w) * loc) / p).to(patches.dtype)
        feat = torch.cat([cls, torch.bmm(weights, patches).squeeze(1)], dim=-1)
        g = math.isqrt(p)
        return {
            "logits": self.head(feat),
            "feat": feat,
            "patch_feat": patch_feat[:, 1:].reshape(b, g, g, -1),
            "attn": attn,
        }


def patch_consistency_loss(
    attn_map: torch.Tensor,
    label: torch.Tensor,
    fake_patch: torch.Tensor,
    c_real: torch.Tensor,
    c_fake: torch.Tensor,
    c_cross: torch.Tensor,
) -> torch.Tensor:
    """DeepfakeBench's ``PatchConsistencyLoss`` on ``attn_map`` [B, P, P] (sigmoid of the mean
    patch-to-patch attention logits), ``fake_patch`` bool [B, P] (used for the fakes)."""
    p = attn_map.shape[-1]
    eye = torch.eye(p, device=attn_map.device, dtype=attn_map.dtype)
    total = attn_map.new_zeros(())
    real = attn_map[label == 0]
    if len(real):
        target = (1 - c_real) * eye + c_real
        total = total + (real - target).abs().sum() / (len(real) * (p * p - p))
    fake = attn_map[label == 1]
    if len(fake):
        f = fake_patch[label == 1].to(attn_map.dtype)
        both_fake, both_real = f[:, :, None] * f[:, None], (1 - f)[:, :, None] * (1 - f)[:, None]
        target = c_cross + (c_fake - c_cross) * both_fake + (c_real - c_cross) * both_real
        total = total + (fake - target).abs().sum() / (len(fake) * (p * p - p))
    return total


def mahalanobis(x: torch.Tensor, mean: torch.Tensor, precision: torch.Tensor) -> torch.Tensor:
    """Distance of each row of ``x`` [N, D] to a Gaussian (DeepfakeBench's ``mahalanobis_distance``)."""
    d = x - mean
    return torch.einsum("im,mn,in->i", d, precision, d).sqrt()


def fit_gaussian(samples: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, Ledoit-Wolf precision) of ``samples`` [N, D], float32 (as DeepfakeBench fits it)."""
    from sklearn.covariance import LedoitWolf

    precision = LedoitWolf().fit(samples.float().numpy()).precision_
    return samples.mean(dim=0), torch.from_numpy(precision).float()


@register_detector("uia_vit", family="Spatial")
class UIAViT(Detector):
    """DeepfakeBench's UIA-ViT (ViT-B/16, 85,801,733 trainable parameters)."""

    Config = UIAViTConfig
    deepfakebench_name = "uia_vit"
    test_input_size = 32
    test_config = {"width": 32, "layers": 3, "heads": 2, "attn_blocks": (1, 2), "feat_block": 1}
    late_params = frozenset({"model.c_real", "model.c_fake", "model.c_cross"})

    def __init__(self, cfg: UIAViTConfig) -> None:
        super().__init__(cfg)
        self.model = UIAVisionTransformer(cfg)
        dim = cfg.width
        self.register_buffer("batch_count", torch.zeros((), dtype=torch.long))
        self.register_buffer("stats_fitted", torch.zeros((), dtype=torch.bool))
        for cls in ("real", "fake"):
            self.register_buffer(f"{cls}_mean", torch.zeros(dim))
            self.register_buffer(f"{cls}_precision", torch.zeros(dim, dim))
        self.schedule: tuple[int, int] | None = None
        self._warned = False
        self._features: dict[str, list[torch.Tensor]] = {"real": [], "fake": []}
        path = local_weights(cfg.pretrained, "UIA-ViT's ImageNet ViT-B/16 (a timm state dict)")
        if path is not None:
            self._load_imagenet(path)

    def _load_imagenet(self, path: str) -> None:
        state, _ = read_weight_files(path)
        state = {k: v for k, v in state.items() if not k.startswith(("head.", "pre_logits."))}
        load_matching(
            self.model,
            state,
            path,
            not_in_file=("norm_middle.", "head.", "c_real", "c_fake", "c_cross"),
            hint="UIA-ViT loads a timm ViT-B/16 ImageNet file (vit_base_patch16_224 names)",
        )

    def set_schedule(self, steps_per_epoch: int, epochs: int) -> None:
        self.schedule = (max(int(steps_per_epoch), 1), max(int(epochs), 1))

    def _step(self) -> float:
        """Training progress for the progressive localisation (1 in evaluation)."""
        if not self.training:
            return 1.0
        if self.schedule is None:
            return 0.0
        per_epoch, epochs = self.schedule
        return int(self.batch_count) / (per_epoch * epochs)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        out = self.model(batch["image"], self._step())
        attn = out.pop("attn")
        out["attn_map"] = torch.sigmoid(attn[:, :, 1:, 1:].mean(dim=1))
        if self.training:
            if self.schedule is None and not self._warned:
                self._warned = True
                log.warning(
                    "uia_vit: no training schedule (set_schedule); training as in the first epoch"
                )
            elif self.schedule is not None:
                self._collect(out["patch_feat"].detach(), batch["label"])
            self.batch_count += 1
        return self.outputs(out.pop("logits"), out.pop("feat"), **out)

    def _collect(self, patch_feat: torch.Tensor, label: torch.Tensor) -> None:
        n, m = self.cfg.stat_samples, self.cfg.inner_margin
        g = patch_feat.shape[1]
        real = patch_feat[torch.where(label == 0)[0][:n]]
        fake = patch_feat[torch.where(label == 1)[0][:n], m : g - m, m : g - m]
        for cls, feats in (("real", real), ("fake", fake)):
            self._features[cls].append(feats.reshape(-1, feats.shape[-1]).float().cpu())

    def _fit(self) -> None:
        """Fit both Gaussians to the features of the last half epoch (then forget them)."""
        feats = {k: torch.cat(v) if v else torch.empty(0) for k, v in self._features.items()}
        self._features = {"real": [], "fake": []}
        if min(len(v) for v in feats.values()) < 2:
            log.warning(
                "uia_vit: too few patch features to fit the Gaussians; keeping the last fit"
            )
            return
        for cls, samples in feats.items():
            mean, precision = fit_gaussian(samples)
            getattr(self, f"{cls}_mean").copy_(mean)
            getattr(self, f"{cls}_precision").copy_(precision)
        self.stats_fitted.fill_(True)

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """CE; from the second epoch on + the patch-consistency terms (module docstring)."""
        label = batch["label"]
        ce = F.cross_entropy(out["logits"], label)
        terms = {"total": ce, "ce": ce}
        if not self.training or self.schedule is None:
            return terms
        count, per_epoch = int(self.batch_count), self.schedule[0]
        if count > per_epoch and bool(self.stats_fitted):
            terms |= self._consistency_terms(out, label)
            terms["total"] = ce + terms["pcl_total"]
        if count % max(per_epoch // 2, 1) == 0:
            self._fit()
        return terms

    def _consistency_terms(
        self, out: dict[str, torch.Tensor], label: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        model, (w_pcl, w_c, w_cross) = self.model, self.cfg.loss_weights
        feat = loss_precision(out["patch_feat"])
        b, g, _, d = feat.shape
        flat = feat.reshape(-1, d)
        with torch.no_grad():
            gap = mahalanobis(flat, self.real_mean, self.real_precision) - mahalanobis(
                flat, self.fake_mean, self.fake_precision
            )
        fake_patch = (F.relu(gap) > 0).reshape(b, g * g)
        pcl = patch_consistency_loss(
            loss_precision(out["attn_map"]),
            label,
            fake_patch,
            model.c_real,
            model.c_fake,
            model.c_cross,
        )
        reg = 1 / model.c_real.abs() + 1 / model.c_fake.abs()
        return {
            "pcl": pcl,
            "c_real": model.c_real.detach(),
            "c_fake": model.c_fake.detach(),
            "c_cross": model.c_cross.detach(),
            "pcl_total": w_pcl * pcl + w_c * reg + w_cross * model.c_cross.abs(),
        }

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DeepfakeBench's ``model.*`` keys are ours; the training-state buffers (not in its
        files) start afresh."""
        out = remap(state_dict, [("model.", "model.")])
        own = self.state_dict()  # (shapes only: this may run on the meta device)
        return out | {k: torch.zeros(own[k].shape, dtype=own[k].dtype) for k in STATE}
