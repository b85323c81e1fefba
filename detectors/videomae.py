"""VideoMAE (Tong et al., NeurIPS 2022), DeepfakeBench v2's ``videomae_detector.py``.

transformers' ``VideoMAEModel`` with the architecture of ``MCG-NJU/videomae-base`` (ViT-B/16 at
224 px, 16 frames in tubelets of 2, q/v biases, GELU, LayerNorm eps 1e-12, no mean pooling, so its
final LayerNorm is kept; sinusoidal position table computed in code). Its tokens
``[B, (T/2)(H/16)(W/16), 768]`` are averaged, normalised by ``fc_norm`` (LayerNorm 768) and
classified by a linear 2-way head. Cross-entropy; DeepfakeBench's ``videomae.yaml`` recipe.

``pretrained``: a local Hugging Face folder of VideoMAE (``MCG-NJU/videomae-base``, a
``VideoMAEForPreTraining``: its decoder is left out), loaded strictly; ``false`` builds random
weights. The query/value biases load under either of transformers' names (``q_bias``/``v_bias``
or ``query.bias``/``value.bias``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from fairforensics.detectors.backbones.hf_video import (
    HFLayout,
    VideoTransformerConfig,
    load_hf_weights,
    to_backbone_keys,
)
from fairforensics.detectors.base import Detector
from fairforensics.detectors.clip_input import check_clip
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector

#: The query and value biases are ``q_bias``/``v_bias`` up to transformers 5.0 (and in
#: MCG-NJU's folders) and ``query.bias``/``value.bias`` in recent versions (5.24: it renames the
#: older names on load the same way).
OLD_QV, NEW_QV = "attention.attention.{}_bias", "attention.attention.{}.bias"


def qv_bias_renames(own_keys: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """Regex renames from either naming of the q/v biases to the one of ``own_keys``."""
    old = any(k.endswith(OLD_QV.format("q")) for k in own_keys)
    pairs = [(OLD_QV.format(a), NEW_QV.format(b)) for a, b in (("q", "query"), ("v", "value"))]
    return tuple((re.escape(n if old else o) + "$", o if old else n) for o, n in pairs)


@dataclass
class VideoMAEConfig(VideoTransformerConfig):
    """VideoMAE-Base on clips of 16 frames (tubelets of ``tubelet_size``) at 224 px."""

    clip_size: int = 16
    tubelet_size: int = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.clip_size % self.tubelet_size:
            raise ValueError(
                f"clip_size {self.clip_size} is not a multiple of tubelet_size {self.tubelet_size}"
            )


def hf_config_values(cfg: VideoMAEConfig) -> dict[str, Any]:
    """The ``VideoMAEConfig`` values of ``cfg`` (what a folder's ``config.json`` must agree with)."""
    return {
        "image_size": cfg.input_size,
        "patch_size": cfg.patch_size,
        "num_channels": 3,
        "num_frames": cfg.clip_size,
        "tubelet_size": cfg.tubelet_size,
        "hidden_size": cfg.width,
        "num_hidden_layers": cfg.layers,
        "num_attention_heads": cfg.heads,
        "intermediate_size": cfg.mlp_dim,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
        "use_mean_pooling": False,
    }


@register_detector("videomae", family="Video")
class VideoMAEDetector(Detector):
    """VideoMAEModel + token mean + LayerNorm + Linear(768, 2) (86,230,274 parameters)."""

    Config = VideoMAEConfig
    input_kind = "clip"
    deepfakebench_name = "videomae"
    test_input_size = 32
    test_clip_size = 4
    test_config = {"width": 32, "layers": 2, "heads": 2, "mlp_dim": 64, "clip_size": 4}

    def __init__(self, cfg: VideoMAEConfig) -> None:
        super().__init__(cfg)
        from transformers import VideoMAEConfig as HFConfig
        from transformers import VideoMAEModel

        values = hf_config_values(cfg)
        self.backbone = VideoMAEModel(HFConfig(**values))
        layout = HFLayout(
            "VideoMAE",
            prefixes=("videomae.",),
            ignore=("encoder_to_decoder.", "mask_token", "decoder.", "fc_norm.", "classifier."),
            renames=qv_bias_renames(self.backbone.state_dict()),
            config=values,
            config_class=HFConfig,
        )
        load_hf_weights(self.backbone, cfg.pretrained, layout)
        self.fc_norm = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, 2)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        clips = check_clip(batch["image"], self.cfg)
        tokens = self.backbone(pixel_values=clips).last_hidden_state
        feat = self.fc_norm(tokens.mean(dim=1))
        return self.outputs(self.head(feat), feat)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DeepfakeBench's keys are ours, with the q/v biases named either way (``q_bias`` in
        checkpoints trained with older transformers)."""
        mapped = remap(
            state_dict, [("backbone.", "backbone."), ("fc_norm.", "fc_norm."), ("head.", "head.")]
        )
        renames = qv_bias_renames(self.backbone.state_dict())
        return to_backbone_keys(mapped, HFLayout("VideoMAE", renames=renames))
