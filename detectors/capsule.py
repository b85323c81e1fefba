"""Capsule-Forensics (Nguyen, Yamagishi & Echizen, ICASSP 2019; Capsule-Forensics-v2 code).

* Feature extractor (Sec. 3.1): VGG-19 up to its third max-pooling layer (``features[0:19]``,
  256 channels at 1/8 resolution), ImageNet-pretrained when weights are given.
* Ten primary capsules, each: Conv 3x3 256->64, BN, ReLU, Conv 3x3 64->16, BN, ReLU, statistical
  pooling (per-channel mean and std -> [2, 16]), Conv1d 2->8 (k5, s2), BN, Conv1d 8->1 (k3), BN
  -> an 8-d vector; the stacked capsules are squashed.
* Dynamic routing (Sec. 3.2, Sabour et al. 2017) with 2 iterations to two 4-d output capsules
  (real, fake). Optional Gaussian noise on the routing weights and dropout on the predictions
  during training (``routing_noise``, ``routing_dropout``; DeepfakeBench uses 0 and 0).
* Output: softmax over the two classes for each of the 4 output dimensions; the prediction is
  their mean. Loss: the sum over the 4 dimensions of the cross-entropy applied to those softmax
  outputs, exactly as the authors' ``CapsuleLoss``.

Variants (``variant``): ``deepfakebench`` (default) returns what DeepfakeBench's
``capsule_net_detector.py`` does: its "logits" are the mean class probabilities themselves and
``prob`` is a softmax over them (so it stays near 0.5; it ranks like the paper's prob), ``feat`` is
the squashed primary capsules, inputs normalised with mean = std = 0.5. ``paper`` returns
``log`` of the mean class probabilities as logits, so ``prob`` is the mean fake probability,
with ImageNet statistics. The network and the loss are the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones import create_timm_backbone, load_state_dict_file
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_keys import remap
from fairforensics.detectors.registry import register_detector

_VGG19_TO_POOL3 = (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M")


@dataclass
class CapsuleConfig(DetectorConfig):
    """Capsule counts and sizes of the paper; routing noise/dropout used only in training."""

    variant: Literal["deepfakebench", "paper"] = "deepfakebench"
    num_capsules: int = 10
    routing_iterations: int = 2
    routing_noise: float = 0.0
    routing_dropout: float = 0.0

    def __post_init__(self) -> None:
        if self.num_capsules < 1 or self.routing_iterations < 1:
            raise ValueError("num_capsules and routing_iterations must be >= 1")
        if self.routing_noise < 0 or not 0 <= self.routing_dropout < 1:
            raise ValueError("routing_noise must be >= 0 and routing_dropout in [0, 1)")


def squash(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Capsule non-linearity ``|x|^2 / (1 + |x|^2) * x / |x|``."""
    sq = (x**2).sum(dim=dim, keepdim=True)
    return sq / (1 + sq) * x / torch.sqrt(sq + 1e-12)


def vgg19_to_pool3(pretrained: bool | str) -> nn.Sequential:
    """VGG-19 ``features[0:19]`` (conv1_1 .. pool3), optionally with ImageNet weights.

    A local file is a torchvision/timm VGG-19 state dict; it must hold all of ``features``
    (checked strictly, see :func:`detectors.backbones.load_state_dict_file`).
    """
    from torchvision.models.vgg import cfgs, make_layers

    holder = nn.Module()
    if pretrained in (False, None, "", "false", "none"):
        return make_layers(list(_VGG19_TO_POOL3), batch_norm=False)
    if pretrained is True or pretrained == "timm":
        holder.features = make_layers(list(_VGG19_TO_POOL3), batch_norm=False)
        full = create_timm_backbone("vgg19", "timm")
        holder.features.load_state_dict(full.features[: len(holder.features)].state_dict())
        return holder.features
    holder.features = make_layers(cfgs["E"], batch_norm=False)
    load_state_dict_file(holder, pretrained)
    return holder.features[: 2 * len(_VGG19_TO_POOL3) - _VGG19_TO_POOL3.count("M")]


