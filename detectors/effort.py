"""Effort (Yan et al., "Orthogonal Subspace Decomposition for Generalizable AI-Generated Image
Detection", ICML 2025), DeepfakeBench v2's ``effort_detector.py``.

The CLIP ViT-L/14 vision tower (CLIP mean/std, 224 px) whose self-attention projections (q, k, v,
out: 4 per layer, 96 in all) are split by SVD, ``W = U S V^T``: the principal part ``weight_main``
(the top ``n - residual_rank`` singular directions, DeepfakeBench: 1023 of 1024) and the bias stay
frozen with every other tower weight, and only the residual ``U_residual @ diag(S_residual) @
V_residual`` (rank ``residual_rank``, 1) and the linear head on ``pooler_output`` train
(198,754 parameters).

The SVD runs once, when CLIP weights are loaded (``pretrained:`` a local CLIP ViT-L/14 file or
folder, see :mod:`detectors.backbones.clip_vit`); weights loaded from a detector checkpoint (ours
or DeepfakeBench's) are already decomposed. With ``pretrained: false`` no SVD runs: the frozen part
is the tower's random weight and the residual starts at zero (``S_residual = 0``; ``U``/``V``
random orthonormal), so building is as cheap as building CLIP.

Loss. DeepfakeBench's ``get_losses`` is cross-entropy only (its constraint functions are defined
but unused), the default here (``orthogonal_weight = sv_weight = 0``). The paper's constraints,
averaged over the decomposed layers as the official Effort code computes them:

* orthogonality (``orthogonal_form: basis``): ``0.5 ||[U_r U][U_r U]^T - I||_F + 0.5 ||[V_r; V]
  [V_r; V]^T - I||_F``, with the frozen singular vectors ``U_r``/``V_r`` of the principal part; it
  is evaluated in closed form from the residual's starting factors (``*_residual_init`` buffers),
  so the frozen ``1024 x 1023`` factors are not stored (with random weights, ``pretrained: false``,
  the principal basis is taken as the complement of the starting residual). ``residual``: DeepfakeBench's
  ``SVDResidualLinear.compute_orthogonal_loss``, ``0.5 ||U U^T - I||_F + 0.5 ||V V^T - I||_F`` on the
  residual factors alone;
* singular values (``sv_weight``): ``| ||W||_F^2 - ||W_0||_F^2 |``, the squared Frobenius norm of
  the current weight kept at the original one's.

``configs/detectors/paper/effort.yaml`` sets both weights to 1 (the official code's ``lambda_reg``).

Diagnostics, as DeepfakeBench's ``get_losses`` returns (and its trainer logs) them: ``ce_real`` and
``ce_fake`` (its ``real_loss``/``fake_loss``), the cross-entropy over the batch's real and over its
fake images alone (0 when the batch has none of the class); logged, not trained on.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones.clip_vit import ClipVitConfig, build_clip_vision
from fairforensics.detectors.backbones.vit_weights import NO_WEIGHTS
from fairforensics.detectors.base import Detector
from fairforensics.detectors.clip import load_foundation
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector

log = logging.getLogger(__name__)

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
_FLOOR = 1e-12  # squared norms are floored here before the square root (its gradient at 0)
RESIDUAL = ("S_residual", "U_residual", "V_residual")


@dataclass
class EffortConfig(ClipVitConfig):
    """CLIP ViT-L/14 by default; ``residual_rank``: trained singular directions per projection;
    constraint weights (0: DeepfakeBench's cross-entropy only)."""

    width: int = 1024
    layers: int = 24
    heads: int = 16
    mlp_dim: int = 4096
    patch_size: int = 14
    mean: tuple[float, float, float] = CLIP_MEAN
    std: tuple[float, float, float] = CLIP_STD
    residual_rank: int = 1
    orthogonal_weight: float = 0.0
    sv_weight: float = 0.0
    orthogonal_form: Literal["basis", "residual"] = "basis"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 1 <= self.residual_rank < self.width:
            raise ValueError(f"residual_rank must be in [1, width), got {self.residual_rank}")


class SVDResidualLinear(nn.Module):
    """``x @ (weight_main + U_residual @ diag(S_residual) @ V_residual)^T + bias``.

    ``weight_main`` and ``bias`` are frozen; the three residual factors train. The buffers
    ``*_residual_init`` keep the residual as it was decomposed (the constraints' reference).
    """

    def __init__(self, in_features: int, out_features: int, rank: int, bias: bool = True) -> None:
        super().__init__()
        self.weight_main = nn.Parameter(torch.empty(out_features, in_features), requires_grad=False)
        self.bias = nn.Parameter(torch.empty(out_features), requires_grad=False) if bias else None
        self.S_residual = nn.Parameter(torch.zeros(rank))
        self.U_residual = nn.Parameter(torch.empty(out_features, rank))
        self.V_residual = nn.Parameter(torch.empty(rank, in_features))
        self.register_buffer("U_residual_init", torch.empty(out_features, rank))
        self.register_buffer("S_residual_init", torch.zeros(rank))
        self.register_buffer("V_residual_init", torch.empty(rank, in_features))

    @classmethod
    def from_linear(cls, linear: nn.Linear, rank: int, svd: bool) -> SVDResidualLinear:
        """Split ``linear`` by SVD (``svd``), or keep its weight whole with a zero residual."""
        out_f, in_f = linear.weight.shape
        new = cls(in_f, out_f, rank, bias=linear.bias is not None)
        with torch.no_grad():
            if linear.bias is not None:
                new.bias.copy_(linear.bias)
            if svd:
                u, s, vh = torch.linalg.svd(linear.weight.double(), full_matrices=False)
                r = len(s) - rank
                new.weight_main.copy_(u[:, :r] @ torch.diag(s[:r]) @ vh[:r])
                new.U_residual.copy_(u[:, r:])
                new.S_residual.copy_(s[r:])
                new.V_residual.copy_(vh[r:])
            else:
                new.weight_main.copy_(linear.weight)
                new.U_residual.copy_(torch.linalg.qr(torch.randn(out_f, rank)).Q)
                new.V_residual.copy_(torch.linalg.qr(torch.randn(in_f, rank)).Q.T)
            new.reset_reference()
        return new

    def reset_reference(self) -> None:
        """Make the current residual the constraints' reference (``*_residual_init``)."""
        with torch.no_grad():
            for name in RESIDUAL:
                getattr(self, f"{name}_init").copy_(getattr(self, name))

    def weight(self) -> torch.Tensor:
        """The effective weight ``weight_main + U diag(S) V``."""
        return self.weight_main + self.U_residual @ torch.diag(self.S_residual) @ self.V_residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight(), self.bias)

    def orthogonal_loss(self, form: str) -> torch.Tensor:
        """The orthogonality constraint (module docstring), ``form`` ``basis`` or ``residual``."""
        u, v = self.U_residual, self.V_residual
        gram_u, gram_v = u.T @ u, v @ v.T
        eye = torch.eye(gram_v.shape[0], device=v.device, dtype=v.dtype)
        if form == "residual":
            sq_u = gram_u.square().sum() - 2 * u.square().sum() + u.shape[0]
            sq_v = (gram_v - eye).square().sum()
        else:
            if self.weight_main.shape[0] != self.weight_main.shape[1]:
                raise ValueError("the basis orthogonality needs square projections")
            u0, v0 = self.U_residual_init, self.V_residual_init
            sq_u = (
                gram_u.square().sum() - 2 * (u0.T @ u).square().sum() + (u0.T @ u0).square().sum()
            )
            sq_v = (
                2 * (v.square().sum() - (v @ v0.T).square().sum()) + (gram_v - eye).square().sum()
            )
        return 0.5 * sq_u.clamp_min(_FLOOR).sqrt() + 0.5 * sq_v.clamp_min(_FLOOR).sqrt()

    def sv_loss(self) -> torch.Tensor:
        """``| ||W||_F^2 - ||W_0||_F^2 |`` (``W_0`` = the weight as decomposed)."""
        original = self.weight_main.square().sum() + self.S_residual_init.square().sum()
        return (self.weight().square().sum() - original).abs()


