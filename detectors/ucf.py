"""UCF (Yan et al., "UCF: Uncovering Common Features for Generalizable Deepfake Detection",
ICCV 2023), following DeepfakeBench's reference implementation (paper 002, Table 1).

* Two Xception encoders (Sec. 3.2): the forgery encoder and the content encoder, each ending in
  a 1x1 conv 2048 -> 512 + BN + ReLU.
* The forgery features are split by two 1x1-conv stacks into *specific* and *common* forgery
  features (256 channels each); heads (pool, Linear 256 -> 512, LeakyReLU, Linear, dropout)
  classify common features as real/fake and specific features as the manipulation method
  (``method_label``: 0 real, 1..K fakes).
* Conditional decoder (Sec. 3.3): AdaIN injects forgery features (specific ++ common) as the
  style into the content features, three upsampling stages and a tanh give an image. Each image
  is reconstructed from its own content and its own forgery features (self) and from its own
  content and its pair partner's forgery features (cross; ``pair_index``).
* Losses (Sec. 3.4): ``CE_common + 0.1 * CE_specific + 0.3 * reconstruction + 0.05 *
  contrastive``; reconstruction is ``2 * (L1_self + L1_cross)`` (the sum of DeepfakeBench's four
  half-batch terms), contrastive is the triplet margin loss (margin 3) that pulls common features
  of the same label together and pushes the other label away, and likewise for specific
  features grouped by method. With probability ``shuffle_p`` the common features are permuted
  within each label during training (DeepfakeBench's index augmentation). The index augmentation
  and the contrastive anchors are drawn from Python's ``random`` in DeepfakeBench's order, so a
  seeded step permutes as DeepfakeBench's does.

Variants (``model.variant``): ``deepfakebench`` (default) is DeepfakeBench's ``ucf_detector.py``
exactly: its Xception in mode ``adjust_channel`` feeds ``bn4``'s output to the 1x1 adjust
convolution without the ReLU in between, and its contrastive term (``ContrastiveLoss``) is the sum
of four half-batch means (common and specific features of each half against anchors permuted
within the halves; the specific anchors within each method), twice the ``paper`` variant's
whole-batch form. ``paper`` keeps Xception's ReLU (the UCF paper's Fig. 2 uses the encoder's
activated features) and the whole-batch triplet means. DeepfakeBench checkpoints load through
:meth:`UCF.map_deepfakebench_state_dict`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

from fairforensics.detectors.backbones.xception import create_xception
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.dfb_keys import XCEPTION_HEAD, remap
from fairforensics.detectors.registry import register_detector


@dataclass
class UCFConfig(DetectorConfig):
    """``num_methods``: manipulation methods of the training set (FF++: 4); loss weights."""

    num_methods: int = 4
    feat_dim: int = 512
    spe_weight: float = 0.1
    rec_weight: float = 0.3
    con_weight: float = 0.05
    margin: float = 3.0
    shuffle_p: float = 0.7
    variant: Literal["deepfakebench", "paper"] = "deepfakebench"

    def __post_init__(self) -> None:
        if self.num_methods < 1:
            raise ValueError(f"num_methods must be >= 1, got {self.num_methods}")
        if self.feat_dim < 2 or self.feat_dim % 2:
            raise ValueError(f"feat_dim must be an even number >= 2, got {self.feat_dim}")
        if not 0 <= self.shuffle_p <= 1:
            raise ValueError(f"shuffle_p must be in [0, 1], got {self.shuffle_p}")


class _Encoder(nn.Module):
    """Xception features (no pooling; ``relu``: with the final ReLU after ``bn4``) + 1x1 conv to
    ``dim`` channels, BN, ReLU."""

    def __init__(self, pretrained: bool | str, dim: int, relu: bool = True) -> None:
        super().__init__()
        self.xception = create_xception(pretrained)
        if not relu:
            self.xception.act4 = nn.Identity()
        self.adjust = nn.Sequential(nn.Conv2d(2048, dim, 1, 1), nn.BatchNorm2d(dim), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.adjust(self.xception.forward_features(x))


def _conv1x1_stack(cin: int, hidden: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, hidden, 1),
        nn.LeakyReLU(inplace=True),
        nn.Conv2d(hidden, hidden, 1),
        nn.LeakyReLU(inplace=True),
        nn.Conv2d(hidden, cout, 1),
    )


class _Head(nn.Module):
    """Global pool -> Linear -> LeakyReLU -> Linear -> dropout 0.2; returns (logits, pooled)."""

    def __init__(self, cin: int, hidden: int, cout: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(cin, hidden), nn.LeakyReLU(inplace=True), nn.Linear(hidden, cout)
        )
        self.drop = nn.Dropout(0.2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pooled = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.drop(self.mlp(pooled)), pooled


def adain(content: torch.Tensor, style: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Adaptive instance normalisation: content statistics replaced by the style's, per channel."""
    c = content.flatten(2)
    s = style.flatten(2)
    c_mean, c_std = c.mean(-1)[..., None, None], (c.var(-1) + eps).sqrt()[..., None, None]
    s_mean, s_std = s.mean(-1)[..., None, None], (s.var(-1) + eps).sqrt()[..., None, None]
    return (content - c_mean) / c_std * s_std + s_mean


