"""Face X-ray (Li et al., "Face X-ray for More General Face Forgery Detection", CVPR 2020).

Sec. 3.4 of the paper: an HRNet (timm ``hrnet_w48``) whose four branch outputs are upsampled to
the 1/4-resolution branch and concatenated (48 + 96 + 192 + 384 = 720 channels), a 1x1
convolution to one channel, bilinear upsampling to the input size and a sigmoid give the
predicted face X-ray; the classifier is average pooling, a fully connected layer and softmax on
the same 720-channel representation. Loss (Eq. 4): ``L = L_c + lambda * L_b`` with
``lambda = 100``, ``L_b`` the pixel-wise binary cross-entropy between the predicted and the
target X-ray ``B = 4 * M * (1 - M)`` (zeros for real faces).

Training uses real faces only: the pipeline blends each with a nearest-landmark partner
(``blend:xray``, :func:`preprocessing.blending.xray_blend`) and provides the target as ``xray``.

Variants (``model.variant``): ``paper`` is the above. ``deepfakebench`` (default) is DeepfakeBench's
``facexray_detector.py``: on the same 720-channel HRNet features, a mask head (3x3 conv 720 -> 256,
BN, ReLU, 3x3 conv 256 -> 128, BN, ReLU, 1x1 conv -> 1, bilinear upsampling with
``align_corners=True`` to the input size) gives the raw predicted mask ``mask_pred``; the
classifier is an MLP (16384 -> 1024 -> 128 -> 2, BatchNorm1d + ReLU between) on the mask
average-pooled to 128x128; the loss is ``CE + xray_weight * MSE(mask_pred, target)`` with
``xray_weight = 1000`` in its config. DeepfakeBench's HRNet-W48 (``cls_hrnet.py``) has timm's layer
names; its ImageNet classification head (``incre_modules``, ``downsamp_modules``, ``final_layer``,
``fc`` of the backbone) is unused and dropped by :meth:`FaceXray.map_deepfakebench_state_dict`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones import create_timm_backbone
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector

log = logging.getLogger(__name__)

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass
class FaceXrayConfig(DetectorConfig):
    """``backbone``: a timm HRNet; ``xray_weight``: lambda of Eq. 4."""

    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    backbone: str = "hrnet_w48"
    xray_weight: float = 100.0
    variant: Literal["deepfakebench", "paper"] = "deepfakebench"

    def __post_init__(self) -> None:
        if not self.backbone.startswith("hrnet"):
            raise ValueError(
                f"backbone must be a timm HRNet (e.g. hrnet_w48), got {self.backbone!r}"
            )
        if self.xray_weight < 0:
            raise ValueError(f"xray_weight must be >= 0, got {self.xray_weight}")


@register_detector("xray", family="Spatial")
class FaceXray(Detector):
    """HRNet -> concatenated multi-resolution features -> X-ray map + 2-way classifier."""

    Config = FaceXrayConfig
    requires = frozenset({"blend:xray"})
    deepfakebench_name = "facexray"
    #: side of the pooled mask the ``deepfakebench`` classifier reads
    MASK_POOL = 128

    def __init__(self, cfg: FaceXrayConfig) -> None:
        super().__init__(cfg)
        self.backbone = create_timm_backbone(
            cfg.backbone,
            cfg.pretrained,
            features_only=True,
            feature_location="",
            out_indices=(1, 2, 3, 4),
        )
        channels = sum(self.backbone.feature_info.channels())
        if cfg.variant == "paper":
            self.xray_head = nn.Conv2d(channels, 1, kernel_size=1)
            self.fc = nn.Linear(channels, 2)
            return
        self.post_process = nn.Sequential(
            nn.Conv2d(channels, 256, 3, 1, 1),
            nn.BatchNorm2d(256),
            nn.ReLU(),
            nn.Conv2d(256, 128, 3, 1, 1),
            nn.BatchNorm2d(128),
            nn.ReLU(),
            nn.Conv2d(128, 1, 1),
        )
        self.fc = nn.Sequential(
            nn.Linear(self.MASK_POOL**2, 1024),
            nn.BatchNorm1d(1024),
            nn.ReLU(),
            nn.Linear(1024, 128),
            nn.BatchNorm1d(128),
            nn.ReLU(),
            nn.Linear(128, 2),
        )

    def fused_features(self, image: torch.Tensor) -> torch.Tensor:
        """The four HRNet branches upsampled to the first one's size and concatenated."""
        branches = self.backbone(image)
        size = branches[0].shape[-2:]
        fused = torch.cat(
            [branches[0]]
            + [
                F.interpolate(b, size=size, mode="bilinear", align_corners=False)
                for b in branches[1:]
            ],
            dim=1,
        )
        return fused

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        image = batch["image"]
        fused = self.fused_features(image)
        if self.cfg.variant == "deepfakebench":
            mask = F.interpolate(
                self.post_process(fused), size=image.shape[-2:], mode="bilinear", align_corners=True
            )
            feat = F.adaptive_avg_pool2d(mask, self.MASK_POOL).flatten(1)
            return self.outputs(self.fc(feat), feat, mask_pred=mask)
        xray_logits = F.interpolate(
            self.xray_head(fused), size=image.shape[-2:], mode="bilinear", align_corners=False
        )
        feat = F.adaptive_avg_pool2d(fused, 1).flatten(1)
        return self.outputs(
            self.fc(feat), feat, xray=torch.sigmoid(xray_logits), xray_logits=xray_logits
        )

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``CE + xray_weight * BCE(predicted X-ray, target)`` (``deepfakebench``: MSE on the raw
        mask); without a target only CE."""
        ce = F.cross_entropy(out["logits"], batch["label"])
        target = batch.get("xray")
        if target is None:
            return {"total": ce, "ce": ce}
        pred = out["mask_pred" if self.cfg.variant == "deepfakebench" else "xray_logits"]
        if target.shape != pred.shape:
            raise ValueError(
                f"batch 'xray' has shape {tuple(target.shape)}, expected {tuple(pred.shape)}"
            )
        if self.cfg.variant == "deepfakebench":
            mse = F.mse_loss(pred.float(), target.float())
            return {"total": ce + self.cfg.xray_weight * mse, "ce": ce, "xray": mse}
        bce = F.binary_cross_entropy_with_logits(out["xray_logits"].float(), target.float())
        return {"total": ce + self.cfg.xray_weight * bce, "ce": ce, "xray": bce}

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        unused = ("incre_modules.", "downsamp_modules.", "final_layer.", "fc.")
        return remap(
            state_dict,
            [("backbone.", "backbone."), ("post_process.", "post_process."), ("fc.", "fc.")],
            drop=[f"backbone.{u}" for u in unused],
        )
