"""SLADD (Chen et al., "Self-supervised Learning of Adversarial Example: Towards Good
Generalizations for Deepfake Detection", CVPR 2022), as in DeepfakeBench v2
(``training/detectors/sladd_detector.py``, ``utils/sladd_api.py``).

Training sees real/fake pairs whose real face is drawn at random, as DeepfakeBench's
``pairDataset`` draws it (``pairs`` + ``random_pairs``, with ``landmarks`` and ``mask``). For every pair the
real and the fake swap places with probability 0.5; then an adversarial **synthesiser** (an
Xception with a 6-channel stem on the pair, dropout 0.5 and three heads) samples a forgery
region (10-way softmax), a blending type (4-way softmax) and reads a magnitude (sigmoid), and
:mod:`detectors.sladd_synthesis` pastes that region of the fake into the real face (type 3, or a
fake in first place, leaves the image as it is). The detector trains on these images and their
horizontal flips (one pair gives two images) with

    overall = CE(label) + 0.1 * MSE(forgery map, blend mask) + 0.05 * AM-softmax(type, type label)
              + 0.1 * MSE(magnitude) (type-2 images only)

where the forgery map is a sigmoid map of the block-7 features, the type labels are the blending
types 0-2, 3 for an untouched real and 4 for an untouched fake, and the type head's AM-softmax
has margin 0.5 and scale 30. The synthesiser is trained at the same time, adversarially, by
REINFORCE: its loss is ``mean(-log p(actions) * overall) - 1e-5 * entropy``, with its own
learning rate (``synthesizer_lr_scale`` 0.25 of the detector's) and Adam beta1 (x 0.25), as
DeepfakeBench's separate optimiser. Here both losses go through one backward: the returned
``total`` has the value of ``overall`` and adds the synthesiser's loss with a zero value, so each
network receives exactly the gradient of its own loss (the images it makes are not
differentiable); the trainer gives the synthesiser its own parameter group
(:meth:`SLADD.optimizer_groups`). At evaluation only the classifier runs.

Variants (``model.variant``). ``deepfakebench`` (default) keeps DeepfakeBench's magnitude loss,
which broadcasts the [N, 1] predictions against the [N] targets (every prediction is regressed
on every type-2 target of the batch); ``paper`` regresses each type-2 image's magnitude on its
own target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import cv2
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones import create_timm_backbone
from fairforensics.detectors.backbones.xception import FEATURES, entry_side
from fairforensics.detectors.base import DetectorConfig
from fairforensics.detectors.dfb_keys import XCEPTION_HEAD, XCEPTION_UNUSED, remap
from fairforensics.detectors.registry import register_detector
from fairforensics.detectors.sladd_synthesis import REGIONS, TYPES, synthesize
from fairforensics.detectors.srm import am_softmax_loss
from fairforensics.detectors.xception_sladd import MIDDLE, RegressionMap, XceptionSLADDBase

UNTOUCHED_REAL, UNTOUCHED_FAKE = 3, 4


@dataclass
class SLADDConfig(DetectorConfig):
    """Loss weights, the type head's AM-softmax, and the synthesiser's optimiser scaling."""

    map_weight: float = 0.1
    type_weight: float = 0.05
    mag_weight: float = 0.1
    am_margin: float = 0.5
    am_scale: float = 30.0
    entropy_weight: float = 1e-5
    switch_p: float = 0.5
    synthesizer_lr_scale: float = 0.25
    synthesizer_beta1_scale: float = 0.25
    variant: Literal["deepfakebench", "paper"] = "deepfakebench"

    def __post_init__(self) -> None:
        for name in ("map_weight", "type_weight", "mag_weight", "entropy_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("switch_p", "synthesizer_beta1_scale"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.synthesizer_lr_scale <= 0:
            raise ValueError(f"synthesizer_lr_scale must be > 0, got {self.synthesizer_lr_scale}")


class Synthesizer(nn.Module):
    """The adversarial policy: Xception (6-channel stem) on a (real, fake) pair -> region logits
    [B, 10], type logits [B, 4], magnitude logit [B, 1]."""

    def __init__(self) -> None:
        super().__init__()
        self.net = create_timm_backbone("legacy_xception", False, num_classes=0, in_chans=6)
        nn.init.xavier_normal_(self.net.conv1.weight, gain=0.02)  # DeepfakeBench's new stem
        self.fc_region = nn.Sequential(nn.Dropout(0.5), nn.Linear(FEATURES, REGIONS))
        self.fc_type = nn.Sequential(nn.Dropout(0.5), nn.Linear(FEATURES, len(TYPES)))
        self.fc_mag = nn.Sequential(nn.Dropout(0.5), nn.Linear(FEATURES, 1))

    def forward(self, pair: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = self.net(pair)
        return self.fc_region(x), self.fc_type(x), self.fc_mag(x)


def sample_actions(
    region: torch.Tensor, kind: torch.Tensor, mag: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(region, type, magnitude, log-probability, entropy) per pair, as DeepfakeBench samples
    them (``synthesizer.calculate``): regions and types drawn by ``multinomial`` on their softmax,
    the magnitude is ``sigmoid`` of its logit (with log-probability ``log sigmoid``). Computed in
    the logits' dtype (half precision is promoted to float32), as the draw depends on it."""
    log_probs, entropy, actions = [], 0.0, []
    for logits in (region, kind):
        logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
        probs, log_p = F.softmax(logits, dim=1), F.log_softmax(logits, dim=1)
        entropy = entropy - (log_p * probs).sum(1)
        action = probs.detach().multinomial(num_samples=1)
        actions.append(action[:, 0])
        log_probs.append(log_p.gather(1, action)[:, 0])
    log_s = F.logsigmoid(mag.to(torch.promote_types(mag.dtype, torch.float32)))[:, 0]
    entropy = entropy - log_s * log_s.exp()
    return (
        actions[0],
        actions[1],
        log_s.exp().detach(),
        log_probs[0] + log_probs[1] + log_s,
        entropy,
    )