def class_losses(logits: torch.Tensor, label: torch.Tensor) -> dict[str, torch.Tensor]:
    """``ce_real``/``ce_fake``: the cross-entropy over the real (label 0) and over the fake
    (label 1) images alone, 0 for a class the batch lacks (DeepfakeBench's diagnostics)."""
    terms = {}
    for name, cls in (("ce_real", 0), ("ce_fake", 1)):
        chosen = label == cls
        terms[name] = (
            F.cross_entropy(logits[chosen], label[chosen])
            if bool(chosen.any())
            else logits.new_zeros(())
        )
    return terms


def decompose_attention(tower: nn.Module, rank: int, svd: bool) -> int:
    """Replace every ``nn.Linear`` inside the tower's ``self_attn`` modules by an
    :class:`SVDResidualLinear` (DeepfakeBench's ``apply_svd_residual_to_self_attn``); freeze every
    tower weight but the residuals. Returns the number of projections decomposed."""
    count, threads = 0, torch.get_num_threads()
    if svd:  # one thread per 1024 x 1024 SVD: on the shared 2-core CPU two threads were 8 x
        torch.set_num_threads(1)  # slower (13 s against 1.5 s a matrix at load average 13)
    try:
        for name, module in list(tower.named_modules()):
            if name.rsplit(".", 1)[-1] != "self_attn":
                continue
            for child_name, child in list(module.named_children()):
                if isinstance(child, nn.Linear):
                    setattr(module, child_name, SVDResidualLinear.from_linear(child, rank, svd))
                    count += 1
    finally:
        torch.set_num_threads(threads)
    for name, p in tower.named_parameters():
        p.requires_grad = name.rsplit(".", 1)[-1] in RESIDUAL
    return count


