"""PG-FDD (Lin et al., "Preserving Fairness Generalization in Deepfake Detection", CVPR 2024).

Followed: the authors' code, Purdue-M2/Fairness-Generalization (commit 096cb67,
``training/detectors/fair_df_detector.py``, ``training/loss/{bal_loss,contrastive_regularization,
bi_level_CE}.py``, ``training/train.py``, ``training/sam.py``), the ``authors`` implementation
(default); and AI-Face-FairnessBench's copy (Purdue-M2/AI-Face-FairnessBench commit c94e02b,
``training/detectors/fair_df_detector.py``, ``training/loss/daw_bce_loss.py``,
``training/train_test.py``), the ``aiface`` implementation. Both are written here from reading
them; no code is copied. There is no DeepfakeBench model of PG-FDD, so no parity fixture.

Model (both implementations):

* Three Xception encoders (ImageNet-initialised in the reference), each ending in DeepfakeBench's
  1x1 conv 2048 -> 512 + BN + ReLU without the ReLU after ``bn4`` (UCF's encoder): forgery
  ``f``, content ``c`` and demographic ``d`` features (disentanglement, paper Sec. 3.1).
* The forgery features split by two 1x1-conv stacks into *specific* and *common* (domain-agnostic)
  forgery features, 256 channels each, as in UCF; a third stack maps ``d`` to 256 channels.
* Fusion (Sec. 3.2): ``AdaIN(d', common)``, the demographic features normalised per channel and
  given the common forgery features' mean and standard deviation. The fused features' head gives
  the prediction (``logits``/``prob``), the only output used at test time.
* Heads (pool, Linear 256 -> 512, LeakyReLU, Linear, dropout 0.2): common -> real/fake,
  specific -> method (``method_label``: 0 real, 1..K), demographic -> intersectional group,
  fused -> real/fake (``authors``: 2 logits; ``aiface``: 1 logit ``z``, ``logits = [0, z]``).
* A conditional decoder (UCF's) rebuilds each image from its forgery features (specific ++
  common) and its own conditioning (self) or from its pair partner's forgery features (cross);
  the conditioning is ``AdaIN(d, c)`` (``authors``) or ``c`` alone (``aiface``).

Losses (``total`` = the sum with the reference's weights)::

    common   CE(common logits, label)
    + 0.1  * specific        CE(specific logits, method_label)
    + 0.3  * reconstruction  L1, self + cross, each over both halves of the batch
    + 0.05 * contrastive     UCF's four half-batch triplet means (margin 3)
    + 0.1  * demographic     LDAM (Cao et al. 2019) over the groups: margins
                             max_m * (n_g / n_min)^(-1/4), max_m 0.5, scale s 30, n_g = training
                             samples of group g
    + 1.0  * fused           bi-level CVaR of the per-sample fused losses (authors: CE; aiface:
                             BCE on z, the same value): each group present in the batch gets
                             CVaR_0.9 of its losses (exact), then the groups' risks get the
                             smoothed CVaR_0.5 (tau1 1e-3, tau2 1e-4; ``detectors.cvar``)

``outer_search: reference`` (default) reproduces where the reference's search for the outer
``lambda`` ends: it scores every ``lambda`` at which ``exp((risk - lambda) / tau1)`` overflows in
float32 as ``float max``, so ``lambda >= max(risk) - 0.0887`` and the outer term lies between
CVaR_0.5 and the maximum of the groups' risks; ``exact`` minimises the smoothed objective itself
(then the outer term is CVaR_0.5 within about tau1).

Demographic groups (``group_attributes``, ``group_values``): the batch attribute values of each
sample (``batch["attributes"]``) index the intersectional group in row-major order of
``group_attributes``. The default, gender x race with ``[male, female] x [Asian, White, Black,
others]``, numbers the groups as the reference's ``intersec_label`` (0 male-Asian ... 3
male-others, 4 female-Asian ... 7 female-others). An attribute without listed values takes the
sorted values of the training split (:meth:`PGFDD.configure_from_attributes`). A sample whose
value is missing or not listed is an error naming it; it is never put in a group of its own.

Training: ``pairs`` with ``random_pairs`` (each fake with a random real, real half and fake half,
as the reference's ``pairDataset``), SAM around SGD (``configs/detectors/pg_fdd.yaml``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from torch.nn import functional as F

from fairforensics.configs import ConfigError
from fairforensics.detectors.base import Detector, DetectorConfig
from fairforensics.detectors.cvar import cvar, smoothed_cvar
from fairforensics.detectors.registry import register_detector
from fairforensics.detectors.ucf import (
    ConditionalDecoder,
    _conv1x1_stack,
    _Encoder,
    _Head,
    adain,
    half_batch_contrastive,
    specific_and_reconstruction,
    training_method_labels,
    training_outputs,
    with_num_methods,
)

log = logging.getLogger(__name__)

#: The reference's intersectional groups: gender x race (``intersec_label`` 0..7).
GENDER_RACE: dict[str, list[str]] = {
    "gender": ["male", "female"],
    "race": ["Asian", "White", "Black", "others"],
}


@dataclass
class PGFDDConfig(DetectorConfig):
    """PG-FDD's settings (module doc): implementation, demographic groups, loss weights."""

    implementation: Literal["authors", "aiface"] = "authors"
    num_methods: int = 5
    feat_dim: int = 512
    group_attributes: list[str] = field(default_factory=lambda: ["gender", "race"])
    group_values: dict[str, list[str]] = field(default_factory=lambda: dict(GENDER_RACE))
    group_counts: list[int] | None = None
    spe_weight: float = 0.1
    rec_weight: float = 0.3
    con_weight: float = 0.05
    fair_weight: float = 0.1
    fuse_weight: float = 1.0
    margin: float = 3.0
    ldam_max_m: float = 0.5
    ldam_s: float = 30.0
    inner_alpha: float = 0.9
    outer_alpha: float = 0.5
    outer_tau1: float = 1e-3
    outer_tau2: float = 1e-4
    outer_search: Literal["reference", "exact"] = "reference"

    def __post_init__(self) -> None:
        if self.num_methods < 1:
            raise ValueError(f"num_methods must be >= 1, got {self.num_methods}")
        if self.feat_dim < 2 or self.feat_dim % 2:
            raise ValueError(f"feat_dim must be an even number >= 2, got {self.feat_dim}")
        for key in ("inner_alpha", "outer_alpha"):
            if not 0 < getattr(self, key) <= 1:
                raise ValueError(f"{key} must be in (0, 1], got {getattr(self, key)}")
        if not self.group_attributes or len(set(self.group_attributes)) != len(
            self.group_attributes
        ):
            raise ValueError(
                f"group_attributes must name distinct attributes, got {self.group_attributes}"
            )
        for name, values in self.group_values.items():
            if not values or len(set(values)) != len(values):
                raise ValueError(f"group_values.{name} must list distinct values, got {values}")


