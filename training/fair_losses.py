"""Fairness-aware training losses DAG-FDD and DAW-FDD (Ju et al., "Improving Fairness in
Deepfake Detection", WACV 2024), as a wrapper around any detector's classification loss.

Both replace the mean of the per-sample classification losses by a distributionally robust
aggregate built on the conditional value at risk (Rockafellar and Uryasev 2000)::

    CVaR_a(l) = min_lambda  lambda + 1 / (a n) * sum_i [l_i - lambda]_+

which for ``n`` losses is the mean of the worst ``a n`` of them (the next one weighted by the
fractional part): ``a = 1`` is the mean, ``a -> 0`` the maximum. :func:`cvar` computes this
minimum exactly by sorting (no line search), so its gradient is the sub-gradient of the
variational form.

- DAG-FDD (demographic-agnostic): ``CVaR_alpha`` over the batch's per-sample losses: the worst
  ``alpha`` share of samples, whatever group they belong to, drives training.
- DAW-FDD (demographic-aware): for each group ``g`` (the batch attribute ``group_key``) and each
  class ``y`` present in it, the class-wise risk ``CVaR_eta`` of the losses of group ``g``,
  class ``y``; the group's risk is the mean over its classes (so real and fake count alike
  whatever their ratio in the group); the loss is ``CVaR_alpha`` over the groups' risks (equal
  weight per group present in the batch), which puts the weight on the worst-off groups.

The per-sample losses come from ``detector.sample_loss(batch, out)`` (cross-entropy on
``logits`` with ``reduction="none"`` for every detector whose ``loss`` has a ``ce`` term equal
to their mean); the detector's other loss terms are kept unchanged:
``total = loss["total"] - loss["ce"] + fair(sample_loss)``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Literal

import torch

log = logging.getLogger(__name__)


@dataclass
class FairLossConfig:
    """``train.fair_loss``: ``name`` none | dag_fdd | daw_fdd; ``group_key`` the attribute DAW-FDD
    groups by; ``alpha`` the CVaR level over samples (DAG) or groups (DAW); ``eta`` DAW-FDD's
    class-wise CVaR level inside each group."""

    name: Literal["none", "dag_fdd", "daw_fdd"] = "none"
    group_key: str = "gender"
    alpha: float = 0.5
    eta: float = 0.9

    def __post_init__(self) -> None:
        for key in ("alpha", "eta"):
            value = getattr(self, key)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"train.fair_loss.{key} must be in (0, 1], got {value}")


def cvar(losses: torch.Tensor, alpha: float) -> torch.Tensor:
    """Empirical ``CVaR_alpha`` of a 1-D tensor of losses (the mean of the worst ``alpha``
    share), exact and differentiable."""
    if losses.ndim != 1 or losses.numel() == 0:
        raise ValueError(f"cvar needs a non-empty 1-D tensor, got shape {tuple(losses.shape)}")
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"cvar alpha must be in (0, 1], got {alpha}")
    n = losses.numel()
    mass = alpha * n
    whole = min(int(math.floor(mass + 1e-9)), n)
    ordered = torch.sort(losses, descending=True).values
    total = ordered[:whole].sum()
    if whole < n and mass - whole > 1e-9:
        total = total + (mass - whole) * ordered[whole]
    return total / mass


def dag_fdd(losses: torch.Tensor, alpha: float) -> torch.Tensor:
    """DAG-FDD: ``CVaR_alpha`` of the per-sample losses (demographic-agnostic)."""
    return cvar(losses, alpha)


def daw_fdd(
    losses: torch.Tensor, labels: torch.Tensor, groups: list[str], alpha: float, eta: float
) -> torch.Tensor:
    """DAW-FDD: ``CVaR_alpha`` over groups of each group's mean class-wise ``CVaR_eta``."""
    if len(groups) != losses.numel():
        raise ValueError(f"{len(groups)} group labels for {losses.numel()} losses")
    risks = []
    for group in sorted(set(groups)):
        in_group = torch.tensor([g == group for g in groups], device=losses.device)
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
                sample, batch["label"], self._groups(batch), self.cfg.alpha, self.cfg.eta
            )
        total = losses["total"] - losses["ce"] + fair
        return {**losses, "total": total, self.cfg.name: fair}

    def _groups(self, batch: dict[str, Any]) -> list[str]:
        attributes = batch.get("attributes") or {}
        if self.cfg.group_key not in attributes:
            raise KeyError(
                f"train.fair_loss: the batch has no attribute {self.cfg.group_key!r} (attributes: "
                f"{sorted(attributes)}); set train.fair_loss.group_key or add it to the index"
            )
        return [str(g) for g in attributes[self.cfg.group_key]]

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
                f"train.fair_loss {self.cfg.name}: {name}'s 'ce' term ({float(losses['ce']):.4f}) "
                f"is not the mean of sample_loss ({float(sample.mean()):.4f}); override "
                "sample_loss in the detector to use a fair loss with it"
            )
        self._checked = True