def _double_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1),
        nn.ReLU(inplace=True),
    )


class ConditionalDecoder(nn.Module):
    """AdaIN decoder: forgery features (style) + content features -> image in [-1, 1] at 32x."""

    def __init__(self, dim: int = 512) -> None:
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.dropout = nn.Dropout(0.3)
        self.conv3 = _double_conv(dim, 256)
        self.conv2 = _double_conv(256, 128)
        self.conv1 = _double_conv(128, 64)
        self.last = nn.Conv2d(64, 3, 1)
        self.up_last = nn.Upsample(scale_factor=4, mode="bilinear", align_corners=True)

    def forward(self, style: torch.Tensor, content: torch.Tensor) -> torch.Tensor:
        x, c = content, style
        for conv in (self.conv3, self.conv2, self.conv1):
            x = conv(self.dropout(self.up(adain(x, c))))
            c = conv(self.dropout(self.up(c)))
        return torch.tanh(self.up_last(self.last(x)))


def _random_member(pool: torch.Tensor) -> torch.Tensor:
    """For each sample, the index of a random sample ``j`` with ``pool[i, j]`` true (-1 if none)."""
    scores = torch.rand(pool.shape, device=pool.device).masked_fill(~pool, -1.0)
    best = scores.argmax(dim=1)
    return torch.where(pool.any(dim=1), best, torch.full_like(best, -1))


def _shuffle_within(groups: torch.Tensor, from_end: bool = False) -> torch.Tensor:
    """A random permutation that maps each sample to a sample of the same group, drawn with
    Python's ``random`` as DeepfakeBench draws it: each group's indices (groups in order of first
    appearance) go through ``random.shuffle``; the k-th member of a group takes the k-th shuffled
    index, or with ``from_end`` the k-th from the end (``swap_spe_features``'s ``pop``)."""
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups.tolist()):
        members.setdefault(g, []).append(i)
    for idx in members.values():
        random.shuffle(idx)
        if from_end:
            idx.reverse()
    taken = dict.fromkeys(members, 0)
    perm = []
    for g in groups.tolist():
        perm.append(members[g][taken[g]])
        taken[g] += 1
    return torch.tensor(perm, device=groups.device)


def triplet_loss(
    feat: torch.Tensor, groups: torch.Tensor, label: torch.Tensor, margin: float
) -> torch.Tensor:
    """Mean ``max(0, d(a, p) - d(a, n) + margin)``: p from the same group, n of the other label."""
    pos = _shuffle_within(groups)
    neg = _random_member(label[:, None] != label[None, :])
    ok = neg >= 0
    if not ok.any():
        return feat.sum() * 0.0
    a, p, n = feat[ok], feat[pos[ok]], feat[neg[ok]]
    return torch.clamp(
        F.pairwise_distance(a, p) - F.pairwise_distance(a, n) + margin, min=0.0
    ).mean()


def _margin_loss(
    anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor, margin: float
) -> torch.Tensor:
    return torch.clamp(
        F.pairwise_distance(anchor, positive) - F.pairwise_distance(anchor, negative) + margin,
        min=0.0,
    ).mean()


