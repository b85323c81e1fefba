#!/usr/bin/env python
"""Calibration within groups (docs/fairness.md, "Calibration within groups"): CPU seconds of
:func:`fairness.group_calibration.group_calibration` (per-group ECE, the ECE gap, 1000 bootstrap
replicates by default) at the given numbers of frames, and with ``--coverage`` the seeded
coverage simulation of the gap's interval (:mod:`benchmarks.group_calibration_coverage`);
prints JSON."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.benchmarks.group_calibration_coverage import (  # noqa: E402
    Scenario,
    coverage,
)
from fairforensics.fairness.group_calibration import group_calibration  # noqa: E402


def data(n_frames: int, frames_per_video: int, seed: int) -> tuple[np.ndarray, ...]:
    """Frames of videos of two classes in three groups, scores with a video effect."""
    rng = np.random.default_rng(seed)
    n_videos = n_frames // frames_per_video
    video = np.repeat(np.arange(n_videos), frames_per_video)
    label = rng.integers(0, 2, n_videos)
    group = np.array(["female", "male", "unknown"], dtype=object)[rng.integers(0, 3, n_videos)]
    z = (2 * label - 1) + rng.normal(0, 1, n_videos)
    score = 1 / (1 + np.exp(-(z[video] + rng.normal(0, 0.5, len(video)))))
    keys = np.array([f"v{v}" for v in range(n_videos)], dtype=object)[video]
    return label[video], score, group[video], keys


def timing(n_frames: int, frames_per_video: int, n_boot: int, seed: int) -> dict[str, float]:
    """CPU seconds of one call on ``n_frames`` frames (the data made beforehand)."""
    y, s, g, keys = data(n_frames, frames_per_video, seed)
    start = time.process_time()
    res = group_calibration(y, s, g, keys, n_boot=n_boot, seed=seed)
    return {
        "frames": n_frames,
        "videos": n_frames // frames_per_video,
        "n_boot": n_boot,
        "cpu_seconds": round(time.process_time() - start, 3),
        "ece_gap": res.gap.diff,
        "ece_gap_interval": [res.gap.low, res.gap.high],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--frames-per-video", type=int, default=32)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--coverage", type=int, default=0, help="simulated data sets (0: off)")
    parser.add_argument("--minority", type=int, nargs=2, default=[6, 12],
                        help="videos of the minority's smaller class (coverage)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out: dict[str, object] = {
        "timing": [timing(n, args.frames_per_video, args.n_boot, args.seed) for n in args.frames]
    }
    if args.coverage:
        sc = replace(Scenario(), minority_smaller_class=tuple(args.minority))
        start = time.process_time()
        out["coverage"] = coverage(sc, args.coverage, n_boot=args.n_boot, seed=args.seed)
        out["coverage"]["cpu_seconds"] = round(time.process_time() - start, 1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
