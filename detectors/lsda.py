"""LSDA (Yan et al., "Transcending Forgery Specificity with Latent Space Augmentation for
Generalizable Deepfake Detection", CVPR 2024), as in DeepfakeBench v2
(``training/detectors/lsda_detector.py``).

Inference is a *student*: EfficientNet-B4 (efficientnet_pytorch numerics, as the
``efficientnet_b4`` detector) with a 1 x 1 convolution to 512 channels, then the binary head
(average pooling, Linear 512 -> 512, LeakyReLU, Linear 512 -> 2).

Training sees *domain groups* (batch key ``method_groups``): a real frame and the same frame of one
fake of every training method of the same identity (FF++: real, Deepfakes, Face2Face, FaceSwap,
NeuralTextures; ``method_label`` 0..K). Around the student:

* one *teacher* encoder per method (EfficientNet-B4 + 1 x 1 convolution to 512) encodes that
  method's fakes, and a *real encoder* (a face recognition IResNet-100, :mod:`detectors.backbones.
  iresnet`, layers 1-3 frozen, map head) encodes every image;
* **latent space augmentation** of the teachers' fake features: per group and method one of
  four transforms, drawn at random, with a fresh uniform coefficient per channel (DeepfakeBench
  transforms each channel's map ``z``): interpolation towards the method's hard example (the
  channel map farthest from the method's mean map), extrapolation away from the method's mean
  map, Gaussian noise (random sigma), or the difference of the group's first two channel maps;
  and a **mixup** across the methods of a group (coefficient ~ Beta(a, a), a in [0.5, 2]). The
  augmented and mixed features are concatenated and fused (3 convolutions, 1024 -> 512);
* losses: ``domain`` (a 5-way classifier of the real encoder's real features and the teachers'
  fake features; CE on ``method_label``) + 0.5 ``deepfake`` (the student's binary CE) +
  ``distillation`` (MSE of the student's features to the real encoder's on reals and to the
  fused augmented teacher features on fakes) + ``real`` (identity constraint on the real
  encoder: ``sum(1 - cos)`` between the real face and each reenactment fake, minus that for each
  identity-swap fake; cosines along channels at every position).

As DeepfakeBench, the real encoder and each teacher run domain by domain (the real faces of every
group, then each method's fakes), so train-mode BatchNorm normalises each domain with its own
statistics, and the random draws (drop-connect, the transforms, mixup) come in DeepfakeBench's
order from the same generators: the transforms from Python's ``random`` (seeded by the trainer),
drop-connect, noise and mixup from torch's. The same seeds give DeepfakeBench's step exactly
(``tests/test_training_step_parity.py``).

Reenactment methods (``reenactment_methods``, default Face2Face and NeuralTextures) keep the
identity; every other training method counts as an identity swap. DeepfakeBench hard-codes FF++'s
four methods; here ``methods`` follows the training data (``configure_from_data``), one teacher
each. DeepfakeBench builds the real encoder at random (``iresnet100(pretrained=False)``);
``real_encoder: /path`` loads a local insightface IResNet-100 ``backbone.pth`` instead (its ``fc``
and ``features`` are not used).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.configs import ConfigError
from fairforensics.detectors.backbones import create_timm_backbone
from fairforensics.detectors.backbones.iresnet import IResNet, load_iresnet_file
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_efficientnet import build_efficientnet_b4
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.efficientnet import (
    efficientnet_b4_rules,
    efficientnet_pytorch_numerics,
)
from fairforensics.detectors.registry import register_detector

FF_METHODS = ("Deepfakes", "Face2Face", "FaceSwap", "NeuralTextures")
#: efficientnet_pytorch's image size per EfficientNet (its static "same" padding is computed for it)
IMAGE_SIZES = {
    f"efficientnet_b{i}": s for i, s in enumerate((224, 240, 260, 300, 380, 456, 528, 600))
}


@dataclass
class LSDAConfig(DetectorConfig):
    """``methods``: the training methods (one teacher each; set from the training data);
    ``encoder``: the teachers' and student's EfficientNet (DeepfakeBench: B4); ``real_encoder``:
    ``false`` (random, as DeepfakeBench) or a local insightface IResNet file; loss weights."""

    methods: tuple[str, ...] = FF_METHODS
    reenactment_methods: tuple[str, ...] = ("Face2Face", "NeuralTextures")
    encoder: str = "efficientnet_b4"
    feat_dim: int = 512
    real_encoder: bool | str = False
    real_encoder_depth: int = 100
    domain_weight: float = 1.0
    deepfake_weight: float = 0.5
    distillation_weight: float = 1.0
    real_weight: float = 1.0

    def __post_init__(self) -> None:
        self.methods = tuple(self.methods)
        self.reenactment_methods = tuple(self.reenactment_methods)
        if len(self.methods) < 2:
            raise ValueError(
                f"methods must name at least 2 manipulation methods, got {list(self.methods)}"
            )
        if self.encoder not in IMAGE_SIZES:
            raise ValueError(
                f"encoder must be one of {', '.join(IMAGE_SIZES)}, got {self.encoder!r}"
            )
        for name in ("domain_weight", "deepfake_weight", "distillation_weight", "real_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


class Encoder(nn.Module):
    """DeepfakeBench's ``efficientnet``: EfficientNet features (``model``) + 1 x 1 conv (``conv``)."""

    def __init__(self, arch: str, pretrained: bool | str, dim: int) -> None:
        super().__init__()
        if arch == "efficientnet_b4":  # a local file may also be efficientnet_pytorch's
            self.model = build_efficientnet_b4(pretrained, same_stem=True)
        else:
            model = create_timm_backbone(arch, pretrained, num_classes=0, drop_path_rate=0.2)
            self.model = efficientnet_pytorch_numerics(model, IMAGE_SIZES[arch], same_stem=True)
        self.conv = nn.Conv2d(self.model.num_features, dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(self.model.forward_features(x))


def _mlp_head(cin: int, hidden: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(cin, hidden),
        nn.LeakyReLU(inplace=True),
        nn.Linear(hidden, cout),
    )


#: DeepfakeBench's four latent transforms, in its list order (``random.choice`` picks one).
INTERPOLATE, EXTRAPOLATE, NOISE, DIFFERENCE = range(4)


@dataclass
class LatentDraws:
    """The random draws of one latent augmentation of fake features [G, K, C, h, w]: the
    transform of each group and method (``choice[g][k]``), each channel's coefficient ``lam``
    [G, K, C, 1, 1] and the noise transform's ``sigma * N(0, 1)`` maps ``noise`` [G, K, C, h, w]
    (zero elsewhere)."""

    choice: list[list[int]]
    lam: torch.Tensor
    noise: torch.Tensor


def draw_latent_augmentation(feats: torch.Tensor) -> LatentDraws:
    """DeepfakeBench's draws for ``feats``, in its order (``lsda_detector.augment_domains``): per
    group and method ``random.choice`` of the transforms (Python's ``random``), then per channel
    ``random.random()`` for the coefficient, or for the noise transform ``random.random()`` for
    sigma, then for the coefficient, and a ``torch.randn`` map of the channel. With the same
    seeds this gives DeepfakeBench's augmentation exactly."""
    g, k, c, h, w = feats.shape
    opts = {"dtype": feats.dtype, "device": feats.device}
    lam = torch.zeros(g, k, c, 1, 1, **opts)
    noise = torch.zeros(g, k, c, h, w, **opts)
    choice = [[0] * k for _ in range(g)]
    for gi in range(g):
        for ki in range(k):
            choice[gi][ki] = random.randrange(4)  # = random.choice of a 4-list
            if choice[gi][ki] != NOISE:
                lam[gi, ki, :, 0, 0] = torch.tensor([random.random() for _ in range(c)], **opts)
                continue
            for ci in range(c):
                sigma = random.random()
                lam[gi, ki, ci] = random.random()
                noise[gi, ki, ci] = torch.randn(h, w, **opts) * sigma
    return LatentDraws(choice, lam, noise)


def augment_domains(feats: torch.Tensor, draws: LatentDraws) -> torch.Tensor:
    """DeepfakeBench's latent augmentation of fake features [G, K, C, h, w] (module docstring):
    each channel map ``z`` of group g and method k moved by the transform ``draws.choice[g][k]``
    with its coefficient ``lam``."""
    g, k, c = feats.shape[:3]
    maps = feats.transpose(0, 1).reshape(
        k, g * c, *feats.shape[3:]
    )  # every channel map of a method
    means = maps.mean(dim=1)  # [K, h, w]
    with torch.no_grad():
        far = (maps - means[:, None]).flatten(2).norm(dim=2).argmax(dim=1)
    rows = torch.arange(k, device=feats.device)
    hard = maps[rows, far]  # [K, h, w]: the channel map farthest from the method's mean
    lam = draws.lam
    candidates = torch.stack(
        [
            feats + lam * (hard[None, :, None] - feats),
            feats + lam * (feats - means[None, :, None]),
            feats + lam * draws.noise,
            feats + lam * (feats[:, :, 0:1] - feats[:, :, 1:2]),
        ]
    )
    choice = torch.tensor(draws.choice, device=feats.device)
    groups = torch.arange(g, device=feats.device)[:, None]
    return candidates[choice, groups, rows[None, :]]


def mixup_domains(feats: torch.Tensor) -> torch.Tensor:
    """Per group, ``lam * f + (1 - lam) * f[permuted methods]`` with lam ~ Beta(a, a), a in
    [0.5, 2]: DeepfakeBench's draws (a CPU ``randperm``, a float32 ``rand`` and Beta sample) and
    arithmetic (``1 - lam`` in float32)."""
    mixed = []
    for group in feats:
        perm = torch.randperm(group.shape[0]).to(feats.device)
        alpha = torch.rand(1) * 1.5 + 0.5
        lam = torch.distributions.Beta(alpha, alpha).sample().to(feats.device)
        mixed.append(lam * group + (1 - lam) * group[perm])
    return torch.stack(mixed)


def cosine_distance(x: torch.Tensor, y: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``1 - cos`` along dim 1, DeepfakeBench's ``cosine_similarity_loss`` (eps on the norms)."""
    x = x / (x.norm(dim=1, keepdim=True) + eps)
    y = y / (y.norm(dim=1, keepdim=True) + eps)
    return 1 - (x * y).sum(dim=1)


@register_detector("lsda", family="Spatial")
class LSDA(Detector):
    """EfficientNet-B4 student distilled from per-method teachers with latent-space augmentation."""

    Config = LSDAConfig
    requires = frozenset({"method_groups", "method_label"})
    deepfakebench_name = "lsda"
    test_input_size = 64
    test_config: ClassVar[dict[str, Any]] = {"encoder": "efficientnet_b0", "real_encoder_depth": 18}

    @classmethod
    def configure_from_data(
        cls, model_cfg: dict[str, Any], method_names: list[str]
    ) -> dict[str, Any]:
        """``methods`` = the training split's manipulation methods (one teacher each); a value the
        user set must equal them."""
        given = model_cfg.get("methods")
        if given is not None and list(given) != list(method_names):
            raise ConfigError(
                f"model.methods is {list(given)} but the training data has the methods "
                f"{list(method_names)}; LSDA needs one teacher per training method (drop "
                "model.methods, or train on data with exactly these methods)"
            )
        return {**model_cfg, "methods": list(method_names)}

    def __init__(self, cfg: LSDAConfig) -> None:
        super().__init__(cfg)
        dim = cfg.feat_dim
        self.encoders_f = nn.ModuleList(
            [Encoder(cfg.encoder, cfg.pretrained, dim) for _ in cfg.methods]
        )
        self.encoder_c = IResNet(cfg.real_encoder_depth, "map")
        if cfg.real_encoder not in (False, None, "", "false", "none"):
            load_iresnet_file(self.encoder_c, str(cfg.real_encoder))
        for layer in (self.encoder_c.layer1, self.encoder_c.layer2, self.encoder_c.layer3):
            layer.requires_grad_(False)  # DeepfakeBench freezes them
        self.student_encoder = Encoder(cfg.encoder, cfg.pretrained, dim)
        self.fc_weights = nn.Sequential(
            nn.Conv2d(2 * dim, dim, 1),
            nn.LeakyReLU(inplace=True),
            nn.Conv2d(dim, dim, 3, padding=1),
            nn.LeakyReLU(inplace=True),
            nn.Conv2d(dim, dim, 3, padding=1),
            nn.LeakyReLU(inplace=True),
        )
        self.mlp = _mlp_head(dim, dim // 2, len(cfg.methods) + 1)
        self.binary_classifier = _mlp_head(dim, 512, 2)
        # identity constraint: + (1 - cos) for reenactments, - for identity swaps
        self.sign = [1.0 if m in cfg.reenactment_methods else -1.0 for m in cfg.methods]

    def classify(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits, student feature map) of the student."""
        feat = self.student_encoder(image)
        return self.binary_classifier(feat), feat

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        image = batch["image"]
        if not self.training or "method_label" not in batch:
            logits, feat = self.classify(image)
            return self.outputs(logits, F.adaptive_avg_pool2d(feat, 1).flatten(1))
        teach = self._teach(image, batch["method_label"])  # before the student: DeepfakeBench's
        logits, feat = self.classify(image)  # order of random draws (drop-connect, augmentation)
        pooled = F.adaptive_avg_pool2d(feat, 1).flatten(1)
        return self.outputs(logits, pooled, student_feat=feat, **teach)

    def _groups(self, label: torch.Tensor) -> int:
        size = len(self.cfg.methods) + 1
        expected = torch.arange(size, device=label.device).repeat(max(label.numel() // size, 1))
        if label.numel() % size or not torch.equal(label, expected):
            raise ValueError(
                f"lsda trains on domain groups (batch key 'method_groups'): method_label must be "
                f"0..{size - 1} repeated, got {label.tolist()[:12]}"
            )
        return label.numel() // size

    def _teach(self, image: torch.Tensor, label: torch.Tensor) -> dict[str, torch.Tensor]:
        """The teachers' and the real encoder's features and what the losses compare.

        As DeepfakeBench (``real_fake_feature_extract``), domain by domain: the real encoder on
        that domain's images of every group (so its train-mode BatchNorm statistics are each
        domain's own), then that method's teacher on them."""
        n_groups = self._groups(label)
        grouped = image.view(n_groups, -1, *image.shape[1:])  # [G, K+1, 3, H, W]
        real_feat, fake_feat = [], []
        for d in range(grouped.shape[1]):
            real_feat.append(self.encoder_c(grouped[:, d]))
            if d > 0:
                fake_feat.append(self.encoders_f[d - 1](grouped[:, d]))
        real_feat = torch.stack(real_feat, dim=1)  # [G, K+1, C, h, w]
        fake_feat = torch.stack(fake_feat, dim=1)  # [G, K, C, h, w]
        augmented = augment_domains(fake_feat, draw_latent_augmentation(fake_feat))
        fused = torch.cat([augmented, mixup_domains(fake_feat)], dim=2)
        target = self.fc_weights(fused.flatten(0, 1)).view_as(fake_feat)
        domains = torch.cat([real_feat[:, :1], fake_feat], dim=1).flatten(0, 1)
        return {"real_feat": real_feat, "fake_target": target, "domain_logits": self.mlp(domains)}

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``domain + 0.5 deepfake + distillation + real`` (module docstring); plain CE without
        domain groups."""
        label = batch["label"]
        deepfake = F.cross_entropy(out["logits"], label)
        if "domain_logits" not in out:
            return {"total": deepfake, "deepfake": deepfake}
        cfg, method = self.cfg, batch["method_label"]
        real_feat, student = out["real_feat"], out["student_feat"]
        reals = method == 0
        distill = F.mse_loss(student[reals], real_feat.flatten(0, 1)[reals]) + F.mse_loss(
            student[~reals].view_as(out["fake_target"]), out["fake_target"]
        )
        domain = F.cross_entropy(out["domain_logits"], method)
        anchor = real_feat[:, 0]
        real = sum(
            s * cosine_distance(anchor, real_feat[:, d + 1]).sum() for d, s in enumerate(self.sign)
        )
        total = (
            cfg.domain_weight * domain
            + cfg.deepfake_weight * deepfake
            + cfg.distillation_weight * distill
            + cfg.real_weight * real
        )
        return {
            "total": total,
            "domain": domain,
            "deepfake": deepfake,
            "distillation": distill,
            "real": real,
        }

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DeepfakeBench's ``generator`` under ``model.``; the EfficientNets' ImageNet ``_fc`` and
        the real encoder's ``fc``/``features`` are built but never used."""
        rules: dict[str, str] = {}
        encoders = [f"encoders_f.{i}." for i in range(len(self.encoders_f))] + ["student_encoder."]
        for enc in encoders:
            rules |= efficientnet_b4_rules(f"model.{enc}model.", f"{enc}model.")
            rules[f"model.{enc}conv."] = f"{enc}conv."
        for part in ("encoder_c.", "fc_weights.", "mlp.", "binary_classifier."):
            rules[f"model.{part}"] = part
        drop = [f"model.{enc}model._fc." for enc in encoders]
        drop += ["model.encoder_c.fc.", "model.encoder_c.features."]
        return remap(state_dict, rules, drop=drop)
