"""One optimisation step, shared by the trainer and ``scripts/bench_train.py``.

Normalise the uint8 batch on the device (channels_last when asked), forward and loss under
autocast, a finite-loss check agreed by every rank, backward through the grad scaler, optional
gradient clipping, the optimiser and the per-step scheduler. An optional ``fair_loss``
(:class:`training.fair_losses.FairLoss`) rewrites the detector's losses before the backward.
With ``sam`` (:class:`training.sam.SharpnessAwarePerturbation`) the step is SAM's: a second
forward-backward at the perturbed weights, with batch-norm statistics frozen, gives the gradient
the optimiser applies; the losses reported are the first pass's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from fairforensics.configs import ConfigError
from fairforensics.evaluation.predict import autocast
from fairforensics.preprocessing.frames import to_device
from fairforensics.training import distributed as D
from fairforensics.training.sam import SharpnessAwarePerturbation, frozen_bn_statistics


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; the run stops and keeps its last good checkpoint."""

    def __init__(self, message: str, terms: dict[str, float]) -> None:
        super().__init__(message)
        self.terms = terms


class TrainStep:
    """``step(batch) -> {loss name: float}`` for ``detector`` with ``optimizer``.

    ``forward`` is the module called on the batch (the detector itself, its DDP wrapper or its
    ``torch.compile`` form); losses come from ``detector.loss``. A non-finite loss raises
    :class:`NonFiniteLossError` before the optimiser touches the parameters.
    """

    def __init__(
        self,
        detector: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        device: torch.device,
        forward: torch.nn.Module | None = None,
        amp_dtype: torch.dtype | None = None,
        channels_last: bool = False,
        grad_clip: float | None = None,
        scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
        fair_loss: Callable[..., dict[str, torch.Tensor]] | None = None,
        sam: SharpnessAwarePerturbation | None = None,
    ) -> None:
        if sam is not None and amp_dtype == torch.float16:
            raise ConfigError(
                "SAM (train.optimizer.sam_rho > 0) needs train.precision bf16 or fp32: fp16's "
                "loss scaling is not supported with it"
            )
        self.detector = detector
        self.forward = forward if forward is not None else detector
        self.optimizer = optimizer
        self.device = device
        self.amp_dtype = amp_dtype
        self.channels_last = channels_last
        self.grad_clip = grad_clip
        self.scheduler = scheduler
        self.fair_loss = fair_loss
        self.sam = sam
        self.scaler = torch.amp.GradScaler(device.type, enabled=amp_dtype == torch.float16)

    def _losses(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """Forward and loss under autocast; a non-finite total raises on every rank."""
        with autocast(self.device, self.amp_dtype):
            out = self.forward(batch)
            losses = self.detector.loss(batch, out)
            if self.fair_loss is not None:
                losses = self.fair_loss(self.detector, batch, out, losses)
        if D.any_flag(not bool(torch.isfinite(losses["total"].detach()).all()), self.device):
            terms = {k: float(v.detach().float().mean()) for k, v in losses.items()}
            raise NonFiniteLossError(f"non-finite loss: {terms}", terms)
        return losses

    def __call__(self, batch: dict[str, Any]) -> dict[str, float]:
        cfg = self.detector.cfg
        batch = to_device(batch, self.device, cfg.mean, cfg.std, self.channels_last)
        losses = self._losses(batch)
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(losses["total"]).backward()
        if self.sam is not None:
            self.sam.ascend()
            self.optimizer.zero_grad(set_to_none=True)
            try:
                with frozen_bn_statistics(self.detector):
                    self._losses(batch)["total"].backward()
            finally:
                self.sam.restore()
        if self.grad_clip:
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.detector.parameters(), self.grad_clip)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        if self.scheduler is not None:
            self.scheduler.step()
        return {k: float(v.detach().float().mean()) for k, v in losses.items()}


__all__ = ["NonFiniteLossError", "TrainStep"]
