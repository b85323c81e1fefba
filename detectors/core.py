"""CORE (Ni et al., "CORE: COnsistent REpresentation Learning for Face Forgery Detection",
CVPRW 2022) on Xception, as in DeepfakeBench (paper 002, Table 1, Appendix A.2 item 10).

Training sees two independently augmented views of every face (batch key ``views``). Both go
through the network; the loss (Sec. 3, Eq. 3-4) is the cross-entropy on both views plus
``consistency_rate`` times the consistency regulariser: the representations (pooled features)
are L2-normalised and the squared distance of their cosine similarity to 1 is averaged,
``mean((1 - cos(f1, f2))^2)``. At evaluation the plain ``image`` is classified.

Variants (``model.variant``; the network and its eval function are the same in both):
``paper`` trains on the two views as above. ``deepfakebench`` (default) is DeepfakeBench's
``core_detector.py`` + ``ConsistencyCos``: no second view; the consistency term compares the first
half of each batch with the second half, ``mean((cos(f[:n/2], f[n/2:2*(n/2)]) - 1)^2)``, plus CE
on the batch. DeepfakeBench checkpoints load through :meth:`CORE.map_deepfakebench_state_dict`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones.xception import FEATURES, create_xception
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_keys import remap_xception_detector
from fairforensics.detectors.registry import register_detector


@dataclass
class COREConfig(DetectorConfig):
    """``consistency_rate``: weight of the consistency loss (paper and DeepfakeBench: 1.0)."""

    consistency_rate: float = 1.0
    variant: Literal["deepfakebench", "paper"] = "deepfakebench"

    def __post_init__(self) -> None:
        if self.consistency_rate < 0:
            raise ValueError(f"consistency_rate must be >= 0, got {self.consistency_rate}")


def consistency_loss(feat_a: torch.Tensor, feat_b: torch.Tensor) -> torch.Tensor:
    """``mean((cos(a, b) - 1)^2)`` over the batch (CORE Eq. 3, cosine form)."""
    cos = (F.normalize(feat_a.float(), dim=1) * F.normalize(feat_b.float(), dim=1)).sum(dim=1)
    return ((cos - 1.0) ** 2).mean()


@register_detector("core", family="Spatial")
class CORE(Detector):
    """Xception -> ReLU'd pooled representation -> ``Linear(2048, 2)``, two-view consistency."""

    Config = COREConfig
    requires = frozenset({"views"})
    deepfakebench_name = "core"

    def __init__(self, cfg: COREConfig) -> None:
        super().__init__(cfg)
        if cfg.variant == "deepfakebench":
            self.requires = frozenset()
        self.backbone = create_xception(cfg.pretrained)
        self.head = nn.Linear(FEATURES, 2)

    def _classify(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        feat = self.backbone(image)
        return self.head(feat), feat

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        views = batch.get("views")
        if not self.training or views is None:
            logits, feat = self._classify(batch["image"])
            return self.outputs(logits, feat)
        if views.dim() != 5 or views.shape[1] != 2:
            raise ValueError(f"batch 'views' must be [B, 2, C, H, W], got {tuple(views.shape)}")
        n = views.shape[0]
        logits, feat = self._classify(torch.cat([views[:, 0], views[:, 1]], dim=0))
        return self.outputs(logits[:n], feat[:n], view_logits=logits, view_feat=feat)

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """CE on both views + ``consistency_rate`` * consistency; plain CE without views.

        ``deepfakebench``: CE + ``consistency_rate`` * consistency between the batch halves."""
        if self.cfg.variant == "deepfakebench":
            ce = F.cross_entropy(out["logits"], batch["label"])
            half = out["feat"].shape[0] // 2
            if half == 0:
                return {"total": ce, "ce": ce}
            feat = out["feat"]
            cons = consistency_loss(feat[:half], feat[half : 2 * half])
            return {"total": ce + self.cfg.consistency_rate * cons, "ce": ce, "consistency": cons}
        if "view_logits" not in out:
            return super().loss(batch, out)
        label = batch["label"]
        ce = F.cross_entropy(out["view_logits"], torch.cat([label, label]))
        n = label.shape[0]
        cons = consistency_loss(out["view_feat"][:n], out["view_feat"][n:])
        return {"total": ce + self.cfg.consistency_rate * cons, "ce": ce, "consistency": cons}

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        return remap_xception_detector(state_dict)
