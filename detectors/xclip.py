"""X-CLIP (Ni et al., ECCV 2022), DeepfakeBench v2's ``xclip_detector.py``.

transformers' ``XCLIPVisionModel`` with the vision architecture of ``microsoft/xclip-base-patch32``
(CLIP ViT-B/32, quick-GELU, LayerNorm eps 1e-5) whose blocks exchange one message token per frame
across ``frames_per_group`` (8) consecutive frames. A 32-frame clip (DeepfakeBench's ``clip_size``)
is therefore seen as 4 groups of 8 frames. Each frame's ``pooler_output`` (post-LayerNorm CLS
token) is averaged over the clip, normalised by ``fc_norm`` (LayerNorm 768) and classified by a
linear 2-way head. Cross-entropy; DeepfakeBench's ``xclip.yaml`` recipe. The multi-frame
integration transformer and the text side of ``XCLIPModel`` are not part of it.

``pretrained``: a local Hugging Face folder of an X-CLIP (``XCLIPModel`` such as
``microsoft/xclip-base-patch32``, or an ``XCLIPVisionModel``; only the vision tower is used),
loaded strictly; ``false`` builds random weights.
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

#: Parts of an ``XCLIPModel`` folder that are not the vision tower, and the constant position ids
#: that transformers < 4.31 saved.
NOT_VISION = (
    "text_model.",
    "text_projection.",
    "visual_projection.",
    "logit_scale",
    "prompts_visual_layernorm.",
    "prompts_visual_projection",
    "prompts_generator.",
    "mit.",
    "embeddings.position_ids",
)


@dataclass
class XCLIPConfig(VideoTransformerConfig):
    """X-CLIP ViT-B/32 on clips of 32 frames at 224 px; message tokens are exchanged within groups
    of ``frames_per_group`` consecutive frames (transformers' ``num_frames``)."""

    clip_size: int = 32
    patch_size: int = 32
    frames_per_group: int = 8

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.clip_size % self.frames_per_group:
            raise ValueError(
                f"clip_size {self.clip_size} is not a multiple of frames_per_group "
                f"{self.frames_per_group}"
            )


def hf_config_values(cfg: XCLIPConfig) -> dict[str, Any]:
    """The ``XCLIPVisionConfig`` values of ``cfg`` (what a folder's vision config must agree with)."""
    return {
        "hidden_size": cfg.width,
        "intermediate_size": cfg.mlp_dim,
        "num_hidden_layers": cfg.layers,
        "num_attention_heads": cfg.heads,
        "num_channels": 3,
        "image_size": cfg.input_size,
        "patch_size": cfg.patch_size,
        "num_frames": cfg.frames_per_group,
        "hidden_act": "quick_gelu",
        "layer_norm_eps": 1e-5,
    }


@register_detector("xclip", family="Video")
class XCLIPDetector(Detector):
    """XCLIPVisionModel + frame mean + LayerNorm + Linear(768, 2) (122,913,026 parameters)."""

    Config = XCLIPConfig
    input_kind = "clip"
    deepfakebench_name = "xclip"
    test_input_size = 32
    test_clip_size = 4
    test_config = {
        "width": 32,
        "layers": 2,
        "heads": 2,
        "mlp_dim": 64,
        "patch_size": 16,
        "clip_size": 4,
        "frames_per_group": 2,
    }

    def __init__(self, cfg: XCLIPConfig) -> None:
        super().__init__(cfg)
        from transformers import XCLIPVisionConfig, XCLIPVisionModel

        values = hf_config_values(cfg)
        self.backbone = XCLIPVisionModel(XCLIPVisionConfig(**values))
        layout = HFLayout(
            "X-CLIP vision tower",
            prefixes=("vision_model.",),
            ignore=NOT_VISION,
            config=values,
            config_class=XCLIPVisionConfig,
            config_section="vision_config",
            add_prefix=self._inner_prefix(),
        )
        load_hf_weights(self.backbone, cfg.pretrained, layout)
        self.fc_norm = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, 2)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        clips = check_clip(batch["image"], self.cfg)
        b, t = clips.shape[:2]
        frames = clips.reshape(b * t, *clips.shape[2:])
        pooled = self.backbone(pixel_values=frames).pooler_output.reshape(b, t, -1)
        feat = self.fc_norm(pooled.mean(dim=1))
        return self.outputs(self.head(feat), feat)

    def _inner_prefix(self) -> str:
        """``vision_model.`` where the installed transformers nests the tower under it (before
        5.x), else nothing."""
        nested = any(k.startswith("vision_model.") for k in self.backbone.state_dict())
        return "vision_model." if nested else ""

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DeepfakeBench's keys are ours; checkpoints trained with older transformers hold the
        tower under ``backbone.vision_model.`` (and, before 4.31, its constant ``position_ids``)."""
        inner = "backbone." + self._inner_prefix()
        rules = {
            "backbone.vision_model.": inner,
            "backbone.": inner,
            "fc_norm.": "fc_norm.",
            "head.": "head.",
        }
        drop = ["backbone.embeddings.position_ids", "backbone.vision_model.embeddings.position_ids"]
        return remap(state_dict, rules, drop=drop)