@register_detector("effort", family="Spatial")
class Effort(Detector):
    """CLIP ViT-L/14 with SVD-residual attention projections + Linear(1024, 2)."""

    Config = EffortConfig
    deepfakebench_name = "effort"
    test_input_size = 28
    test_config = {"width": 32, "layers": 2, "heads": 2, "mlp_dim": 64}

    def __init__(self, cfg: EffortConfig) -> None:
        super().__init__(cfg)
        self.backbone = build_clip_vision(cfg)
        svd = cfg.pretrained not in NO_WEIGHTS
        load_foundation(self.backbone, cfg)
        start = time.perf_counter()
        n = decompose_attention(self.backbone, cfg.residual_rank, svd=svd)
        if svd:
            log.info(
                "effort: %d attention projections split by SVD in %.1f s",
                n,
                time.perf_counter() - start,
            )
        self.head = nn.Linear(cfg.width, 2)

    def svd_layers(self) -> list[SVDResidualLinear]:
        return [m for m in self.backbone.modules() if isinstance(m, SVDResidualLinear)]

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        feat = self.backbone(pixel_values=batch["image"]).pooler_output
        return self.outputs(self.head(feat), feat)

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Cross-entropy (+ the weighted constraints averaged over the decomposed layers), and
        the per-class diagnostics ``ce_real``/``ce_fake``."""
        cfg: EffortConfig = self.cfg
        logits, label = out["logits"], batch["label"]
        ce = F.cross_entropy(logits, label)
        terms = {"total": ce, "ce": ce, **class_losses(logits.detach(), label)}
        layers = self.svd_layers()
        if cfg.orthogonal_weight:
            orth = torch.stack([m.orthogonal_loss(cfg.orthogonal_form) for m in layers]).mean()
            terms["orthogonal"] = orth
            terms["total"] = terms["total"] + cfg.orthogonal_weight * orth
        if cfg.sv_weight:
            sv = torch.stack([m.sv_loss() for m in layers]).mean()
            terms["singular_values"] = sv
            terms["total"] = terms["total"] + cfg.sv_weight * sv
        return terms

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DeepfakeBench's keys are ours; the constraints' references (``*_residual_init``, not in
        its files) are the imported residuals."""
        out = remap(
            state_dict,
            [("backbone.", "backbone."), ("head.", "head.")],
            drop=["backbone.embeddings.position_ids"],  # persistent in transformers < 4.31
        )
        for key in [k for k in out if k.rsplit(".", 1)[-1] in RESIDUAL]:
            out[f"{key}_init"] = out[key].clone()
        return out
