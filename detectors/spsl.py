"""SPSL: Spatial-Phase Shallow Learning (Liu et al., CVPR 2021).

The phase spectrum of the face (the phase-only reconstruction of its grey-level image, Sec. 3.2
of the paper; :func:`detectors.frequency.phase_spectrum`) is concatenated to the RGB channels and
the 4-channel image is classified by Xception whose first convolution is widened to 4 inputs and
initialised with the RGB-averaged kernel of the 3-channel model (pretrained when weights are
given), as in DeepfakeBench (paper 002, Appendix A.2 item 14). DeepfakeBench keeps the whole
Xception for comparability (the default); ``shallow: true`` gives the paper's shallow network
(Sec. 3.3: a small receptive field suffices), dropping the middle flow (blocks 4-11).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from fairforensics.detectors.backbones.xception import (
    FEATURES,
    STAGES,
    create_xception,
    widen_first_conv,
)
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_keys import remap_xception_detector
from fairforensics.detectors.frequency import phase_spectrum
from fairforensics.detectors.registry import register_detector


@dataclass
class SPSLConfig(DetectorConfig):
    """``shallow``: drop Xception's middle flow (the paper's shallow network)."""

    shallow: bool = False


@register_detector("spsl", family="Frequency")
class SPSL(Detector):
    """RGB + phase spectrum -> 4-channel Xception -> 2-way linear head."""

    Config = SPSLConfig
    deepfakebench_name = "spsl"

    def __init__(self, cfg: SPSLConfig) -> None:
        super().__init__(cfg)
        self.backbone = create_xception(cfg.pretrained)
        widen_first_conv(self.backbone, 4, stride=2, mode="mean")
        if cfg.shallow:
            for name in STAGES["middle1"] + STAGES["middle2"]:
                setattr(self.backbone, name, nn.Identity())
        self.head = nn.Linear(FEATURES, 2)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        image = batch["image"]
        x = torch.cat([image, phase_spectrum(image)], dim=1)
        feat = self.backbone(x)
        return self.outputs(self.head(feat), feat)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DFB's 4-channel Xception: timm's names, head ``last_linear``, ``adjust_channel`` unused."""
        return remap_xception_detector(state_dict)
