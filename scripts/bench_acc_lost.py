#!/usr/bin/env python
"""The leaderboard's ACC lost to threshold transfer (docs/evaluation.md): CPU seconds of
:func:`evaluation.calibration.transfer.acc_lost` at the given numbers of frames, and with
``--coverage`` the seeded coverage simulation of its interval
(:mod:`benchmarks.acc_lost_coverage`); prints JSON."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.benchmarks.acc_lost_coverage import coverage, simulate  # noqa: E402
from fairforensics.evaluation.calibration.transfer import acc_lost  # noqa: E402


def timing(n_frames: int, frames_per_video: int, n_boot: int) -> dict[str, float]:
    """CPU seconds of one call at threshold 0.7 (the data made beforehand)."""
    pred = simulate(np.random.default_rng(0), n_frames // frames_per_video, frames_per_video)
    start = time.process_time()
    est = acc_lost([pred], [0.7], n_boot=n_boot)
    return {
        "frames": len(pred),
        "n_boot": n_boot,
        "cpu_seconds": round(time.process_time() - start, 3),
        "acc_lost": est.value,
        "interval": [est.low, est.high],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--frames-per-video", type=int, default=32)
    parser.add_argument("--n-boot", type=int, default=1000, help="replicates of the timing")
    parser.add_argument("--coverage", type=int, default=0, help="simulated sets per case")
    parser.add_argument("--coverage-boot", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out: dict[str, object] = {
        "timing": [timing(n, args.frames_per_video, args.n_boot) for n in args.frames]
    }
    if args.coverage:
        cases = ((40, 0.75), (200, 0.75), (40, 0.5))
        out["coverage"] = [
            coverage(v, t, args.coverage, n_boot=args.coverage_boot, seed=args.seed)
            for v, t in cases
        ]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
