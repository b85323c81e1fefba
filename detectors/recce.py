"""RECCE (Cao et al., "End-to-End Reconstruction-Classification Learning for Face Forgery
Detection", CVPR 2022), following the authors' code (VISION-SJTU/RECCE).

* Encoder: Xception (timm ``legacy_xception``). Training inputs get white noise (std 1e-6) on a
  random half of the batch.
* Decoder (Sec. 3.2) from block 4's 728-channel map: three (nearest x2 upsampling, separable
  conv, BN, ReLU) stages with Xception blocks in between (256 -> 128 -> 64 channels) and a 1x1
  conv + tanh to RGB; the reconstruction is learned on real faces only (L1, ``exp_recons_loss``).
* Multi-scale graph reasoning (Sec. 3.3) over the encoder map after block 7 (vertices A) and the
  decoder maps (B: 2x2 patches of the 256-channel map, C: 4x4 patches of the 128-channel map),
  with learned neighbour re-weighting and gates, re-projected and added to the encoder map.
* Reconstruction-guided attention (Sec. 3.4) after block 8: a gate from ``|x - x_rec|``
  multiplies a 1x1-conv embedding of the features, plus the (dropped-out) features.
* Loss (Sec. 3.5): flooded cross-entropy ``|CE - 0.04| + 0.04`` + ``lambda_1`` * reconstruction +
  ``lambda_2`` * metric-learning loss on the batch cosine-similarity matrices of the pooled encoder
  and decoder embeddings (real-real pairs pulled together, real-fake pairs pushed apart);
  ``lambda_1 = lambda_2 = 0.1``.

Variants (``model.variant``; the network and its eval function are the same in both): ``paper``
trains with the loss above; ``deepfakebench`` (default) with DeepfakeBench's ``recce_detector.py``
loss, plain cross-entropy. DeepfakeBench checkpoints (the network under ``model.``; the detector's
unused second Xception ``backbone.*`` and the encoder's ImageNet ``fc`` are dropped) load through
:meth:`RECCE.map_deepfakebench_state_dict`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones.xception import FEATURES, create_xception
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector

_timm_xception = importlib.import_module("timm.models.xception")
_STEM = ("conv1", "bn1", "act1", "conv2", "bn2", "act2")  # timm legacy_xception layer names
_EXIT = ("block12", "conv3", "bn3", "act3", "conv4", "bn4", "act4")


@dataclass
class RECCEConfig(DetectorConfig):
    """Loss weights ``lambda_1`` (reconstruction), ``lambda_2`` (metric learning), flood level."""

    drop_rate: float = 0.2
    lambda_1: float = 0.1
    lambda_2: float = 0.1
    flood: float = 0.04
    variant: Literal["deepfakebench", "paper"] = "deepfakebench"

    def __post_init__(self) -> None:
        if not 0 <= self.drop_rate < 1:
            raise ValueError(f"drop_rate must be in [0, 1), got {self.drop_rate}")
        if min(self.lambda_1, self.lambda_2, self.flood) < 0:
            raise ValueError("lambda_1, lambda_2 and flood must be >= 0")


def _up_sep(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.UpsamplingNearest2d(scale_factor=2),
        _timm_xception.SeparableConv2d(cin, cout, 3, 1, 1),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class GraphReasoning(nn.Module):
    """Multi-scale graph reasoning (Sec. 3.3): vertices A [B, a, h, w] aggregate their r x r
    neighbourhoods of B and C (decoder maps at 2x and 4x the resolution)."""

    def __init__(
        self,
        a_in: int,
        a_out: int,
        b_in: int,
        b_out: int,
        c_in: int,
        c_out: int,
        ratios: tuple[int, int],
        drop: float,
    ) -> None:
        super().__init__()
        if a_out != b_out or a_out != c_out:
            raise ValueError("the gates need a_out == b_out == c_out")
        self.ratios = ratios
        self.a_embed = nn.Sequential(
            nn.Conv2d(a_in, a_out, 1, bias=False),
            nn.ReLU(True),
            nn.Conv2d(a_out, a_out, 1, bias=False),
        )
        self.gate_b = nn.Sequential(nn.Conv2d(a_in, a_out, 1, bias=False), nn.Sigmoid())
        self.gate_c = nn.Sequential(nn.Conv2d(a_in, a_out, 1, bias=False), nn.Sigmoid())
        self.b_embed = nn.Sequential(
            nn.Linear(b_in, b_out, bias=False), nn.ReLU(True), nn.Linear(b_out, b_out, bias=False)
        )
        self.c_embed = nn.Sequential(
            nn.Linear(c_in, c_out, bias=False), nn.ReLU(True), nn.Linear(c_out, c_out, bias=False)
        )
        self.reweight_b = nn.Sequential(nn.Linear(a_out + b_out, 1, bias=False), nn.ReLU(True))
        self.reweight_c = nn.Sequential(nn.Linear(a_out + c_out, 1, bias=False), nn.ReLU(True))
        self.reproject = nn.Sequential(
            nn.Conv2d(a_out + b_out + c_out, a_in, 1, bias=False),
            nn.ReLU(True),
            nn.Conv2d(a_in, a_in, 1, bias=False),
            nn.Dropout(drop),
        )

    @staticmethod
    def _patches(x: torch.Tensor, r: int) -> torch.Tensor:
        """[B, C, r*h, r*w] -> [B, r*r, h*w, C]: the r x r neighbourhood of every vertex."""
        b, c = x.shape[:2]
        return F.unfold(x, kernel_size=r, stride=r).reshape(b, c, r * r, -1).permute(0, 2, 3, 1)

    def _aggregate(
        self, emb_a: torch.Tensor, emb_n: torch.Tensor, reweight: nn.Module
    ) -> torch.Tensor:
        """Softmax-weighted sum over each vertex's neighbours: [B, N, a], [B, r2, N, n] -> [B, n, N]."""
        a = emb_a.unsqueeze(1).expand(-1, emb_n.shape[1], -1, -1)
        w = torch.softmax(reweight(torch.cat([a, emb_n], dim=-1)), dim=1)
        return (emb_n * w).sum(dim=1).transpose(1, 2)

    def forward(self, va: torch.Tensor, vb: torch.Tensor, vc: torch.Tensor) -> torch.Tensor:
        b, _, h, w = va.shape
        emb_a = self.a_embed(va).flatten(2)  # [B, a_out, N]
        emb_b = self.b_embed(self._patches(vb, self.ratios[0]))
        emb_c = self.c_embed(self._patches(vc, self.ratios[1]))
        if emb_b.shape[2] != emb_a.shape[2] or emb_c.shape[2] != emb_a.shape[2]:
            raise ValueError(
                f"decoder maps {tuple(vb.shape)}, {tuple(vc.shape)} do not tile the {h}x{w} encoder map"
            )
        agg_b = self._aggregate(emb_a.transpose(1, 2), emb_b, self.reweight_b) * (
            1 - self.gate_b(va).flatten(2)
        )
        agg_c = self._aggregate(emb_a.transpose(1, 2), emb_c, self.reweight_c) * (
            1 - self.gate_c(va).flatten(2)
        )
        fused = torch.sigmoid(torch.cat([agg_b, agg_c, emb_a], dim=1)).reshape(b, -1, h, w)
        return self.reproject(fused)


