"""Coverage of the calibration intervals on a simulated over-confident detector (JSON).

Generator: videos of known calibrated log-odds ``l ~ N(0, 2^2)``, half real and half fake (the
population's mix); a video's frames are scored ``sigmoid(k (l + e))`` with ``e ~ N(0, tau^2)``
per frame: a detector whose logit is k times the log-odds, frames correlated within a video.
Truths: the population ECE (15 equal-width bins) by Monte Carlo; the temperature T = k when
tau = 0 (then the calibrated score is exactly sigmoid(z / k)).

    python scripts/bench_calibration.py --sets 400
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from scipy.special import expit

from fairforensics.evaluation.calibration import fit_calibration
from fairforensics.evaluation.calibration.metrics import ece_bootstrap


def draw(rng, n_videos: int, frames: int, k: float, tau: float):
    """Labels, scores and video ids of one simulated test set."""
    lo = rng.normal(0, 2.0, 8 * n_videos)
    y = (rng.random(8 * n_videos) < expit(lo)).astype(int)
    keep = np.r_[np.flatnonzero(y == 0)[: n_videos // 2], np.flatnonzero(y == 1)[: n_videos // 2]]
    lo, y = lo[keep], y[keep]
    scores = expit(k * (lo[:, None] + rng.normal(0, tau, (len(lo), frames)))).ravel()
    return np.repeat(y, frames), scores, np.repeat(np.arange(len(lo)), frames)


def population_ece(k: float, tau: float, n: int = 4_000_000, seed: int = 99) -> float:
    rng = np.random.default_rng(seed)
    lo, e = rng.normal(0, 2.0, n), rng.normal(0, tau, n)
    s, p = expit(k * (lo + e)), expit(lo)
    b = np.clip((s * 15).astype(int), 0, 14)
    return float(np.abs(np.bincount(b, weights=p - s, minlength=15)).sum() / n)


def binomial_bounds(hits: int, n: int) -> list[float]:
    """Clopper-Pearson 95 % interval of a coverage."""
    from scipy.stats import beta

    lo = beta.ppf(0.025, hits, n - hits + 1) if hits else 0.0
    hi = beta.ppf(0.975, hits + 1, n - hits) if hits < n else 1.0
    return [round(float(lo), 4), round(float(hi), 4)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=400)
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--k", type=float, default=2.0)
    parser.add_argument("--n-boot", type=int, default=300)
    args = parser.parse_args()
    rows = []
    truth = population_ece(args.k, 0.5)
    for n_videos in (50, 200):
        rng = np.random.default_rng(n_videos)
        ece_hits = t_hits = 0
        for i in range(args.sets):
            y, s, v = draw(rng, n_videos, args.frames, args.k, tau=0.5)
            _, lo, hi = ece_bootstrap(y, s, v, n_boot=args.n_boot, seed=i)
            ece_hits += lo <= truth <= hi
            y, s, v = draw(rng, n_videos, args.frames, args.k, tau=0.0)
            p = fit_calibration(y, s, "temperature", clusters=v).params
            t_hits += p["temperature_low"] <= args.k <= p["temperature_high"]
        rows.append({
            "videos": n_videos, "frames_per_video": args.frames, "sets": args.sets,
            "ece_truth": round(truth, 4),
            "ece_coverage": ece_hits / args.sets, "ece_bounds": binomial_bounds(ece_hits, args.sets),
            "temperature_truth": args.k,
            "temperature_coverage": t_hits / args.sets,
            "temperature_bounds": binomial_bounds(t_hits, args.sets),
        })  # fmt: skip
    print(json.dumps({"nominal": 0.95, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
