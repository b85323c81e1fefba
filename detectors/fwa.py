"""DSP-FWA (Li & Lyu, "Exposing DeepFake Videos By Detecting Face Warping Artifacts", CVPRW 2019)
and iFWA (DeepfakeBench, paper 002, Appendix A.4, Tables 6-7).

FWA trains on real faces only: the data pipeline turns each real face into a fake with the
face-warping-artifact generator :func:`preprocessing.blending.face_warp` (align, shrink to a random
scale in {0.2, ..., 0.8}, Gaussian blur, resize back, blend into the landmark hull with a smoothed
mask; Sec. 3 of the paper) and collates real + fake into a batch of 2B (``blend:fwa``). As in
DeepfakeBench (Table 1 and Appendix A.2 item 7), the classifier is Xception (the original used
ResNet-50 with dual spatial pyramid pooling) so that detectors share one backbone.

iFWA adds the SPSL phase spectrum (:func:`detectors.frequency.phase_spectrum`) as a fourth input
channel; Xception's first convolution is widened to 4 inputs from the RGB-averaged kernel.

Variants (``model.variant``): the network is the same in both; they differ in training data.
``paper`` blends real faces only (the paper's Sec. 3). ``deepfakebench`` (default) does what
DeepfakeBench's ``FWABlendDataset`` does: every training frame, real or fake, comes with its FWA
blend labelled 1 (batch key ``blend_all``). DeepfakeBench checkpoints (``fwa``, ``last_linear`` as
the head) load through :meth:`FWA.map_deepfakebench_state_dict`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from fairforensics.detectors.backbones.xception import FEATURES, create_xception, widen_first_conv
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_keys import remap_xception_detector
from fairforensics.detectors.frequency import phase_spectrum
from fairforensics.detectors.registry import register_detector


@dataclass
class FWAConfig(DetectorConfig):
    """``dropout``: dropout before the 2-way linear head; ``variant``: see the module docstring."""

    dropout: float = 0.0
    variant: Literal["deepfakebench", "paper"] = "deepfakebench"

    def __post_init__(self) -> None:
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


@register_detector("fwa", family="Spatial")
class FWA(Detector):
    """Xception -> dropout -> ``Linear(2048, 2)``, trained on real faces and their FWA fakes."""

    Config = FWAConfig
    requires = frozenset({"blend:fwa"})
    deepfakebench_name = "fwa"
    in_chans = 3

    def __init__(self, cfg: FWAConfig) -> None:
        super().__init__(cfg)
        if cfg.variant == "deepfakebench":
            self.requires = type(self).requires | {"blend_all"}
        self.backbone = create_xception(cfg.pretrained)
        if self.in_chans != 3:
            widen_first_conv(self.backbone, self.in_chans, stride=2, mode="mean")
        self.drop = nn.Dropout(cfg.dropout)
        self.head = nn.Linear(FEATURES, 2)

    def inputs(self, image: torch.Tensor) -> torch.Tensor:
        """The network input made from the normalised RGB batch."""
        return image

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        feat = self.backbone(self.inputs(batch["image"]))
        return self.outputs(self.head(self.drop(feat)), feat)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        return remap_xception_detector(state_dict)


@register_detector("ifwa", family="Spatial")
class IFWA(FWA):
    """FWA with the phase spectrum as a fourth input channel (paper 002, Appendix A.4)."""

    deepfakebench_name = None
    in_chans = 4

    def inputs(self, image: torch.Tensor) -> torch.Tensor:
        return torch.cat([image, phase_spectrum(image)], dim=1)