class GuidedAttention(nn.Module):
    """Reconstruction-guided attention (Sec. 3.4)."""

    def __init__(self, depth: int, drop: float) -> None:
        super().__init__()
        self.gated = nn.Sequential(
            nn.Conv2d(3, 3, 3, 1, 1, bias=False),
            nn.ReLU(True),
            nn.Conv2d(3, 1, 1, bias=False),
            nn.Sigmoid(),
        )
        self.h = nn.Sequential(
            nn.Conv2d(depth, depth, 1, 1, bias=False), nn.BatchNorm2d(depth), nn.ReLU(True)
        )
        self.dropout = nn.Dropout(drop)

    def forward(self, x: torch.Tensor, recons: torch.Tensor, feat: torch.Tensor) -> torch.Tensor:
        residual = F.interpolate(
            (x - recons).abs(), size=feat.shape[-2:], mode="bilinear", align_corners=True
        )
        return self.gated(residual) * self.h(feat) + self.dropout(feat)


def _similarity(x: torch.Tensor) -> torch.Tensor:
    """``(cos + 1) / 2`` between the pooled, L2-normalised embeddings of a batch: [B, B]."""
    e = F.normalize(F.adaptive_avg_pool2d(x, 1).flatten(1).float(), dim=1)
    return (e @ e.T + 1.0) / 2.0


def metric_learning_loss(
    similarities: list[torch.Tensor], label: torch.Tensor, eps: float = 1e-6
) -> torch.Tensor:
    """The authors' MLLoss: sum over matrices of ``max(0, 1 - mean_sim(real, real') + mean_sim(real, fake))``."""
    y = label.bool()
    diff = (y[:, None] ^ y[None, :]).float()
    same_real = (
        ~(y[:, None] | y[None, :] | torch.eye(len(y), dtype=torch.bool, device=y.device))
    ).float()
    loss = torch.zeros((), device=label.device)
    for sim in similarities:
        d = (sim * diff).sum() / (diff.sum() + eps)
        s = (sim * same_real).sum() / (same_real.sum() + eps)
        loss = loss + torch.clamp(1.0 - s + d, min=0.0)
    return loss


