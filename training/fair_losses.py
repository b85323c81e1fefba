"""Fairness-aware training losses DAG-FDD and DAW-FDD (Ju et al., "Improving Fairness in
Deepfake Detection", WACV 2024), as a wrapper around any detector's classification loss.

Both replace the mean of the per-sample classification losses by a distributionally robust
aggregate built on the conditional value at risk (Rockafellar and Uryasev 2000)::

    CVaR_a(l) = min_lambda  lambda + 1 / (a n) * sum_i [l_i - lambda]_+

which for ``n`` losses is the mean of the worst ``a n`` of them (the next one weighted by the
fractional part): ``a = 1`` is the mean, ``a -> 0`` the maximum. :func:`cvar` computes this
minimum exactly by sorting (no line search), so its gradient is the sub-gradient of the
variational form (it lives in ``detectors.cvar``, which PG-FDD's loss also uses).

- DAG-FDD (demographic-agnostic): ``CVaR_alpha`` over the batch's per-sample losses: the worst
  ``alpha`` share of samples, whatever group they belong to, drives training.
- DAW-FDD (demographic-aware), as the reference implementation in AI-Face-FairnessBench
  (Purdue-M2, ``training/detectors/daw_fdd.py`` with ``training/loss/daw_bce_loss.py``; the
  authors' group) computes it: for each group ``g``
  present in the batch (the batch attribute ``group_key``; the reference groups by gender x race,
  ``group_key: gender,race``), the group's risk is ``CVaR_eta`` of its pooled per-sample losses
  (real and fake together); the loss is ``CVaR_alpha`` over the groups' risks, one unweighted
  entry per group present in the batch. The reference's levels are ``eta = 0.9`` (inner) and
  ``alpha = 0.5`` (outer), our defaults.
- ``inner: class_balanced`` (an option, not the published method): a group's risk is the mean
  over its classes of ``CVaR_eta`` of the losses of (group, class), so a group's risk does not
  depend on its real/fake mix. Use it when the class mix differs between groups: the pooled risk
  of a group with more samples of the harder class is higher whatever its demographics, and the
  outer CVaR then weights that group for its class mix rather than for unfairness.

The per-sample losses come from ``detector.sample_loss(batch, out)`` (cross-entropy on
``logits`` with ``reduction="none"`` for every detector whose ``loss`` has a ``ce`` term equal
to their mean); the detector's other loss terms are kept unchanged:
``total = loss["total"] - loss["ce"] + fair(sample_loss)``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

import torch

from fairforensics.detectors.cvar import cvar

log = logging.getLogger(__name__)


@dataclass
class FairLossConfig:
    """``train.fair_loss``: ``name`` none | dag_fdd | daw_fdd; ``group_key`` the attribute DAW-FDD
    groups by (``a,b`` for the intersection of two); ``alpha`` the CVaR level over samples (DAG)
    or groups (DAW); ``eta`` DAW-FDD's CVaR level inside each group; ``inner`` DAW-FDD's inner
    risk: ``pooled`` (the published one) or ``class_balanced`` (module doc)."""

    name: Literal["none", "dag_fdd", "daw_fdd"] = "none"
    group_key: str = "gender"
    alpha: float = 0.5
    eta: float = 0.9
    inner: Literal["pooled", "class_balanced"] = "pooled"

    def __post_init__(self) -> None:
        for key in ("alpha", "eta"):
            value = getattr(self, key)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"train.fair_loss.{key} must be in (0, 1], got {value}")


def dag_fdd(losses: torch.Tensor, alpha: float) -> torch.Tensor:
    """DAG-FDD: ``CVaR_alpha`` of the per-sample losses (demographic-agnostic)."""
    return cvar(losses, alpha)


def daw_fdd(
    losses: torch.Tensor,
    labels: torch.Tensor,
    groups: list[str],
    alpha: float,
    eta: float,
    inner: str = "pooled",
) -> torch.Tensor:
    """DAW-FDD: ``CVaR_alpha`` over groups of each group's ``CVaR_eta`` risk (module doc).

    ``inner="pooled"`` takes the CVaR of a group's pooled losses (the reference code);
    ``"class_balanced"`` the mean over the group's classes of their CVaRs."""
    if len(groups) != losses.numel():
        raise ValueError(f"{len(groups)} group labels for {losses.numel()} losses")
    if inner not in ("pooled", "class_balanced"):
        raise ValueError(f"daw_fdd inner must be 'pooled' or 'class_balanced', got {inner!r}")
    risks = []
    for group in sorted(set(groups)):
        in_group = torch.tensor([g == group for g in groups], device=losses.device)
        if inner == "pooled":
            risks.append(cvar(losses[in_group], eta))
            continue
        per_class = [
            cvar(losses[in_group & (labels == y)], eta)
            for y in torch.unique(labels[in_group]).tolist()
        ]
        risks.append(torch.stack(per_class).mean())
    return cvar(torch.stack(risks), alpha)


