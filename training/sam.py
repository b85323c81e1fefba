"""Sharpness-aware minimisation (SAM; Foret et al., ICLR 2021) around the trainer's optimiser.

One SAM step: the gradient ``g`` at the weights ``w`` (first forward-backward), a move to
``w + e`` with ``e = rho * g / ||g||`` (``adaptive``: ``e_i = rho * w_i**2 g_i / ||w g||``, ASAM's
scaling), a second forward-backward there, the weights set back to ``w``, and the base optimiser's
step with the second gradient. Batch-norm running statistics are updated by the first pass only:
during the second their momentum is 0 (batch statistics are still used). This is the SAM of
PG-FDD's reference code (Purdue-M2/Fairness-Generalization ``training/sam.py`` with
``utils/bypass_bn.py``), which its paper calls loss flattening; :class:`training.step.TrainStep`
runs it when ``train.optimizer.sam_rho`` > 0.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

import torch
from torch.nn.modules.batchnorm import _BatchNorm


class SharpnessAwarePerturbation:
    """Moves parameters to ``w + e(w)`` from their current gradients and back."""

    def __init__(self, params: Iterable[torch.nn.Parameter], rho: float, adaptive: bool) -> None:
        if rho <= 0:
            raise ValueError(f"SAM rho must be > 0, got {rho}")
        self.params = [p for p in params if p.requires_grad]
        self.rho = rho
        self.adaptive = adaptive
        self._saved: list[tuple[torch.nn.Parameter, torch.Tensor]] = []

    @torch.no_grad()
    def ascend(self) -> None:
        """``w <- w + e(w)`` from the gradients in ``.grad`` (those without one stay)."""
        with_grad = [p for p in self.params if p.grad is not None]
        if not with_grad:
            return
        scaled = [(p.abs() * p.grad if self.adaptive else p.grad) for p in with_grad]
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in scaled]))
        scale = self.rho / (norm + 1e-12)
        self._saved = []
        for p in with_grad:
            step = (p * p if self.adaptive else 1.0) * p.grad * scale.to(p)
            self._saved.append((p, p.detach().clone()))
            p.add_(step)

    @torch.no_grad()
    def restore(self) -> None:
        """``w + e(w) -> w`` (exactly: the saved values, not a subtraction)."""
        for p, value in self._saved:
            p.copy_(value)
        self._saved = []


@contextlib.contextmanager
def frozen_bn_statistics(module: torch.nn.Module) -> Iterator[None]:
    """Batch-norm layers keep their running statistics (momentum 0) inside the block."""
    saved = []
    for m in module.modules():
        if isinstance(m, _BatchNorm):
            saved.append((m, m.momentum))
            m.momentum = 0.0
    try:
        yield
    finally:
        for m, momentum in saved:
            m.momentum = momentum


__all__ = ["SharpnessAwarePerturbation", "frozen_bn_statistics"]