def group_table(cfg: PGFDDConfig) -> list[tuple[str, ...]]:
    """Every intersectional group, as its tuple of values, in index order (row-major)."""
    missing = [a for a in cfg.group_attributes if a not in cfg.group_values]
    if missing:
        raise ConfigError(
            f"pg_fdd: model.group_values lists no values for {', '.join(missing)}; list them "
            "(e.g. --set model.group_values.lighting=[bright,dim]) or train through the "
            "trainer, which reads them from the training split"
        )
    groups: list[tuple[str, ...]] = [()]
    for name in cfg.group_attributes:
        groups = [g + (v,) for g in groups for v in cfg.group_values[name]]
    return groups


def ldam_margins(counts: list[int] | None, n_groups: int, max_m: float) -> torch.Tensor:
    """LDAM margins ``n_g^(-1/4)`` scaled to ``max_m`` at the smallest group; groups without
    training samples get 0 (they are never a target); no counts: ``max_m`` for every group."""
    if counts is None:
        return torch.full((n_groups,), float(max_m))
    n = np.asarray(counts, dtype=np.float64)
    m = np.zeros(n_groups)
    m[n > 0] = n[n > 0] ** -0.25
    return torch.tensor(m * (max_m / m.max()), dtype=torch.float32)


def ldam_loss(
    logits: torch.Tensor, target: torch.Tensor, margins: torch.Tensor, s: float
) -> torch.Tensor:
    """LDAM: cross-entropy of ``s * (logits - margin of the target at the target)``."""
    shifted = logits - F.one_hot(target, logits.shape[1]).to(logits.dtype) * margins[target, None]
    return F.cross_entropy(s * shifted, target)