class FairLoss:
    """Swaps a detector's mean classification loss for DAG-FDD or DAW-FDD (module doc)."""

    def __init__(self, cfg: FairLossConfig) -> None:
        if cfg.name == "none":
            raise ValueError("FairLoss needs train.fair_loss.name dag_fdd or daw_fdd")
        self.cfg = cfg
        self._checked = False

    def __call__(
        self,
        detector: Any,
        batch: dict[str, Any],
        out: dict[str, torch.Tensor],
        losses: dict[str, torch.Tensor],
    ) -> dict[str, torch.Tensor]:
        sample = detector.sample_loss(batch, out)
        self._check(detector, sample, losses)
        if self.cfg.name == "dag_fdd":
            fair = dag_fdd(sample, self.cfg.alpha)
        else:
            fair = daw_fdd(
                sample,
                batch["label"],
                self._groups(batch),
                self.cfg.alpha,
                self.cfg.eta,
                self.cfg.inner,
            )
        total = losses["total"] - losses["ce"] + fair
        return {**losses, "total": total, self.cfg.name: fair}

    def _groups(self, batch: dict[str, Any]) -> list[str]:
        """Each sample's group: the ``group_key`` value, or for ``a,b`` the values joined by
        ``/`` (``female/Asian``); an empty value is a group of its own."""
        attributes = batch.get("attributes") or {}
        keys = [k.strip() for k in self.cfg.group_key.split(",") if k.strip()]
        missing = [k for k in keys if k not in attributes]
        if missing or not keys:
            raise KeyError(
                f"train.fair_loss: the batch has no attribute {', '.join(map(repr, missing or ['']))} "
                f"(attributes: {sorted(attributes)}); set train.fair_loss.group_key or add it "
                "to the index"
            )
        columns = [[str(g) for g in attributes[k]] for k in keys]
        return ["/".join(values) for values in zip(*columns, strict=True)]

    def _check(self, detector: Any, sample: torch.Tensor, losses: dict[str, torch.Tensor]) -> None:
        """Once: the detector's ``ce`` term must be the mean of its per-sample losses."""
        if self._checked:
            return
        name = type(detector).__name__
        if "ce" not in losses or sample.ndim != 1:
            raise ValueError(
                f"train.fair_loss {self.cfg.name}: {name}'s loss has no per-sample 'ce' term; "
                "fair losses support detectors whose loss includes the mean cross-entropy 'ce'"
            )
        if not torch.allclose(sample.mean().detach(), losses["ce"].detach().float(), atol=1e-3):
            raise ValueError(
                f"train.fair_loss {self.cfg.name}: {name}'s 'ce' term ({losses['ce'].item():.4f}) "
                f"is not the mean of sample_loss ({sample.mean().item():.4f}); override "
                "sample_loss in the detector to use a fair loss with it"
            )
        self._checked = True
