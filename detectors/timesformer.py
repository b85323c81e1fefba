"""TimeSformer (Bertasius et al., ICML 2021), DeepfakeBench v2's ``timesformer_detector.py``.

transformers' ``TimesformerModel`` (divided space-time attention, GELU, LayerNorm eps 1e-6, the
architecture of ``facebook/timesformer-base-finetuned-k400``: ViT-B/16 at 224 px, 8 frames) and a
linear 2-way head on the CLS token of its last hidden state (after the final LayerNorm, 768-d).
Cross-entropy; DeepfakeBench's ``timetransformer.yaml`` recipe (``configs/detectors/timesformer.yaml``).

``pretrained``: a local Hugging Face folder of a TimeSformer (``TimesformerModel`` or
``TimesformerForVideoClassification``, e.g. ``facebook/timesformer-base-finetuned-k400``), loaded
strictly; ``false`` builds random weights. DeepfakeBench checkpoints load as they are (its keys
are ours).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from fairforensics.detectors.backbones.hf_video import (
    HFLayout,
    VideoTransformerConfig,
    load_hf_weights,
)
from fairforensics.detectors.base import Detector
from fairforensics.detectors.clip_input import check_clip
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector


@dataclass
class TimesformerConfig(VideoTransformerConfig):
    """TimeSformer-Base (ViT-B/16, 12 layers) on clips of 8 frames at 224 px, mean = std = 0.5."""

    clip_size: int = 8


def hf_config_values(cfg: TimesformerConfig) -> dict[str, Any]:
    """The ``TimesformerConfig`` values of ``cfg`` (what a folder's ``config.json`` must agree with)."""
    return {
        "image_size": cfg.input_size,
        "patch_size": cfg.patch_size,
        "num_channels": 3,
        "num_frames": cfg.clip_size,
        "hidden_size": cfg.width,
        "num_hidden_layers": cfg.layers,
        "num_attention_heads": cfg.heads,
        "intermediate_size": cfg.mlp_dim,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-6,
        "qkv_bias": True,
        "attention_type": "divided_space_time",
    }


@register_detector("timesformer", family="Video")
class TimesformerDetector(Detector):
    """TimesformerModel + Linear(768, 2) on the CLS token (121,260,290 parameters)."""

    Config = TimesformerConfig
    input_kind = "clip"
    deepfakebench_name = "timesformer"
    test_input_size = 32
    test_clip_size = 2
    test_config = {"width": 32, "layers": 2, "heads": 2, "mlp_dim": 64, "clip_size": 2}

    def __init__(self, cfg: TimesformerConfig) -> None:
        super().__init__(cfg)
        from transformers import TimesformerConfig as HFConfig
        from transformers import TimesformerModel

        values = hf_config_values(cfg)
        self.backbone = TimesformerModel(HFConfig(**values))
        layout = HFLayout(
            "TimeSformer",
            prefixes=("timesformer.",),
            ignore=("classifier.",),
            config=values,
            config_class=HFConfig,
        )
        load_hf_weights(self.backbone, cfg.pretrained, layout)
        self.head = nn.Linear(cfg.width, 2)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        clips = check_clip(batch["image"], self.cfg)
        feat = self.backbone(pixel_values=clips).last_hidden_state[:, 0]
        return self.outputs(self.head(feat), feat)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DeepfakeBench's keys are ours (``backbone.`` = its ``TimesformerModel``)."""
        return remap(state_dict, [("backbone.", "backbone."), ("head.", "head.")])
