"""TALL (Xu et al., "TALL: Thumbnail Layout for Deepfake Video Detection", ICCV 2023),
DeepfakeBench v2's ``training/detectors/tall_detector.py`` (TALL-Swin).

A clip of ``clip_size`` frames (4) becomes one thumbnail: the frames tile a ``thumbnail_rows`` x
``thumbnail_rows`` grid (row-major; 2x2 at 224 -> 448x448), resized back to ``input_size`` with
bilinear interpolation. A Swin-B (timm's ``SwinTransformer``: patch 4, embed 128, depths 2-2-18-2,
heads 4-8-16-32, windows 14-14-14-7 as DeepfakeBench configures it, drop path 0.1) reads the
thumbnail, with a learned position embedding per frame added to the patches of that frame's tile
(``frame_pos_embed``). ``feat`` is the pooled 1024-d feature, ``logits`` its ``Linear(1024, 2)``;
cross-entropy, ImageNet mean/std.

``pretrained``: an ImageNet Swin-B file (patch 4, window 7, 224), in Microsoft's layout
(``swin_base_patch4_window7_224_22k.pth``: ``{"model": ...}``, patch merging at the end of a stage)
or timm's (``swin_base_patch4_window7_224``). As in DeepfakeBench's ``load_pretrained``, its
relative position bias tables are resized bilinearly to the windows here, its classifier and
buffers are dropped, and ``frame_pos_embed`` starts at random; every other tensor must come from
the file. DeepfakeBench's ``tall.yaml`` itself says ``pretrained: null`` (random initialisation).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones import (
    PretrainedWeightsError,
    read_torch_file,
    strip_module_prefix,
)
from fairforensics.detectors.backbones.coverage import fitting_tensors
from fairforensics.detectors.base import ClipDetectorConfig, Detector
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
SWIN_FILE = "swin_base_patch4_window7_224_22k.pth"
_HOW = f"pass a local Swin-B file (e.g. Microsoft's {SWIN_FILE}) or set 'pretrained: false'"
#: constants of DeepfakeBench's Swin that timm recomputes (non-persistent buffers there)
_BUFFERS = ("relative_position_index", "attn_mask")


@dataclass
class TALLConfig(ClipDetectorConfig):
    """DeepfakeBench's ``tall.yaml`` values; ``clip_size`` must be ``thumbnail_rows ** 2``."""

    clip_size: int = 4
    input_size: int = 224
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    thumbnail_rows: int = 2
    patch_size: int = 4
    embed_dim: int = 128
    depths: tuple[int, ...] = (2, 2, 18, 2)
    num_heads: tuple[int, ...] = (4, 8, 16, 32)
    window_size: tuple[int, ...] = (14, 14, 14, 7)
    mlp_ratio: float = 4.0
    drop_rate: float = 0.0
    drop_path_rate: float = 0.1

    def __post_init__(self) -> None:
        if self.thumbnail_rows < 1 or self.clip_size != self.thumbnail_rows**2:
            raise ValueError(
                f"clip_size must be thumbnail_rows ** 2 (a square thumbnail), got clip_size "
                f"{self.clip_size} and thumbnail_rows {self.thumbnail_rows}"
            )
        if not len(self.depths) == len(self.num_heads) == len(self.window_size):
            raise ValueError("depths, num_heads and window_size need one value per stage")
        grid = self.input_size // self.patch_size
        if grid % 2 ** (len(self.depths) - 1):
            raise ValueError(
                f"input_size / patch_size = {grid} must be divisible by "
                f"{2 ** (len(self.depths) - 1)} (one patch merging per stage)"
            )


