#!/usr/bin/env python
"""Time the fairness statistics (signed gaps with bootstrap and permutation test, FDR/ABF-AUC
intervals) on synthetic frame predictions, and measure the null coverage of the 95 % interval
of the signed ACC difference; prints JSON. Times are CPU seconds of this process
(``time.process_time``), so a busy shared machine does not inflate them."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.fairness.abf import DEFAULT_XS, POOLED  # noqa: E402
from fairforensics.fairness.gaps import curve_auc_intervals, group_gaps  # noqa: E402


def synthetic(n_videos: int, frames: int, seed: int, gap: float = 0.0):
    """Labels, scores, groups and video ids; scores correlated within a video; group "b" has
    its scores pulled towards 0.5 by ``gap``."""
    rng = np.random.default_rng(seed)
    vy = rng.integers(0, 2, n_videos)
    vg = rng.choice(["a", "b"], n_videos)
    centre = 0.3 * vy + 0.35 + np.where(vg == "b", gap * (0.5 - vy), 0.0)
    vs = centre + rng.normal(0, 0.15, n_videos)
    ids = np.repeat(np.arange(n_videos), frames)
    s = np.clip(vs[ids] + rng.normal(0, 0.05, len(ids)), 0, 1)
    return vy[ids], s, vg[ids], ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--videos", type=int, default=2000)
    parser.add_argument("--frames", type=int, default=10)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--n-perm", type=int, default=1000)
    parser.add_argument("--curve-boot", type=int, default=200)
    parser.add_argument("--null-sets", type=int, default=400, help="data sets for coverage")
    args = parser.parse_args()
    y, s, g, ids = synthetic(args.videos, args.frames, 0, gap=0.1)
    out: dict[str, float | int] = {"frames": len(y), "videos": args.videos}
    t = time.process_time()
    group_gaps(
        y,
        s,
        g,
        ids,
        metrics=("acc", "fpr", "fnr", "error_rate"),
        n_boot=args.n_boot,
        n_perm=args.n_perm,
    )
    out["gaps_rate_metrics_s"] = time.process_time() - t
    t = time.process_time()
    res = group_gaps(y, s, g, ids, n_boot=args.n_boot, n_perm=args.n_perm)
    out["gaps_all_metrics_s"] = time.process_time() - t
    out["acc_diff"], out["acc_p"] = res.gaps["acc"].diff, res.gaps["acc"].p_value
    t = time.process_time()
    curve_auc_intervals(
        y, s, g, ids, xs=DEFAULT_XS, threshold_groups=[POOLED, "a", "b"], n_boot=args.curve_boot
    )
    out["fdr_abf_auc_intervals_s"] = time.process_time() - t
    covered = defined = 0
    t = time.process_time()
    for k in range(args.null_sets):
        y0, s0, g0, ids0 = synthetic(60, 5, 100 + k)
        gap = group_gaps(y0, s0, g0, ids0, metrics=("acc",), n_boot=args.n_boot, n_perm=0, seed=k)
        defined += bool(np.isfinite(gap.gaps["acc"].low))  # else a cell has < 5 videos
        covered += gap.gaps["acc"].low <= 0.0 <= gap.gaps["acc"].high
    out["null_coverage_95"] = covered / max(defined, 1)
    out["null_sets"] = args.null_sets
    out["null_sets_with_interval"] = defined
    out["null_coverage_s"] = time.process_time() - t
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