def group_indices(
    attributes: Mapping[str, list[str]],
    names: list[str],
    values: Mapping[str, list[str]],
    video_ids: list[str] | None = None,
) -> list[int]:
    """The intersectional group index of each sample (row-major over ``names``); an attribute
    missing from the batch, or a value that ``values`` does not list (an empty one included),
    is a ``ValueError`` naming it (and the sample's video)."""
    missing = [a for a in names if a not in attributes]
    if missing:
        raise ValueError(
            f"pg_fdd: the batch has no attribute {', '.join(missing)} (it has "
            f"{', '.join(sorted(attributes)) or 'none'}); PG-FDD's groups are "
            f"{' x '.join(names)} (model.group_attributes)"
        )
    out = []
    for i, sample in enumerate(zip(*(attributes[a] for a in names), strict=True)):
        index = 0
        for name, value in zip(names, sample, strict=True):
            allowed = values[name]
            if str(value) not in allowed:
                video = video_ids[i] if video_ids is not None else "?"
                what = (
                    f"no {name} value"
                    if str(value) == ""
                    else f"{name} = {value!r}, which model.group_values.{name} does not list"
                )
                raise ValueError(
                    f"pg_fdd: sample {i} (video {video}) has {what} (listed: {', '.join(allowed)})"
                )
            index = index * len(allowed) + allowed.index(str(value))
        out.append(index)
    return out


def bilevel_cvar(
    losses: torch.Tensor,
    groups: torch.Tensor,
    inner_alpha: float,
    outer_alpha: float,
    tau1: float,
    tau2: float,
    *,
    reference_floor: bool,
) -> torch.Tensor:
    """PG-FDD's fused loss: exact ``CVaR_inner`` of each present group's losses, then the
    smoothed ``CVaR_outer`` of those risks (module doc; ``reference_floor``:
    :func:`detectors.cvar.smoothed_lambda`)."""
    risks = torch.stack([cvar(losses[groups == g], inner_alpha) for g in groups.unique()])
    return smoothed_cvar(risks, outer_alpha, tau1, tau2, reference_floor=reference_floor)