def magnitude_loss(
    mag: torch.Tensor, target: torch.Tensor, keep: torch.Tensor, broadcast: bool
) -> torch.Tensor:
    """MSE of the predicted magnitudes [N, 1] on the synthesiser's [N], type-2 images only
    (``keep``). ``broadcast``: DeepfakeBench's ``MSE(mag * keep, target * keep)``, whose [N, N]
    broadcast compares every prediction with every target."""
    mag = mag.float()
    if broadcast:
        return F.mse_loss(mag * keep, (target * keep).expand(mag.shape[0], -1))
    return F.mse_loss(mag[:, 0] * keep, target * keep)


def _to_uint8(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> np.ndarray:
    """A normalised [3, H, W] image as uint8 H x W x 3."""
    pixels = ((x.detach().float() * std + mean) * 255).clamp(0, 255).round()
    return pixels.permute(1, 2, 0).to(torch.uint8).cpu().numpy()


@register_detector("sladd", family="Spatial")
class SLADD(XceptionSLADDBase):
    """Xception + forgery map / type / magnitude heads, trained against an adversarial
    synthesiser (an Xception of its own)."""

    Config = SLADDConfig
    requires = frozenset({"pairs", "random_pairs", "landmarks", "mask"})
    deepfakebench_name = "sladd"

    def __init__(self, cfg: SLADDConfig) -> None:
        super().__init__(cfg)
        self.type_fc = nn.Linear(FEATURES, len(TYPES) + 1)
        self.mag_fc = nn.Linear(FEATURES, 1)
        self.map = RegressionMap(MIDDLE)
        self.synthesizer = Synthesizer()

    def optimizer_groups(self, lr: float, betas: tuple[float, float]) -> list[dict[str, Any]]:
        """The detector's parameters, and the synthesiser's at ``synthesizer_lr_scale`` x ``lr``
        with beta1 x ``synthesizer_beta1_scale`` (DeepfakeBench: lr / 4, betas (0.9 / 4, 0.999))."""
        synth = {id(p) for p in self.synthesizer.parameters()}
        own = [p for p in self.parameters() if p.requires_grad and id(p) not in synth]
        cfg = self.cfg
        synth_group = {
            "params": [p for p in self.synthesizer.parameters() if p.requires_grad],
            "lr": lr * cfg.synthesizer_lr_scale,
            "betas": (betas[0] * cfg.synthesizer_beta1_scale, betas[1]),
        }
        return [{"params": own}, synth_group]

    # ------------------------------------------------------------------ synthesis
    def _pairs(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """(real index, fake index) of every real/fake pair of the batch (``pair_index``)."""
        if "pair_index" not in batch:
            raise ValueError("sladd trains on real/fake pairs: the batch needs 'pair_index'")
        label, partner = batch["label"], batch["pair_index"]
        real = torch.nonzero((label == 0) & (label[partner] == 1))[:, 0]
        if real.numel() == 0:
            raise ValueError("sladd: the batch holds no real/fake pair")
        return real, partner[real]

    def _switch(self, n: int, device: torch.device) -> torch.Tensor:
        """Which of ``n`` pairs put the fake first: at ``switch_p`` 0.5 drawn as DeepfakeBench
        draws it (``torch.randint(0, 2)``), otherwise ``rand < switch_p``."""
        if self.cfg.switch_p == 0.5:
            return torch.randint(0, 2, (n,), device=device).bool()
        return torch.rand(n, device=device) < self.cfg.switch_p

    def synthesize(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """The synthesised training images (with their flips) and every target of the loss."""
        image, label = batch["image"], batch["label"]
        real, fake = self._pairs(batch)
        switch = self._switch(real.numel(), image.device)
        first = torch.where(switch, fake, real)
        second = torch.where(switch, real, fake)
        region, kind, mag, log_prob, entropy = sample_actions(
            *self.synthesizer(torch.cat([image[first], image[second]], dim=1))
        )
        mean = image.new_tensor(self.cfg.mean).view(3, 1, 1).float()
        std = image.new_tensor(self.cfg.std).view(3, 1, 1).float()
        side = entry_side(image.shape[-2]), entry_side(image.shape[-1])
        rng = np.random.default_rng(int(torch.randint(2**31 - 1, ())))
        images, masks, labels, types, mag_mask = [], [], [], [], []
        for i in range(first.numel()):
            a, b = int(first[i]), int(second[i])
            if int(label[a]) == 0 and int(kind[i]) != UNTOUCHED_REAL:
                out, mask = synthesize(
                    _to_uint8(image[a], mean, std),
                    batch["landmarks"][a].detach().cpu().numpy(),
                    _to_uint8(image[b], mean, std),
                    batch["landmarks"][b].detach().cpu().numpy(),
                    int(region[i]), int(kind[i]), float(mag[i]), rng,
                )  # fmt: skip
                img = torch.from_numpy(out).permute(2, 0, 1).float().to(image.device) / 255
                images.append(((img - mean) / std).to(image.dtype))
                labels.append(1)
                types.append(int(kind[i]))
                mag_mask.append(float(int(kind[i]) == 2))
            else:
                images.append(image[a])
                mask = (batch["mask"][a, 0].detach().float().cpu().numpy() > 0.5).astype(np.uint8)
                labels.append(int(label[a]))
                types.append(UNTOUCHED_REAL if int(label[a]) == 0 else UNTOUCHED_FAKE)
                mag_mask.append(0.0)
            small = cv2.resize(mask, (side[1], side[0]), interpolation=cv2.INTER_CUBIC)
            masks.append(torch.from_numpy(small.astype(np.float32)))
        new = torch.stack(images)
        alt = torch.stack(masks)[:, None].to(image.device)
        as_long = {"dtype": torch.long, "device": image.device}
        return {
            "image": torch.cat([new, new.flip(3)]),
            "mask": torch.cat([alt, alt.flip(3)]),
            "label": torch.tensor(labels * 2, **as_long),
            "type_label": torch.tensor(types * 2, **as_long),
            "mag_label": torch.cat([mag, mag]).detach(),
            "mag_mask": torch.tensor(mag_mask * 2, device=image.device),
            "log_prob": log_prob,
            "entropy": entropy,
        }

    # ------------------------------------------------------------------ model
    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        if not self.training:
            feat_map, _ = self.features(batch["image"])
            logits, pooled = self.classify(feat_map)
            return self.outputs(logits, pooled)
        synth = self.synthesize(batch)
        feat_map, middle = self.features(synth["image"])
        logits, pooled = self.classify(feat_map)
        heads = {"map": self.map(middle), "type": self.type_fc(pooled), "mag": self.mag_fc(pooled)}
        return self.outputs(logits, pooled, **heads, **{f"syn_{k}": v for k, v in synth.items()})

    def sample_loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> torch.Tensor:
        label = out.get("syn_label", batch["label"])
        return F.cross_entropy(out["logits"].float(), label, reduction="none")

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``overall`` (module docstring) plus the synthesiser's REINFORCE loss at zero value."""
        if "syn_label" not in out:
            ce = F.cross_entropy(out["logits"], batch["label"])
            return {"total": ce, "ce": ce}
        cfg = self.cfg
        ce = F.cross_entropy(out["logits"].float(), out["syn_label"])
        map_loss = F.mse_loss(out["map"].float(), out["syn_mask"])
        type_loss = am_softmax_loss(
            out["type"].float(), out["syn_type_label"], cfg.am_margin, cfg.am_scale
        )
        broadcast = cfg.variant == "deepfakebench"
        mag_loss = magnitude_loss(out["mag"], out["syn_mag_label"], out["syn_mag_mask"], broadcast)
        overall = (
            ce + cfg.map_weight * map_loss + cfg.type_weight * type_loss + cfg.mag_weight * mag_loss
        )
        entropy = out["syn_entropy"].mean()
        synth = (-out["syn_log_prob"] * overall.detach()).mean() - cfg.entropy_weight * entropy
        return {
            "total": overall + (synth - synth.detach()),
            "ce": ce,
            "map": map_loss,
            "type": type_loss,
            "mag": mag_loss,
            "synthesizer": synth.detach(),
            "entropy": entropy.detach(),
        }

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        """``Xception_SLADD`` with its heads, and the synthesiser (``netG.model``: ``iniconv`` is
        the stem, separable convolutions name their depthwise part ``c``)."""
        rules = [
            ("backbone." + XCEPTION_HEAD, "head."),
            *((f"backbone.{n}.", f"{n}.") for n in ("type_fc", "mag_fc", "map")),
            ("backbone.", "backbone."),
        ]
        src = "synthesizer.netG.model."
        for key in self.synthesizer.state_dict():
            if key.startswith("net."):
                rest = key[len("net.") :]
                dfb = (
                    "iniconv." + rest[len("conv1.") :]
                    if rest.startswith("conv1.")
                    else rest.replace(".conv1.", ".c.")
                )
            else:
                dfb = key
            rules.append((src + dfb, "synthesizer." + key))
        return remap(state_dict, rules, drop=["backbone." + XCEPTION_UNUSED])
