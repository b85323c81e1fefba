"""StA-CLIP: a CLIP ViT-L/14 with spatio-temporal adapters, DeepfakeBench v2's ``sta_detector.py``.

The backbone (:mod:`detectors.backbones.sta_vit`) is the first 14 of CLIP ViT-L/14's 24 blocks
(width 1024, 16 heads, patch 14, 224 px), each followed by an adapter of spatial and temporal
depthwise 3-D convolutions joined by cross-attention, and a temporal embedding for 8 frames. The
CLS token of each frame (``frame_feat`` [B, T, 1024]) is averaged over the clip (DeepfakeBench's
``I3DHead``: average pooling, dropout 0.5, ``fc_cls`` Linear(1024, 2)). Cross-entropy. DeepfakeBench
registers it as ``sta_clip`` but does not import it; its ``sta.yaml`` (removed from the repository
in 64366cf, June 2025) gives the recipe and CLIP's mean/std (``configs/detectors/sta_clip.yaml``).

``pretrained``: a local CLIP ViT-L/14 file or folder (OpenAI's ``ViT-L-14.pt`` or an OpenAI /
open_clip state dict, or a Hugging Face ``openai/clip-vit-large-patch14`` folder), as
DeepfakeBench's ``init_weights`` would load it: the CLIP tower strictly (blocks beyond ``layers``,
the projection and the text tower are left out), the adapters' ``up`` layers zeroed so that each
adapter starts as the identity, the temporal embedding at zero. ``false`` builds random weights
(what DeepfakeBench's code does: its ``init_weights`` call is commented out).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from fairforensics.detectors.backbones.clip_openai import openai_visual_state
from fairforensics.detectors.backbones.hf_video import HFLayout, check_config
from fairforensics.detectors.backbones.sta_vit import StaViT
from fairforensics.detectors.backbones.vit_weights import (
    load_matching,
    local_weights,
    read_weight_files,
)
from fairforensics.detectors.base import ClipDetectorConfig, Detector
from fairforensics.detectors.clip_input import check_clip
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector

log = logging.getLogger(__name__)

_BLOCK = re.compile(r"^transformer\.resblocks\.(\d+)\.")


@dataclass
class StaClipConfig(ClipDetectorConfig):
    """StA-CLIP on clips of 8 frames at 224 px with CLIP's normalisation; ``width``, ``layers``,
    ``heads``, ``patch_size``: the CLIP tower (DeepfakeBench: ViT-L/14 cut to 14 blocks);
    ``dropout``: before the linear head; ``batch_coupled_attention``: ``true`` is DeepfakeBench's
    adapter cross-attention, whose token layout mixes the clips of a batch (a clip's score then
    depends on the other clips in its batch); ``false`` (default): each clip attends over its own
    positions (the same model when a batch holds one clip)."""

    clip_size: int = 8
    input_size: int = 224
    mean: tuple[float, float, float] = (0.48145466, 0.4578275, 0.40821073)
    std: tuple[float, float, float] = (0.26862954, 0.26130258, 0.27577711)
    width: int = 1024
    layers: int = 14
    heads: int = 16
    patch_size: int = 14
    dropout: float = 0.5
    batch_coupled_attention: bool = False

    def __post_init__(self) -> None:
        if self.width % self.heads or self.width % 4:
            raise ValueError(f"width {self.width} must be divisible by heads and by 4")
        if self.input_size % self.patch_size:
            raise ValueError(
                f"input_size {self.input_size} is not a multiple of patch_size {self.patch_size}"
            )
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


def load_clip_tower(backbone: StaViT, pretrained: bool | str, cfg: StaClipConfig) -> None:
    """Load a local CLIP file or folder onto ``backbone`` (module docstring), or nothing."""
    path = local_weights(pretrained, "CLIP ViT-L/14")
    if path is None:
        return
    state, config = read_weight_files(path)
    if config is not None:  # a Hugging Face folder: the same tower (at least `layers` blocks)
        from transformers import CLIPVisionConfig

        values = {
            "hidden_size": cfg.width,
            "intermediate_size": 4 * cfg.width,
            "num_attention_heads": cfg.heads,
            "patch_size": cfg.patch_size,
            "image_size": cfg.input_size,
            "hidden_act": "quick_gelu",
        }
        check_config(
            config,
            HFLayout(
                "CLIP vision tower",
                config=values,
                config_section="vision_config",
                config_class=CLIPVisionConfig,
            ),
            path,
        )
    visual = openai_visual_state(state)
    deeper = {k for k in visual if (m := _BLOCK.match(k)) and int(m.group(1)) >= cfg.layers}
    if deeper:
        log.info("%s: using the first %d blocks of the CLIP tower", path, cfg.layers)
    visual = {k: v for k, v in visual.items() if k not in deeper and k != "proj"}
    adapters = [f"transformer.resblocks.{i}.Adapter." for i in range(cfg.layers)]
    load_matching(backbone, visual, path, not_in_file=["temporal_embedding", *adapters])
    with torch.no_grad():
        backbone.temporal_embedding.zero_()
        for block in backbone.transformer.resblocks:
            block.Adapter.up.weight.zero_()
            block.Adapter.up.bias.zero_()


@register_detector("sta_clip", family="Video")
class StaClipDetector(Detector):
    """CLIP ViT-L/14 (14 blocks) + spatio-temporal adapters + Linear(1024, 2) (223,841,282
    parameters)."""

    Config = StaClipConfig
    input_kind = "clip"
    deepfakebench_name = "sta_clip"
    test_input_size = 28
    test_clip_size = 4
    test_config = {"width": 32, "layers": 2, "heads": 2, "patch_size": 14, "clip_size": 4}

    def __init__(self, cfg: StaClipConfig) -> None:
        super().__init__(cfg)
        self.backbone = StaViT(
            cfg.input_size,
            cfg.patch_size,
            cfg.width,
            cfg.layers,
            cfg.heads,
            cfg.clip_size,
            batch_coupled=cfg.batch_coupled_attention,
        )
        load_clip_tower(self.backbone, cfg.pretrained, cfg)
        self.dropout = nn.Dropout(cfg.dropout)
        self.head = nn.ModuleDict({"fc_cls": nn.Linear(cfg.width, 2)})

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        frame_feat = self.backbone(check_clip(batch["image"], self.cfg))
        feat = frame_feat.mean(dim=1)
        logits = self.head["fc_cls"](self.dropout(feat))
        return self.outputs(logits, feat, frame_feat=frame_feat)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DeepfakeBench's keys are ours (``backbone.`` = its ``ViT_CLIP``, ``head.fc_cls``)."""
        return remap(state_dict, [("backbone.", "backbone."), ("head.fc_cls.", "head.fc_cls.")])