def half_batch_contrastive(
    common: torch.Tensor, specific: torch.Tensor, method: torch.Tensor, margin: float
) -> torch.Tensor:
    """DeepfakeBench's UCF ``ContrastiveLoss``: four half-batch triplet means.

    The batch is two halves (DeepfakeBench's pair batch: reals, then their fakes). Common features of each half are pulled towards a
    permutation of their own half and pushed from a permutation of the other; specific features
    likewise, with anchors permuted within each ``method``; the permutations are drawn from
    Python's ``random`` in DeepfakeBench's order (:func:`_shuffle_within`).
    """
    n = common.shape[0] // 2
    if n == 0:
        return common.sum() * 0.0
    halves = torch.arange(2 * n, device=common.device) // n
    anchor_1, anchor_2 = common[_shuffle_within(halves)].split(n)
    loss = _margin_loss(common[:n], anchor_1, anchor_2, margin)
    loss = loss + _margin_loss(common[n : 2 * n], anchor_2, anchor_1, margin)
    spe_anchor = specific[_shuffle_within(method, from_end=True)]
    loss = loss + _margin_loss(specific[:n], spe_anchor[:n], spe_anchor[n : 2 * n], margin)
    return loss + _margin_loss(specific[n : 2 * n], spe_anchor[n : 2 * n], spe_anchor[:n], margin)


def with_num_methods(model_cfg: dict[str, Any], method_names: list[str]) -> dict[str, Any]:
    """``model_cfg`` with ``num_methods`` = the training split's manipulation methods (at least
    one), unless it sets it: the specific head's classes (UCF, PG-FDD)."""
    if "num_methods" in model_cfg:
        return model_cfg
    return {**model_cfg, "num_methods": max(len(method_names), 1)}


def training_outputs(
    model: nn.Module,
    f_spe: torch.Tensor,
    f_sha: torch.Tensor,
    content: torch.Tensor,
    pair: torch.Tensor,
    size: torch.Size,
) -> dict[str, torch.Tensor]:
    """The training outputs UCF and PG-FDD share: the common head's (``logits_sha``,
    ``feat_sha``) and the specific head's (``logits_spe``, ``feat_spe``) logits and features,
    and UCF's self and cross reconstructions (``recon_self``: each image's features with its own
    content; ``recon_cross``: its pair partner's features with that content), resized to
    ``size`` (the input's). ``model`` holds ``decoder``, ``head_sha`` and ``head_spe``."""
    f_all = torch.cat([f_spe, f_sha], dim=1)
    pair = pair.to(f_all.device)
    recon_self = model.decoder(f_all, content)
    recon_cross = model.decoder(f_all[pair], content)
    if recon_self.shape[-2:] != size:
        recon_self = F.interpolate(recon_self, size=size, mode="bilinear", align_corners=True)
        recon_cross = F.interpolate(recon_cross, size=size, mode="bilinear", align_corners=True)
    logits_sha, feat_sha = model.head_sha(f_sha)
    logits_spe, feat_spe = model.head_spe(f_spe)
    return {
        "logits_sha": logits_sha,
        "feat_sha": feat_sha,
        "logits_spe": logits_spe,
        "feat_spe": feat_spe,
        "recon_self": recon_self,
        "recon_cross": recon_cross,
    }


def training_method_labels(
    batch: dict[str, Any], label: torch.Tensor, num_methods: int, who: str
) -> torch.Tensor:
    """The batch's ``method_label`` (0 real, 1..K methods, -100 unseen), checked against K."""
    method = batch.get("method_label")
    if method is None:
        raise KeyError(f"{who} training needs batch key 'method_label' (0 real, 1..K methods)")
    method = method.to(label.device)
    if int(method.max()) > num_methods:
        raise ValueError(
            f"method_label {int(method.max())} exceeds model.num_methods={num_methods}"
        )
    return method


