"""STIL (Gu et al., "Spatiotemporal Inconsistency Learning for DeepFake Video Detection", ACM MM
2021), DeepfakeBench v2's ``training/detectors/stil_detector.py``.

SCNet-50 v1d with STIL's temporal modules (:mod:`detectors.backbones.scnet`) reads the ``clip_size``
frames (8) of a clip as one batch; a ``Linear(2048, 2)`` scores every frame and the clip's logits
are the mean of its frames' logits (``frame_logits`` [B, T, 2] is returned too). ``feat`` is the
mean of the frames' pooled features. Cross-entropy on the clip logits, 224x224, mean = std = 0.5.

``pretrained``: SCNet's ImageNet file ``scnet50_v1d-4109d1e1.pth`` (DeepfakeBench downloads it on
every build and loads it with ``strict=False``). Here it must be a whole SCNet-50 v1d: every
tensor of the network except STIL's own modules (TIM, ISM, shift, the factorised ``f_w``/``f_h``)
must come from it, and what it holds beyond that may only be SCNet's ``scconv.k2`` (which STIL
replaces) and its 1000-way ``fc``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from fairforensics.detectors.backbones import (
    PretrainedWeightsError,
    read_torch_file,
    strip_module_prefix,
)
from fairforensics.detectors.backbones.coverage import fitting_tensors
from fairforensics.detectors.backbones.scnet import DEPTHS, STIL_ONLY, STILNet
from fairforensics.detectors.base import ClipDetectorConfig, Detector
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector

IMAGENET_FILE = "scnet50_v1d-4109d1e1.pth"
_HOW = f"pass a local copy of SCNet's {IMAGENET_FILE} or set 'pretrained: false'"
#: what an ImageNet SCNet file holds that STIL has no use for
_SCNET_ONLY = (".scconv.k2.", "fc.")


@dataclass
class STILConfig(ClipDetectorConfig):
    """``width``: SCNet's base width (64; smaller only for quick tests, a multiple of 16 from 32,
    so that TIM's reduction by 16 and the shift's eighths stay whole); ``depths``: the bottlenecks
    of its four layers (SCNet-50's; fewer only for quick tests)."""

    clip_size: int = 8
    input_size: int = 224
    width: int = 64
    depths: tuple[int, int, int, int] = DEPTHS

    def __post_init__(self) -> None:
        if len(self.depths) != 4 or min(self.depths) < 1:
            raise ValueError(f"depths must be 4 counts of at least 1, got {self.depths}")
        if self.width < 32 or self.width % 16:
            raise ValueError(f"width must be a multiple of 16 from 32, got {self.width}")
        if self.clip_size < 2:
            raise ValueError(
                f"clip_size must be >= 2 (TIM compares each frame with the next), got {self.clip_size}"
            )
        if self.input_size < 128:
            raise ValueError(
                f"input_size must be >= 128 (SCNet's 4x4 calibration pool at 1/32), got {self.input_size}"
            )


@register_detector("stil", family="Video")
class STIL(Detector):
    """SCNet-50 v1d + TIM/ISM/shift, frame logits averaged per clip (22,688,418 parameters)."""

    Config = STILConfig
    input_kind = "clip"
    deepfakebench_name = "stil"
    test_input_size = 128
    test_clip_size = 2
    test_config: ClassVar[dict[str, Any]] = {"clip_size": 2}

    def __init__(self, cfg: STILConfig) -> None:
        super().__init__(cfg)
        self.base = STILNet(cfg.clip_size, cfg.width, tuple(cfg.depths))
        self.fc = nn.Linear(self.base.num_features, 2)
        if cfg.pretrained not in (False, None, "", "false", "none"):
            self.load_imagenet(cfg.pretrained)

    def load_imagenet(self, path: str | Path) -> None:
        """SCNet-50 v1d ImageNet weights onto the frame network (see the module docstring)."""
        if path is True or path == "timm":
            raise PretrainedWeightsError(f"stil has no hub weights; {_HOW}")
        path = Path(path).expanduser()
        data = read_torch_file(path, PretrainedWeightsError, _HOW)
        if isinstance(data, dict) and isinstance(data.get("state_dict"), dict):
            data = data["state_dict"]
        if not isinstance(data, dict):
            raise PretrainedWeightsError(f"{path}: expected a state dict; {_HOW}")
        own = self.base.state_dict()
        state = {  # SCNet's k2 (factorised here) and its classifier have no use
            k: v
            for k, v in strip_module_prefix(data).items()
            if not any(m in f".{k}" for m in _SCNET_ONLY)
        }
        required = {
            k
            for k in own
            if not any(m in f".{k}" for m in STIL_ONLY) and not k.endswith("num_batches_tracked")
        }
        fits = fitting_tensors(path, state, own, required, "SCNet-50 v1d", _HOW)
        self.base.load_state_dict(fits, strict=False)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        clips = batch["image"]
        b, t = clips.shape[:2]
        if t != self.cfg.clip_size:
            raise ValueError(
                f"stil expects clips of {self.cfg.clip_size} frames (model.clip_size), got {t}"
            )
        frame_feat = self.base(clips.reshape(b * t, *clips.shape[2:])).reshape(b, t, -1)
        frame_logits = self.fc(frame_feat)
        return self.outputs(
            frame_logits.mean(dim=1), frame_feat.mean(dim=1), frame_logits=frame_logits
        )

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DeepfakeBench's ``model.base_model.*`` (SCNet's names) onto ours."""
        return remap(state_dict, [("model.base_model.fc.", "fc."), ("model.base_model.", "base.")])
