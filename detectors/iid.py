"""IID (Huang et al., "Implicit Identity Driven Deepfake Face Swapping Detection", CVPR 2023), as in
DeepfakeBench v2 (``training/detectors/iid_detector.py``).

Two encoders see every face:

* the *explicit* identity extractor, a face-recognition IResNet-50 (ArcFace,
  :mod:`detectors.backbones.iresnet`) on the face resized to 112 x 112 (bilinear): ``id_feat``
  [B, 512];
* the detector, Xception whose pre-ReLU 2048-channel map goes through a 1 x 1 convolution to 512
  channels, BatchNorm and ReLU (DeepfakeBench's ``adjust_channel_iid`` mode; ``feat``), averaged
  into the *implicit* identity ``embed`` [B, 512].

The logits are ``last_linear(embed - id_feat)``. Training losses (weights from DeepfakeBench):

* ``ce``: the cross-entropy of ``8 * (sigmoid(logits) - 0.2 * onehot)`` (DeepfakeBench's
  ``FC_ddp``: a margin of 0.2 on the sigmoid of the true class);
* ``iie`` (x 0.05), implicit identity exploration: ArcFace (scale 64, margin 0.4) of ``embed``
  over ``num_identities`` identity classes (batch key ``identity``, the index's subject of each
  face; a learnt [512, num_identities] kernel);
* ``eic`` (x 0.1), explicit identity contrast: mean ``cos(embed, id_feat)`` of the fakes minus
  that of the reals, so that a real face's implicit identity agrees with its explicit one and a
  fake's does not (a class missing from the batch contributes 0).

The explicit extractor loads from a local insightface ``backbone.pth`` (``explicit_extractor:
/path``, strictly; ``false`` leaves it random, which only makes sense for tests or a DeepfakeBench
checkpoint that holds it).

Variants (``model.variant``). ``deepfakebench`` (default) is DeepfakeBench's code, which puts the
explicit extractor in ``model.parameters()`` and in training mode, so it is fine-tuned with the
detector (its BatchNorm statistics too). ``paper``: the explicit extractor is a fixed pretrained
face recognition model (frozen, always in eval mode), as the paper describes. DeepfakeBench skips
the extractor's final BatchNorm1d on a batch of one; here it is skipped only in training (where it
cannot run on one face), so an evaluation score does not depend on the batch it is in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones.iresnet import EMBEDDING_INPUT, IResNet, load_iresnet_file
from fairforensics.detectors.base import DetectorConfig
from fairforensics.detectors.dfb_keys import XCEPTION_HEAD, remap
from fairforensics.detectors.registry import register_detector
from fairforensics.detectors.xception_sladd import XceptionSLADDBase


@dataclass
class IIDConfig(DetectorConfig):
    """``explicit_extractor``: ``false`` or a local insightface IResNet file (``backbone.pth``);
    ``extractor_depth``: its depth (DeepfakeBench: 50); ``num_identities``: identity classes of
    the IIE loss (DeepfakeBench: 1000, FF++'s video ids); loss weights and margins."""

    explicit_extractor: bool | str = False
    extractor_depth: int = 50
    embedding_size: int = 512
    num_identities: int = 1000
    iie_weight: float = 0.05
    eic_weight: float = 0.1
    ce_scale: float = 8.0
    ce_margin: float = 0.2
    arc_scale: float = 64.0
    arc_margin: float = 0.4
    variant: Literal["deepfakebench", "paper"] = "deepfakebench"

    def __post_init__(self) -> None:
        if self.num_identities < 1:
            raise ValueError(f"num_identities must be >= 1, got {self.num_identities}")
        for name in ("iie_weight", "eic_weight", "ce_margin", "arc_margin"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("ce_scale", "arc_scale"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")


def sigmoid_margin_ce(
    logits: torch.Tensor, label: torch.Tensor, scale: float, margin: float
) -> torch.Tensor:
    """DeepfakeBench's ``FC_ddp``: CE of ``scale * (sigmoid(logits) - margin * onehot)``."""
    onehot = F.one_hot(label, logits.shape[1]).to(logits.dtype)
    return F.cross_entropy(scale * (torch.sigmoid(logits) - margin * onehot), label)


def arcface_loss(
    embed: torch.Tensor, kernel: torch.Tensor, label: torch.Tensor, scale: float, margin: float
) -> torch.Tensor:
    """ArcFace (Deng et al. 2019) as DeepfakeBench's ``FC_ddp2``: cosines of the normalised
    embeddings and kernel columns; the true class's ``cos(theta + m)`` (``cos - sin(pi - m) * m``
    past ``theta = pi - m``); CE of ``scale`` times that. Labels -100 are ignored."""
    cos = (F.normalize(embed.float(), dim=1) @ F.normalize(kernel.float(), dim=0)).clamp(-1, 1)
    valid = label >= 0
    if not bool(valid.any()):
        return cos.sum() * 0.0
    cos, label = cos[valid], label[valid]
    target = cos.gather(1, label[:, None])
    sin = torch.sqrt((1.0 - target**2).clamp_min(1e-12))
    with_margin = target * math.cos(margin) - sin * math.sin(margin)
    th, sinmm = math.cos(math.pi - margin), math.sin(math.pi - margin) * margin
    with_margin = torch.where(target > th, with_margin, target - sinmm)
    logits = cos.scatter(1, label[:, None], with_margin)
    return F.cross_entropy(scale * logits, label)


def identity_contrast(
    embed: torch.Tensor, id_feat: torch.Tensor, label: torch.Tensor
) -> torch.Tensor:
    """EIC: mean cosine of (implicit, explicit) identity over fakes minus over reals."""
    cos = F.cosine_similarity(embed.float(), id_feat.float(), dim=1, eps=0.0)
    terms = [cos[label == c].mean() if bool((label == c).any()) else cos.sum() * 0 for c in (1, 0)]
    return terms[0] - terms[1]


@register_detector("iid", family="Spatial")
class IID(XceptionSLADDBase):
    """Xception (-> 512 channels) and an IResNet-50 identity extractor; logits of their difference."""

    Config = IIDConfig
    requires = frozenset({"identity"})
    deepfakebench_name = "iid"
    test_config: ClassVar[dict[str, Any]] = {"extractor_depth": 18}

    def __init__(self, cfg: IIDConfig) -> None:
        super().__init__(cfg)
        dim = cfg.embedding_size
        self.adjust = nn.Sequential(nn.Conv2d(2048, dim, 1), nn.BatchNorm2d(dim), nn.ReLU())
        self.head = nn.Linear(dim, 2)
        self.explicit = IResNet(cfg.extractor_depth, "embedding", num_features=dim)
        if cfg.explicit_extractor not in (False, None, "", "false", "none"):
            load_iresnet_file(self.explicit, str(cfg.explicit_extractor))
        self.arc_kernel = nn.Parameter(torch.randn(dim, cfg.num_identities) * 0.01)
        if cfg.variant == "paper":
            self.explicit.requires_grad_(False)
            self.explicit.eval()

    def train(self, mode: bool = True) -> IID:
        super().train(mode)
        if self.cfg.variant == "paper":
            self.explicit.eval()  # a fixed face recognition model
        return self

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        image = batch["image"]
        small = F.interpolate(
            image, size=(EMBEDDING_INPUT,) * 2, mode="bilinear", align_corners=False
        )
        id_feat = self.explicit(small)
        feat_map, _ = self.features(image)
        embed = F.adaptive_avg_pool2d(self.adjust(feat_map), 1).flatten(1)
        logits = self.head(embed - id_feat)
        return self.outputs(logits, embed, id_feat=id_feat, embed=embed)

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``ce + iie_weight * iie + eic_weight * eic`` (module docstring); ``iie`` needs the
        batch key ``identity`` (classes 0..num_identities - 1)."""
        cfg, label = self.cfg, batch["label"]
        ce = sigmoid_margin_ce(out["logits"].float(), label, cfg.ce_scale, cfg.ce_margin)
        eic = identity_contrast(out["embed"], out["id_feat"], label)
        losses = {"ce": ce, "eic": eic}
        total = ce + cfg.eic_weight * eic
        if "identity" in batch:
            ids = batch["identity"]
            if bool((ids >= cfg.num_identities).any()):
                raise ValueError(
                    f"identity class {int(ids.max())} >= model.num_identities "
                    f"{cfg.num_identities}: the training split has more identities; set "
                    "--set model.num_identities=<number of training identities>"
                )
            iie = arcface_loss(out["embed"], self.arc_kernel, ids, cfg.arc_scale, cfg.arc_margin)
            losses["iie"] = iie
            total = total + cfg.iie_weight * iie
        return {"total": total, **losses}

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """Xception (``adjust_channel`` is used here), the explicit extractor, the IIE kernel;
        ``BCE_LOSS`` holds no tensor."""
        return remap(
            state_dict,
            [
                ("backbone." + XCEPTION_HEAD, "head."),
                ("backbone.adjust_channel.", "adjust."),
                ("backbone.", "backbone."),
                ("explicit_extractor.", "explicit."),
                ("IIE_LOSS.kernel", "arc_kernel"),
            ],
        )