@register_detector("tall", family="Video")
class TALL(Detector):
    """Thumbnail of the clip -> Swin-B with frame position embeddings (86,920,506 parameters)."""

    Config = TALLConfig
    input_kind = "clip"
    deepfakebench_name = "tall"
    test_input_size = 32

    def __init__(self, cfg: TALLConfig) -> None:
        super().__init__(cfg)
        from timm.models.swin_transformer import SwinTransformer

        self.backbone = SwinTransformer(
            img_size=cfg.input_size,
            patch_size=cfg.patch_size,
            num_classes=2,
            embed_dim=cfg.embed_dim,
            depths=tuple(cfg.depths),
            num_heads=tuple(cfg.num_heads),
            window_size=tuple(cfg.window_size),
            mlp_ratio=cfg.mlp_ratio,
            drop_rate=cfg.drop_rate,
            drop_path_rate=cfg.drop_path_rate,
        )
        _check_windows(self.backbone, cfg)
        self.frame_pos_embed = nn.Parameter(torch.zeros(1, cfg.clip_size, cfg.embed_dim))
        nn.init.trunc_normal_(self.frame_pos_embed, std=0.02)
        self.register_buffer("patch_frame", self._patch_frames(), persistent=False)
        if cfg.pretrained not in (False, None, "", "false", "none"):
            self.load_swin(cfg.pretrained)

    def _patch_frames(self) -> torch.Tensor:
        """The frame whose embedding each patch of the thumbnail gets (``clip_size`` for none):
        DeepfakeBench's ``create_image_pos_embed``, where frame i's block starts at row
        ``(i // rows) * (grid // rows)`` and column ``(i % rows) * (grid // rows)``."""
        rows, grid = self.cfg.thumbnail_rows, self.cfg.input_size // self.cfg.patch_size
        tile = grid // rows
        index = torch.full((grid, grid), self.cfg.clip_size, dtype=torch.long)
        for i in range(self.cfg.clip_size):
            r, c = (i // rows) * tile, (i % rows) * tile
            index[r : r + tile, c : c + tile] = i
        return index

    def thumbnail(self, clips: torch.Tensor) -> torch.Tensor:
        """[B, T, 3, H, W] -> the resized thumbnail [B, 3, S, S] (S = ``input_size``)."""
        b, t, c, h, w = clips.shape
        size, rows = self.cfg.input_size, self.cfg.thumbnail_rows
        if t != self.cfg.clip_size:
            raise ValueError(f"tall expects clips of {self.cfg.clip_size} frames, got {t}")
        x = clips.reshape(b, t * c, h, w)
        if (h, w) != (size, size):
            x = F.interpolate(x, size=size, mode="bilinear", align_corners=False)
        x = x.reshape(b, rows, rows, c, size, size).permute(0, 3, 1, 4, 2, 5)
        x = x.reshape(b, c, rows * size, rows * size)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        x = self.backbone.patch_embed(self.thumbnail(batch["image"]))  # [B, G, G, C]
        table = torch.cat([self.frame_pos_embed[0], self.frame_pos_embed.new_zeros(1, x.shape[-1])])
        x = x + table[self.patch_frame]
        x = self.backbone.norm(self.backbone.layers(x))
        feat = self.backbone.forward_head(x, pre_logits=True)
        return self.outputs(self.backbone.head.fc(feat), feat)

    def load_swin(self, path: str | Path) -> None:
        """An ImageNet Swin-B file onto the backbone (see the module docstring)."""
        if path is True or path == "timm":
            raise PretrainedWeightsError(f"tall has no hub weights; {_HOW}")
        path = Path(path).expanduser()
        data = read_torch_file(path, PretrainedWeightsError, _HOW)
        for key in ("model", "state_dict"):
            if isinstance(data, dict) and isinstance(data.get(key), dict):
                data = data[key]
        if not isinstance(data, dict):
            raise PretrainedWeightsError(f"{path}: expected a state dict; {_HOW}")
        state = swin_timm_names(strip_module_prefix(data))
        own = self.backbone.state_dict()
        state = {k: v for k, v in state.items() if not k.startswith("head.")}
        for key, value in state.items():
            if key.endswith("relative_position_bias_table") and key in own:
                state[key] = resize_bias_table(value, own[key].shape[0])
            elif key == "patch_embed.proj.weight" and value.dim() == 2:  # a linear patchify
                state[key] = value.reshape(value.shape[0], 3, *own[key].shape[2:])
        required = {k for k in own if not k.startswith("head.")}
        fits = fitting_tensors(path, state, own, required, "Swin-B for TALL", _HOW)
        self.backbone.load_state_dict(fits, strict=False)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DeepfakeBench's ``model.*`` (Microsoft's Swin names) onto timm's; its index and mask
        buffers are constants that timm computes (the parity tests compare them bit for bit)."""
        state = {k: v for k, v in state_dict.items() if not k.endswith(_BUFFERS)}
        rules = [("model.frame_pos_embed", "frame_pos_embed"), ("model.", "backbone.")]
        return remap(swin_timm_names(state, prefix="model."), rules)


def _check_windows(backbone: nn.Module, cfg: TALLConfig) -> None:
    """Each stage must have its own window (timm's per-stage ``window_size``), clipped to the
    stage's resolution as in DeepfakeBench; older timm versions build other windows."""
    grid = cfg.input_size // cfg.patch_size
    for i, (stage, window) in enumerate(zip(backbone.layers, cfg.window_size, strict=True)):
        want = (min(window, grid // 2**i),) * 2
        if tuple(stage.blocks[0].attn.window_size) != want:
            import timm

            raise RuntimeError(
                f"timm {timm.__version__} built stage {i} with window "
                f"{tuple(stage.blocks[0].attn.window_size)}, not {want}; tall needs a timm whose "
                "SwinTransformer takes one window size per stage (timm 1.0.31 does)"
            )


def swin_timm_names(state: dict[str, torch.Tensor], prefix: str = "") -> dict[str, torch.Tensor]:
    """Microsoft's Swin key names (patch merging at the end of stage i, ``head``) as timm's
    (at the start of stage i + 1, ``head.fc``); timm's names pass unchanged; buffers dropped."""
    if f"{prefix}layers.0.downsample.reduction.weight" not in state:
        return {k: v for k, v in state.items() if not k.endswith(_BUFFERS)}
    merge = re.compile(rf"^{re.escape(prefix)}layers\.(\d+)\.downsample\.")
    out = {}
    for key, value in state.items():
        if key.endswith(_BUFFERS):
            continue
        key = merge.sub(lambda m: f"{prefix}layers.{int(m.group(1)) + 1}.downsample.", key)
        if key.startswith(f"{prefix}head."):
            key = f"{prefix}head.fc." + key.removeprefix(f"{prefix}head.")
        out[key] = value
    return out


def resize_bias_table(table: torch.Tensor, length: int) -> torch.Tensor:
    """A relative position bias table [(2w-1)^2, heads] resized to ``length`` rows with
    bilinear interpolation, as DeepfakeBench's ``load_pretrained`` does."""
    old, new = math.isqrt(table.shape[0]), math.isqrt(length)
    if old == new:
        return table
    grid = table.permute(1, 0).reshape(1, -1, old, old)
    grid = F.interpolate(grid, size=new, mode="bilinear")
    return grid.reshape(-1, new * new).permute(1, 0)