@register_detector("pg_fdd", family="Fairness")
class PGFDD(Detector):
    """Forgery / content / demographic encoders, AdaIN fusion, four heads and the decoder."""

    Config = PGFDDConfig
    requires = frozenset({"pairs", "random_pairs", "method_label"})

    @classmethod
    def configure_from_data(
        cls, model_cfg: dict[str, Any], method_names: list[str]
    ) -> dict[str, Any]:
        return with_num_methods(model_cfg, method_names)

    @classmethod
    def configure_from_attributes(
        cls, model_cfg: dict[str, Any], videos: list[tuple[str, Mapping[str, str], int]]
    ) -> dict[str, Any]:
        """Values of attributes that list none (sorted, from the training split) and
        ``group_counts`` (training samples per group) unless set; a training video that lacks a
        group attribute, or has a value not listed, is an error naming it."""
        defaults = PGFDDConfig()
        attributes = list(model_cfg.get("group_attributes", defaults.group_attributes))
        values = {k: list(v) for k, v in model_cfg.get("group_values", GENDER_RACE).items()}
        for name in attributes:
            lacking = [vid for vid, attrs, _ in videos if not attrs.get(name, "")]
            if lacking:
                raise ConfigError(
                    f"pg_fdd: {len(lacking)} of {len(videos)} training videos have no "
                    f"'{name}' attribute (e.g. {lacking[0]}); PG-FDD's groups need every "
                    f"training video's {', '.join(attributes)} (model.group_attributes): add "
                    "them to the index (scripts/import_demographics.py) or choose other attributes"
                )
            seen = sorted({attrs[name] for _, attrs, _ in videos})
            if name not in values:
                values[name] = seen
                continue
            unknown = [v for v in seen if v not in values[name]]
            if unknown:
                raise ConfigError(
                    f"pg_fdd: training videos have {name} = {', '.join(map(repr, unknown))}, "
                    f"which model.group_values.{name} does not list ({', '.join(values[name])})"
                )
        cfg = {**model_cfg, "group_attributes": attributes, "group_values": values}
        if model_cfg.get("group_counts") is None:
            table = group_table(PGFDDConfig(group_attributes=attributes, group_values=values))
            position = {g: i for i, g in enumerate(table)}
            counts = [0] * len(table)
            for _, attrs, samples in videos:
                counts[position[tuple(attrs[a] for a in attributes)]] += samples
            empty = [("/".join(g)) for g, n in zip(table, counts, strict=True) if n == 0]
            if empty:
                log.warning("pg_fdd: no training samples in the groups %s", ", ".join(empty))
            cfg["group_counts"] = counts
        return cfg

    def __init__(self, cfg: PGFDDConfig) -> None:
        super().__init__(cfg)
        self.groups = group_table(cfg)
        if cfg.group_counts is not None and len(cfg.group_counts) != len(self.groups):
            raise ConfigError(
                f"pg_fdd: model.group_counts has {len(cfg.group_counts)} entries for "
                f"{len(self.groups)} groups ({' x '.join(cfg.group_attributes)})"
            )
        if cfg.group_counts is not None and (
            min(cfg.group_counts) < 0 or not any(cfg.group_counts)
        ):
            raise ConfigError(
                f"pg_fdd: model.group_counts {cfg.group_counts} must be >= 0, not all 0"
            )
        half = cfg.feat_dim // 2
        self.encoder_f = _Encoder(cfg.pretrained, cfg.feat_dim, relu=False)
        self.encoder_c = _Encoder(cfg.pretrained, cfg.feat_dim, relu=False)
        self.encoder_fair = _Encoder(cfg.pretrained, cfg.feat_dim, relu=False)
        self.block_spe = _conv1x1_stack(cfg.feat_dim, half, half)
        self.block_sha = _conv1x1_stack(cfg.feat_dim, half, half)
        self.block_fair = _conv1x1_stack(cfg.feat_dim, half, half)
        self.head_spe = _Head(half, cfg.feat_dim, cfg.num_methods + 1)
        self.head_sha = _Head(half, cfg.feat_dim, 2)
        self.head_fair = _Head(half, cfg.feat_dim, len(self.groups))
        self.head_fused = _Head(half, cfg.feat_dim, 2 if cfg.implementation == "authors" else 1)
        self.decoder = ConditionalDecoder(cfg.feat_dim)
        margins = ldam_margins(cfg.group_counts, len(self.groups), cfg.ldam_max_m)
        self.register_buffer("ldam_margins", margins, persistent=False)

    def group_labels(self, batch: dict[str, Any]) -> torch.Tensor:
        """Each sample's intersectional group index (:func:`group_indices`)."""
        index = group_indices(
            batch.get("attributes") or {},
            self.cfg.group_attributes,
            self.cfg.group_values,
            batch.get("video_id"),
        )
        return torch.tensor(index, dtype=torch.long, device=batch["label"].device)

    def forward(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        image = batch["image"]
        forgery = self.encoder_f(image)
        demographic = self.encoder_fair(image)
        f_spe, f_sha = self.block_spe(forgery), self.block_sha(forgery)
        f_fair = self.block_fair(demographic)
        fused_logits, fused_feat = self.head_fused(adain(f_fair, f_sha))
        if fused_logits.shape[1] == 1:
            fused_logits = torch.cat([torch.zeros_like(fused_logits), fused_logits], dim=1)
        if not self.training:
            return self.outputs(fused_logits, fused_feat)
        pair = batch.get("pair_index")
        if pair is None:
            raise ValueError(
                "PG-FDD trains on real/fake pairs: the batch needs 'pair_index' (the data "
                "pipeline gives it for requires 'pairs')"
            )
        content = self.encoder_c(image)
        if self.cfg.implementation == "authors":
            content = adain(demographic, content)
        out = training_outputs(self, f_spe, f_sha, content, pair, image.shape[-2:])
        out["logits_fair"] = self.head_fair(f_fair)[0]
        return self.outputs(fused_logits, fused_feat, **out)

    def loss(self, batch: dict[str, Any], out: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The six PG-FDD terms in training; CE of the fused prediction at evaluation."""
        label = batch["label"]
        if "recon_self" not in out:
            ce = F.cross_entropy(out["logits"].float(), label)
            return {"total": ce, "ce": ce}
        c = self.cfg
        method = training_method_labels(batch, label, c.num_methods, "PG-FDD")
        groups = self.group_labels(batch)
        common = F.cross_entropy(out["logits_sha"].float(), label)
        spe, rec = specific_and_reconstruction(out, batch, method)
        con = half_batch_contrastive(out["feat_sha"], out["feat_spe"], method, c.margin)
        fair = ldam_loss(out["logits_fair"].float(), groups, self.ldam_margins, c.ldam_s)
        per_sample = F.cross_entropy(out["logits"].float(), label, reduction="none")
        fused = bilevel_cvar(
            per_sample,
            groups,
            c.inner_alpha,
            c.outer_alpha,
            c.outer_tau1,
            c.outer_tau2,
            reference_floor=c.outer_search == "reference",
        )
        total = (
            common
            + c.spe_weight * spe
            + c.rec_weight * rec
            + c.con_weight * con
            + c.fair_weight * fair
            + c.fuse_weight * fused
        )
        return {
            "total": total,
            "common": common,
            "specific": spe,
            "reconstruction": rec,
            "contrastive": con,
            "demographic": fair,
            "fused": fused,
        }


__all__ = [
    "GENDER_RACE",
    "PGFDD",
    "PGFDDConfig",
    "bilevel_cvar",
    "group_indices",
    "group_table",
    "ldam_loss",
    "ldam_margins",
]