def specific_and_reconstruction(
    out: dict[str, torch.Tensor], batch: dict[str, Any], method: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """UCF's method-specific CE (0 when every method is unseen) and its L1 reconstruction loss
    (self + cross, each a mean, times 2)."""
    spe = (
        F.cross_entropy(out["logits_spe"].float(), method)
        if (method >= 0).any()
        else out["logits_spe"].sum() * 0.0
    )
    image = batch["image"].float()
    rec = 2.0 * (
        (out["recon_self"].float() - image).abs().mean()
        + (out["recon_cross"].float() - image).abs().mean()
    )
    return spe, rec


@register_detector("ucf", family="Spatial")
class UCF(Detector):
    """Forgery/content encoders, common/specific heads and the conditional decoder."""

    Config = UCFConfig
    requires = frozenset({"pairs", "method_label"})
    deepfakebench_name = "ucf"

    @classmethod
    def configure_from_data(
        cls, model_cfg: dict[str, Any], method_names: list[str]
    ) -> dict[str, Any]:
        return with_num_methods(model_cfg, method_names)

    def __init__(self, cfg: UCFConfig) -> None:
        super().__init__(cfg)
        half = cfg.feat_dim // 2
        relu = cfg.variant == "paper"
        self.encoder_f = _Encoder(cfg.pretrained, cfg.feat_dim, relu)
        self.encoder_c = _Encoder(cfg.pretrained, cfg.feat_dim, relu)
        self.block_spe = _conv1x1_stack(cfg.feat_dim, half, half)
        self.block_sha = _conv1x1_stack(cfg.feat_dim, half, half)
        self.head_spe = _Head(half, cfg.feat_dim, cfg.num_methods + 1)
        self.head_sha = _Head(half, cfg.feat_dim, 2)
        self.decoder = ConditionalDecoder(cfg.feat_dim)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        image = batch["image"]
        forgery = self.encoder_f(image)
        f_spe, f_sha = self.block_spe(forgery), self.block_sha(forgery)
        pair = batch.get("pair_index")
        if not self.training or pair is None:
            logits, feat = self.head_sha(f_sha)
            return self.outputs(logits, feat)
        label = batch["label"]
        if random.random() < self.cfg.shuffle_p:
            f_sha = f_sha[_shuffle_within(label)]
        content = self.encoder_c(image)
        out = training_outputs(self, f_spe, f_sha, content, pair, image.shape[-2:])
        return self.outputs(out.pop("logits_sha"), out.pop("feat_sha"), **out)

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The four UCF losses in training; common-feature CE alone at evaluation."""
        label = batch["label"]
        ce = F.cross_entropy(out["logits"], label)
        if "recon_self" not in out:
            return {"total": ce, "ce": ce}
        method = training_method_labels(batch, label, self.cfg.num_methods, "UCF")
        spe, rec = specific_and_reconstruction(out, batch, method)
        if self.cfg.variant == "deepfakebench":
            con = half_batch_contrastive(out["feat"], out["feat_spe"], method, self.cfg.margin)
        else:
            con = triplet_loss(out["feat"], label, label, self.cfg.margin) + triplet_loss(
                out["feat_spe"], method, label, self.cfg.margin
            )
        total = (
            ce + self.cfg.spe_weight * spe + self.cfg.rec_weight * rec + self.cfg.con_weight * con
        )
        return {
            "total": total,
            "ce": ce,
            "specific": spe,
            "reconstruction": rec,
            "contrastive": con,
        }

    def map_deepfakebench_state_dict(
        self, state_dict: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        rules: list[tuple[str, str]] = []
        for enc in ("encoder_f", "encoder_c"):
            rules += [(f"{enc}.adjust_channel.", f"{enc}.adjust."), (f"{enc}.", f"{enc}.xception.")]
        rules += [(f"{b}.conv2d.", f"{b}.") for b in ("block_spe", "block_sha")]
        rules += [(f"{h}.mlp.", f"{h}.mlp.") for h in ("head_spe", "head_sha")]
        rules += [(f"con_gan.dconv_up{i}.", f"decoder.conv{i}.") for i in (1, 2, 3)]
        rules += [("con_gan.conv_last.", "decoder.last.")]
        drop = [f"{enc}.{XCEPTION_HEAD}" for enc in ("encoder_f", "encoder_c")]
        return remap(state_dict, rules, drop=drop)