def reconstruction_loss(
    recons: torch.Tensor, image: torch.Tensor, label: torch.Tensor
) -> torch.Tensor:
    """Mean L1 between real faces and their reconstructions (0 when the batch has no real face)."""
    real = label == 0
    if not real.any():
        return recons.sum() * 0.0
    return (recons[real].float() - image[real].float()).abs().mean()


@register_detector("recce", family="Spatial")
class RECCE(Detector):
    """Xception encoder + decoder, graph reasoning and reconstruction-guided attention."""

    Config = RECCEConfig
    deepfakebench_name = "recce"

    def __init__(self, cfg: RECCEConfig) -> None:
        super().__init__(cfg)
        self.encoder = create_xception(cfg.pretrained)
        block = _timm_xception.Block
        self.decoder1 = _up_sep(728, 256)
        self.decoder2 = block(256, 256, 3, 1)
        self.decoder3 = _up_sep(256, 128)
        self.decoder4 = block(128, 128, 3, 1)
        self.decoder5 = _up_sep(128, 64)
        self.decoder6 = nn.Sequential(nn.Conv2d(64, 3, 1, 1, bias=False), nn.Tanh())
        self.reasoning = GraphReasoning(728, 256, 256, 256, 128, 256, (2, 4), cfg.drop_rate)
        self.attention = GuidedAttention(728, cfg.drop_rate)
        self.dropout = nn.Dropout(cfg.drop_rate)
        self.fc = nn.Linear(FEATURES, 2)

    def _run(self, names: tuple[str, ...], x: torch.Tensor) -> torch.Tensor:
        for name in names:
            x = getattr(self.encoder, name)(x)
        return x

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        x = batch["image"]
        if self.training:
            flip = (torch.rand(x.shape[0], 1, 1, 1, device=x.device) > 0.5).to(x.dtype)
            # drawn as DeepfakeBench's add_white_noise: float32 whatever x's dtype
            noise = torch.normal(0.0, 1e-6, size=x.shape, device=x.device).to(x.dtype)
            x_in = torch.clip(x + noise * flip, -1.0, 1.0)
        else:
            x_in = x
        emb = self._run(_STEM + ("block1", "block2", "block3", "block4"), x_in)
        d2 = self.decoder2(self.decoder1(self.dropout(emb)))
        d4 = self.decoder4(self.decoder3(d2))
        recons = F.interpolate(
            self.decoder6(self.decoder5(d4)), size=x.shape[-2:], mode="bilinear", align_corners=True
        )
        sims = [_similarity(emb), _similarity(d2), _similarity(d4)]
        emb = self._run(("block5", "block6", "block7"), emb)
        emb = self.reasoning(emb, d2, d4) + emb
        emb = self.attention(x, recons, self.encoder.block8(emb))
        emb = self._run(("block9", "block10", "block11") + _EXIT, emb)
        feat = F.adaptive_avg_pool2d(emb, 1).flatten(1)
        logits = self.fc(self.dropout(feat))
        return self.outputs(
            logits, feat, recons=recons, sim_encoder=sims[0], sim_d2=sims[1], sim_d4=sims[2]
        )

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``paper``: flooded CE + lambda_1 * L1 reconstruction of reals + lambda_2 * metric learning."""
        label = batch["label"]
        ce = F.cross_entropy(out["logits"], label)
        if self.cfg.variant == "deepfakebench":
            return {"total": ce, "ce": ce}
        flooded = (ce - self.cfg.flood).abs() + self.cfg.flood
        rec = reconstruction_loss(out["recons"], batch["image"], label)
        ml = metric_learning_loss([out["sim_encoder"], out["sim_d2"], out["sim_d4"]], label)
        total = flooded + self.cfg.lambda_1 * rec + self.cfg.lambda_2 * ml
        return {"total": total, "ce": ce, "reconstruction": rec, "metric": ml}

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        rules = [("model.encoder.", "encoder.")]
        rules += [(f"model.{n}.", f"{n}.") for n in ("fc", "attention")]
        rules += [(f"model.decoder{i}.", f"decoder{i}.") for i in range(1, 7)]
        names = {
            "va_embedding": "a_embed",
            "va_gated_b": "gate_b",
            "va_gated_c": "gate_c",
            "vb_embedding": "b_embed",
            "vc_embedding": "c_embed",
            "reweight_ab": "reweight_b",
            "reweight_ac": "reweight_c",
            "reproject": "reproject",
        }
        rules += [(f"model.reasoning.{a}.", f"reasoning.{b}.") for a, b in names.items()]
        return remap(state_dict, rules, drop=["backbone.", "model.encoder.fc."])
