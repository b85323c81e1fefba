"""Coverage of the ACC-lost interval of :func:`evaluation.calibration.transfer.acc_lost` by
simulation (issue 48, item 4).

Test sets of equal classes: a frame's logit is ``+/-MU + video effect + frame noise`` (fakes +),
its score the logistic of it. By symmetry the population EER threshold is 0.5 (logit 0), so the
true ACC lost at a threshold ``t`` is ``ACC(0.5) - ACC(t)`` of the population, which
:func:`true_acc_lost` computes exactly (normal distributions), not by simulation. At ``t = 0.5``
the truth is 0. Used by ``scripts/bench_acc_lost.py`` (JSON) and, small, by the tests.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from fairforensics.evaluation.calibration.transfer import acc_lost
from fairforensics.evaluation.predictions import Predictions

MU, VIDEO_SD, FRAME_SD = 1.0, 0.8, 0.5


def simulate(
    rng: np.random.Generator, n_videos: int = 40, frames: int = 4, shift: float = 0.0
) -> Predictions:
    """One test set: equal classes, ``frames`` frames a video, every logit moved by ``shift``."""
    video = np.repeat(np.arange(n_videos), frames)
    y = (video % 2).astype(int)
    z = (2 * y - 1) * MU + rng.normal(0, VIDEO_SD, n_videos)[video]
    z = z + rng.normal(0, FRAME_SD, len(video)) + shift
    return Predictions(
        dataset=["FF"] * len(y), video_id=[f"v{v}" for v in video],
        frame=np.tile(np.arange(frames), n_videos), label=y, score=1 / (1 + np.exp(-z)),
        method=np.where(y == 1, "DF", "real"),
    )  # fmt: skip


def true_acc_lost(threshold: float) -> float:
    """Population ACC lost at frame level at ``threshold`` (unshifted scores)."""
    sd = np.hypot(VIDEO_SD, FRAME_SD)

    def accuracy(t: float) -> float:  # t on the logit scale
        return 0.5 * stats.norm.cdf((t + MU) / sd) + 0.5 * stats.norm.cdf((MU - t) / sd)

    return float(accuracy(0.0) - accuracy(np.log(threshold / (1 - threshold))))


def coverage(
    n_videos: int, threshold: float, n_sets: int, n_boot: int = 500, seed: int = 0
) -> dict[str, float]:
    """Share of ``n_sets`` simulated test sets whose interval holds the true ACC lost, with its
    exact 95 % binomial (Clopper-Pearson) interval. Seeded."""
    rng = np.random.default_rng(seed)
    truth = true_acc_lost(threshold)
    hits = 0
    for _ in range(n_sets):
        est = acc_lost([simulate(rng, n_videos)], [threshold], n_boot=n_boot,
                       seed=int(rng.integers(2**31)))  # fmt: skip
        hits += est.low <= truth <= est.high
    ci = stats.binomtest(hits, n_sets).proportion_ci(0.95, method="exact")
    return {"videos": n_videos, "threshold": threshold, "true_acc_lost": truth,
            "rate": hits / n_sets, "low": float(ci.low), "high": float(ci.high), "n": n_sets}  # fmt: skip
