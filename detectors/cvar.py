"""Conditional value at risk (CVaR) of a batch of losses, exact and smoothed.

``CVaR_a(l) = min_lambda  lambda + 1 / (a n) * sum_i [l_i - lambda]_+`` (Rockafellar and Uryasev
2000) is, for ``n`` losses, the mean of the worst ``a n`` of them (the next one weighted by the
fractional part): ``a = 1`` is the mean, ``a -> 0`` the maximum. :func:`cvar` computes the
minimum exactly by sorting, so its gradient is the sub-gradient of the variational form.

:func:`smoothed_cvar` is the smoothed form that PG-FDD (Lin et al., CVPR 2024) uses over its
groups' risks: the hinge becomes ``tau1 * softplus((l - lambda) / tau1)`` and the objective gains
``tau2 / (2 a) * lambda**2``. It lives below ``training`` (which re-exports :func:`cvar` for
DAG-FDD / DAW-FDD) so that detectors can use it in their own losses.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import optimize
from torch.nn import functional as F

#: ln of float32's largest value: ``exp`` overflows in float32 above it.
FLOAT32_EXP_LIMIT = float(np.log(np.finfo(np.float32).max))


def _check(losses: torch.Tensor, alpha: float, name: str) -> None:
    if losses.ndim != 1 or losses.numel() == 0:
        raise ValueError(f"{name} needs a non-empty 1-D tensor, got shape {tuple(losses.shape)}")
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"{name} alpha must be in (0, 1], got {alpha}")


def cvar(losses: torch.Tensor, alpha: float) -> torch.Tensor:
    """Empirical ``CVaR_alpha`` of a 1-D tensor of losses (the mean of the worst ``alpha``
    share), exact and differentiable."""
    _check(losses, alpha, "cvar")
    n = losses.numel()
    mass = alpha * n
    whole = min(int(math.floor(mass + 1e-9)), n)
    ordered = torch.sort(losses, descending=True).values
    total = ordered[:whole].sum()
    if whole < n and mass - whole > 1e-9:
        total = total + (mass - whole) * ordered[whole]
    return total / mass


def smoothed_objective(
    losses: np.ndarray, lam: float, alpha: float, tau1: float, tau2: float
) -> float:
    """``lam + tau2/(2 alpha) lam**2 + 1/alpha * mean(tau1 * softplus((l - lam) / tau1))``."""
    hinge = tau1 * np.logaddexp(0.0, (losses - lam) / tau1)
    return float(lam + tau2 / (2 * alpha) * lam**2 + hinge.mean() / alpha)


def smoothed_lambda(
    losses: np.ndarray, alpha: float, tau1: float, tau2: float, reference_floor: bool
) -> float:
    """The minimiser of :func:`smoothed_objective` over ``[min(l) - 1000, max(l)]``.

    ``reference_floor`` also keeps ``lambda >= max(l) - tau1 * FLOAT32_EXP_LIMIT``: the reference
    code (Purdue-M2's ``fair_df_detector.py``) scores every ``lambda`` at which
    ``exp((l - lambda) / tau1)`` overflows in float32 as ``float max``, so its search never goes
    below that point. The objective is convex, so the constrained minimiser is the unconstrained
    one clipped to the floor.
    """
    low, high = float(losses.min()) - 1000.0, float(losses.max())
    if reference_floor:
        low = max(low, high - tau1 * FLOAT32_EXP_LIMIT)
    found = optimize.minimize_scalar(
        lambda x: smoothed_objective(losses, x, alpha, tau1, tau2),
        bounds=(low, high),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return float(found.x)


def smoothed_cvar(
    losses: torch.Tensor,
    alpha: float,
    tau1: float = 1e-3,
    tau2: float = 1e-4,
    *,
    reference_floor: bool = False,
) -> torch.Tensor:
    """Smoothed ``CVaR_alpha`` (module doc): the objective at its minimiser ``lambda*``, which is
    found in float64 and held constant, so the gradient of loss ``i`` is
    ``sigmoid((l_i - lambda*) / tau1) / (alpha n)``. ``reference_floor``: see
    :func:`smoothed_lambda`."""
    _check(losses, alpha, "smoothed_cvar")
    if tau1 <= 0 or tau2 < 0:
        raise ValueError(f"smoothed_cvar needs tau1 > 0 and tau2 >= 0, got {tau1}, {tau2}")
    values = losses.detach().double().cpu().numpy()
    lam = smoothed_lambda(values, alpha, tau1, tau2, reference_floor)
    hinge = tau1 * F.softplus((losses.float() - lam) / tau1)
    return lam + tau2 / (2 * alpha) * lam**2 + hinge.mean() / alpha


__all__ = [
    "FLOAT32_EXP_LIMIT",
    "cvar",
    "smoothed_cvar",
    "smoothed_lambda",
    "smoothed_objective",
]
