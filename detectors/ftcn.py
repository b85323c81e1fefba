"""FTCN (Zheng et al., "Exploring Temporal Coherence for More General Video Face Forgery
Detection", ICCV 2021), DeepfakeBench v2's ``training/detectors/ftcn_detector.py``.

The fully temporal convolution network: SlowFast's I3D ResNet-50 with every spatial kernel set to
1 and every spatial stride replaced by a 1x2x2 max-pool after its BN (``temporal_only``, see
:mod:`detectors.backbones.resnet3d`), no temporal pooling, cut after ``s4`` (1024 channels at 1/16
resolution). Its map is averaged over space into ``clip_size`` time tokens, and the Temporal
Transformer (a class token, learned position embeddings, one pre-norm block with 16 heads of 64
and an MLP of 2048, dropout 0.1) reads them; a LayerNorm + ``Linear(1024, 1)`` on the class token
gives the logit ``z``. DeepfakeBench returns ``sigmoid(z)`` and trains it with ``BCELoss``; here
``logits = [0, z]`` (its cross-entropy is that BCE) and ``feat`` is the normalised class token [B, 1024].
Clips of 16 frames at 224x224, mean = std = 0.5.

``pretrained``: DeepfakeBench's ``I3D_8x8_R50.pth`` (checked to be a complete SlowFast I3D
ResNet-50, as DeepfakeBench loads it strictly). As there, only what survives FTCN's conversion is
used: every BN, the temporal ``a`` and the 1x1x1 ``c`` convolutions and ``s2``'s projection; the
rebuilt convolutions, ``s5`` and the head start from scratch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones import PretrainedWeightsError
from fairforensics.detectors.backbones.coverage import fitting_tensors
from fairforensics.detectors.backbones.resnet3d import ResNet3d, slowfast_rules
from fairforensics.detectors.base import ClipDetectorConfig, Detector
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.i3d import I3D_FILE, KINETICS_FILE, read_slowfast_file
from fairforensics.detectors.registry import register_detector


@dataclass
class FTCNConfig(ClipDetectorConfig):
    """``width``: SlowFast's WIDTH_PER_GROUP (64; smaller only for quick tests); the Temporal
    Transformer's ``heads``, ``head_dim``, ``mlp_dim`` and ``dropout`` (also on the embeddings)."""

    clip_size: int = 16
    input_size: int = 224
    width: int = 64
    heads: int = 16
    head_dim: int = 64
    mlp_dim: int = 2048
    dropout: float = 0.1

    def __post_init__(self) -> None:
        for name in ("clip_size", "width", "heads", "head_dim", "mlp_dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


class TimeBlock(nn.Module):
    """Pre-norm transformer block: multi-head self-attention (no qkv bias), then GELU MLP."""

    def __init__(self, dim: int, heads: int, head_dim: int, mlp_dim: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        inner = heads * head_dim
        self.attn_norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * inner, bias=False)
        self.proj = nn.Linear(inner, dim)
        self.mlp_norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp_dim)
        self.fc2 = nn.Linear(mlp_dim, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        q, k, v = (
            self.qkv(self.attn_norm(x)).reshape(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        )
        att = F.scaled_dot_product_attention(q, k, v)  # scale head_dim ** -0.5, as DFB's
        x = x + self.drop(self.proj(att.transpose(1, 2).reshape(b, n, -1)))
        hidden = self.drop(F.gelu(self.fc1(self.mlp_norm(x))))
        return x + self.drop(self.fc2(hidden))


class TimeTransformer(nn.Module):
    """Class token + position embeddings over ``tokens`` time steps, one :class:`TimeBlock`; returns
    the LayerNorm of the class token (the input of the 1-logit head)."""

    def __init__(self, tokens: int, dim: int, cfg: FTCNConfig) -> None:
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.randn(1, tokens + 1, dim))
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(
            [TimeBlock(dim, cfg.heads, cfg.head_dim, cfg.mlp_dim, cfg.dropout)]
        )
        self.norm = nn.LayerNorm(dim)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        n = tokens.shape[1]
        if n + 1 > self.pos_embedding.shape[1]:
            raise ValueError(
                f"clips of {n} frames, but the model has {self.pos_embedding.shape[1] - 1} time "
                "positions (model.clip_size)"
            )
        x = torch.cat([self.cls_token.expand(tokens.shape[0], -1, -1), tokens], dim=1)
        x = self.drop(x + self.pos_embedding[:, : n + 1])
        for block in self.blocks:
            x = block(x)
        return self.norm(x[:, 0])


@register_detector("ftcn", family="Video")
class FTCN(Detector):
    """Temporal-only I3D ResNet-50 to s4 + Temporal Transformer (14,765,889 parameters)."""

    Config = FTCNConfig
    input_kind = "clip"
    deepfakebench_name = "ftcn"
    test_input_size = 32
    test_clip_size = 4

    def __init__(self, cfg: FTCNConfig) -> None:
        super().__init__(cfg)
        self.backbone = ResNet3d(cfg.width, stages=3, temporal_only=True, time_pool=False)
        dim = self.backbone.num_features
        self.transformer = TimeTransformer(cfg.clip_size, dim, cfg)
        self.head = nn.Linear(dim, 1)
        if cfg.pretrained not in (False, None, "", "false", "none"):
            self.load_kinetics(cfg.pretrained)

    def load_kinetics(self, path: str | Path) -> None:
        """The parts of SlowFast's Kinetics I3D (``I3D_8x8_R50.pth``) that FTCN keeps."""
        if path is True or path == "timm":
            raise PretrainedWeightsError(f"ftcn has no hub weights; pass a local {KINETICS_FILE}")
        state = read_slowfast_file(path)
        with torch.device("meta"):  # the file must be a whole I3D, as in DeepfakeBench
            i3d = ResNet3d(self.cfg.width)
        own = {f"backbone.{k}": v for k, v in i3d.state_dict().items()}
        own |= {k: v for k, v in state.items() if k.startswith("head.projection.")}
        # unknown keys pass unchanged and are reported as unexpected
        mapped = remap(state, [*slowfast_rules("", "backbone."), ("", "")])
        required = set(own) | {"head.projection.weight", "head.projection.bias"}
        how = f"pass a local copy of DeepfakeBench's {KINETICS_FILE} or set 'pretrained: false'"
        fits = fitting_tensors(path, mapped, own, required, I3D_FILE, how)
        ours = self.state_dict()
        replaced = {f"backbone.{name}.weight" for name in self.backbone.replaced}
        kept = {
            k: v
            for k, v in fits.items()
            if k in ours and k not in replaced and v.shape == ours[k].shape
        }
        self.load_state_dict(kept, strict=False)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        maps = self.backbone(batch["image"].transpose(1, 2))  # [B, 1024, T, h, w]
        tokens = maps.mean(dim=(3, 4)).transpose(1, 2)  # [B, T, 1024]
        feat = self.transformer(tokens)
        z = self.head(feat)
        return self.outputs(torch.cat([torch.zeros_like(z), z], dim=1), feat)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DeepfakeBench's ``resnet.*`` (temporal-only SlowFast names, BN+pool ``Sequential``s as
        ``bn.0``) and ``resnet.head.time_T.*`` onto ours."""
        t, blk = "resnet.head.time_T.", "resnet.head.time_T.transformer.layers.0."
        rules = [
            (f"{t}pos_embedding", "transformer.pos_embedding"),
            (f"{t}cls_token", "transformer.cls_token"),
            (f"{blk}0.fn.norm.", "transformer.blocks.0.attn_norm."),
            (f"{blk}0.fn.fn.to_qkv.", "transformer.blocks.0.qkv."),
            (f"{blk}0.fn.fn.to_out.0.", "transformer.blocks.0.proj."),
            (f"{blk}1.fn.norm.", "transformer.blocks.0.mlp_norm."),
            (f"{blk}1.fn.fn.net.0.", "transformer.blocks.0.fc1."),
            (f"{blk}1.fn.fn.net.3.", "transformer.blocks.0.fc2."),
            (f"{t}mlp_head.0.", "transformer.norm."),
            (f"{t}mlp_head.1.", "head."),
            *slowfast_rules("resnet.", "backbone.", stages=3, temporal_only=True),
        ]
        return remap(state_dict, rules)