class StatsPool(nn.Module):
    """Per-channel mean and standard deviation over the spatial positions -> [B, 2, C]."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.flatten(2)
        return torch.stack((flat.mean(2), flat.std(2)), dim=1)


def _primary_capsule() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(256, 64, 3, 1, 1),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.Conv2d(64, 16, 3, 1, 1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        StatsPool(),
        nn.Conv1d(2, 8, 5, 2, 2),
        nn.BatchNorm1d(8),
        nn.Conv1d(8, 1, 3, 1, 1),
        nn.BatchNorm1d(1),
        nn.Flatten(1),
    )


class Routing(nn.Module):
    """Dynamic routing from ``n_in`` capsules of size ``d_in`` to ``n_out`` of size ``d_out``."""

    def __init__(self, n_in: int, n_out: int, d_in: int, d_out: int, iterations: int) -> None:
        super().__init__()
        self.iterations = iterations
        self.weights = nn.Parameter(torch.randn(n_out, n_in, d_out, d_in))

    def forward(self, x: torch.Tensor, noise: float = 0.0, dropout: float = 0.0) -> torch.Tensor:
        """``x`` [B, d_in, n_in] -> output capsules [B, d_out, n_out]."""
        weights = self.weights
        if noise > 0:
            weights = weights + noise * torch.randn_like(weights)
        # priors [B, n_out, n_in, d_out]: each input capsule's prediction of each output capsule
        priors = torch.einsum("oidk,bki->boid", weights, x)
        if dropout > 0:
            priors = F.dropout(priors, p=dropout) * (
                1 - dropout
            )  # plain Bernoulli mask, as the authors
        logits = torch.zeros_like(priors)
        for i in range(self.iterations):
            probs = torch.softmax(logits, dim=2)
            outputs = squash((probs * priors).sum(dim=2, keepdim=True), dim=3)
            if i != self.iterations - 1:
                logits = logits + priors * outputs
        return outputs.squeeze(2).transpose(1, 2)


@register_detector("capsule", family="Spatial")
class CapsuleForensics(Detector):
    """VGG-19 (to pool3) -> 10 primary capsules -> dynamic routing -> 2 output capsules."""

    Config = CapsuleConfig
    deepfakebench_name = "capsule_net"

    def __init__(self, cfg: CapsuleConfig) -> None:
        super().__init__(cfg)
        self.vgg = vgg19_to_pool3(cfg.pretrained)
        self.capsules = nn.ModuleList(_primary_capsule() for _ in range(cfg.num_capsules))
        self.capsules.apply(_init_weights)
        self.routing = Routing(cfg.num_capsules, 2, 8, 4, cfg.routing_iterations)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        x = self.vgg(batch["image"])
        primary = squash(
            torch.stack([cap(x) for cap in self.capsules], dim=-1), dim=-1
        )  # [B, 8, 10]
        noise = self.cfg.routing_noise if self.training else 0.0
        dropout = self.cfg.routing_dropout if self.training else 0.0
        z = self.routing(primary, noise=noise, dropout=dropout)  # [B, 4, 2]
        # at least float32 (under autocast z may be half); float64 stays float64
        classes = torch.softmax(z.to(torch.promote_types(z.dtype, torch.float32)), dim=-1)
        mean = classes.mean(dim=1)
        if self.cfg.variant == "deepfakebench":
            return self.outputs(mean, primary.flatten(1), classes=classes)
        logits = torch.log(mean.clamp_min(1e-12))  # softmax(logits) == mean class probabilities
        return self.outputs(logits, z.flatten(1), classes=classes)

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """DFB: ``vgg_ext.vgg_1`` (VGG-19 features 0-18), ``fea_ext.capsules``, ``routing_stats``."""
        return remap(
            state_dict,
            {
                "vgg_ext.vgg_1.": "vgg.",
                "fea_ext.capsules.": "capsules.",
                "routing_stats.route_weights": "routing.weights",
            },
        )

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The authors' CapsuleLoss: sum over output dimensions of CE on the softmax outputs."""
        label = batch["label"]
        classes = out["classes"]
        total = sum(F.cross_entropy(classes[:, i], label) for i in range(classes.shape[1]))
        return {"total": total, "capsule": total}


def _init_weights(m: nn.Module) -> None:
    """The authors' init: conv weights N(0, 0.02), batch-norm weights N(1, 0.02), biases 0."""
    if isinstance(m, (nn.Conv1d, nn.Conv2d)):
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)
