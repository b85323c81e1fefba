"""CLIP baseline (Radford et al., ICML 2021), DeepfakeBench v2's ``clip_detector.py``.

The CLIP ViT-B/16 vision tower (transformers ``CLIPVisionModel``, quick-GELU, LayerNorm eps 1e-5)
and a linear 2-way head on its ``pooler_output`` (post-LayerNorm CLS token, 768-d). DeepfakeBench
fine-tunes the whole network with cross-entropy (Adam lr 2e-4, weight decay 5e-4, 10 epochs,
batch 32, 224 px, mean = std = 0.5: ``configs/detectors/clip.yaml``). ``configs/detectors/paper/
clip.yaml`` feeds the tower the statistics it was pretrained with (CLIP's mean/std).

``pretrained``: a local CLIP ViT-B/16 file or folder (Hugging Face, OpenAI/open_clip or timm
layout; :mod:`detectors.backbones.clip_vit`), loaded strictly; ``false`` builds random weights.
DeepfakeBench checkpoints load as they are (its keys are ours).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from fairforensics.detectors.backbones.clip_vit import (
    ClipVitConfig,
    build_clip_vision,
    load_clip_vision,
)
from fairforensics.detectors.backbones.vit_weights import local_weights
from fairforensics.detectors.base import Detector
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector


def load_foundation(model: nn.Module, cfg: ClipVitConfig) -> None:
    """Load ``cfg.pretrained`` (a local CLIP file or folder) onto ``model`` unless it is false."""
    path = local_weights(
        cfg.pretrained,
        f"CLIP {cfg.arch_name()} (a Hugging Face folder, an OpenAI/open_clip or timm state dict)",
    )
    if path is not None:
        load_clip_vision(model, path, cfg)


@register_detector("clip", family="Spatial")
class CLIPDetector(Detector):
    """CLIP ViT-B/16 + Linear(768, 2), fully fine-tuned (85,800,962 parameters)."""

    Config = ClipVitConfig
    deepfakebench_name = "clip"
    test_input_size = 32
    test_config = {"width": 32, "layers": 2, "heads": 2, "mlp_dim": 64}

    def __init__(self, cfg: ClipVitConfig) -> None:
        super().__init__(cfg)
        self.backbone = build_clip_vision(cfg)
        load_foundation(self.backbone, cfg)
        self.head = nn.Linear(cfg.width, 2)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        feat = self.backbone(pixel_values=batch["image"]).pooler_output
        return self.outputs(self.head(feat), feat)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DeepfakeBench's keys are ours (``backbone.`` = its ``CLIPModel.vision_model``); files saved
        with transformers < 4.31 also hold the constant ``position_ids`` buffer, dropped here."""
        return remap(
            state_dict,
            [("backbone.", "backbone."), ("head.", "head.")],
            drop=["backbone.embeddings.position_ids"],  # persistent in transformers < 4.31
        )
