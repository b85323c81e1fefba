#!/usr/bin/env python
"""Coverage and speed of the cross-group AUC's interval (issue 45, item 4); prints JSON.

For each true xAUC and number of videos per group and class, ``--sets`` data sets of frames
clustered in videos (8-32 frames a video; frame score = shift for fakes + a video effect + a
frame effect, both normal with SD 0.7, so the truth is known analytically): the share of sets
whose 95 % interval covers the truth, with its Clopper-Pearson 95 % interval, for the
bootstrap-t of :func:`fairness.leaderboard_metrics.cross_group_aucs` and for the normal logit
interval with the clustered variance it replaced. Then the time of one pair at ``--frames``
frames (32 a video, two groups).

  OMP_NUM_THREADS=1 python scripts/bench_xauc.py --sets 400 --n-boot 400
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.evaluation.confidence import clustered_auc_variance  # noqa: E402
from fairforensics.evaluation.significance import logit_interval  # noqa: E402
from fairforensics.fairness.leaderboard_metrics import cross_group_aucs  # noqa: E402

SD = 0.7  # of the video effect and of the frame effect


def data_set(rng: np.random.Generator, n_videos: int, xauc: float, frames=(8, 33)):
    """Labels, scores, groups and videos: ``n_videos`` fake and real videos of group a and of b;
    the fakes of a against the reals of b have the true AUC ``xauc``."""
    shift = stats.norm.ppf(xauc) * np.sqrt(2 * (SD**2 + SD**2))
    n = 4 * n_videos  # a fake, a real, b fake, b real
    counts = rng.integers(*frames, n)
    video = np.repeat(np.arange(n), counts)
    label = (np.arange(n) % 2)[video]
    group = np.where(np.arange(n) % 4 < 2, "a", "b")[video]
    score = label * shift + rng.normal(0, SD, n)[video] + rng.normal(0, SD, len(video))
    return label, score, group, video


def share(k: int, n: int) -> dict[str, float]:
    """A share with its Clopper-Pearson 95 % interval."""
    ci = stats.binomtest(k, n).proportion_ci(0.95)
    return {"share": k / n, "low": round(ci.low, 4), "high": round(ci.high, 4)}


def coverage(n_videos: int, xauc: float, sets: int, n_boot: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    boot = logit = 0
    for k in range(sets):
        y, s, g, v = data_set(rng, n_videos, xauc)
        est = cross_group_aucs(y, s, g, v, n_boot=n_boot, seed=k)[("a", "b")]
        boot += est.low <= xauc <= est.high
        rows = ((g == "a") & (y == 1)) | ((g == "b") & (y == 0))
        auc, var, _ = clustered_auc_variance(y[rows], s[rows], v[rows])
        low, high = logit_interval(auc, var)
        logit += low <= xauc <= high
    return {
        "videos_per_group_and_class": n_videos,
        "xauc": xauc,
        "bootstrap_t": share(boot, sets),
        "logit_normal": share(logit, sets),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sets", type=int, default=400, help="data sets per scenario")
    p.add_argument("--n-boot", type=int, default=400, help="bootstrap replicates")
    p.add_argument("--xauc", type=float, nargs="+", default=[0.7, 0.9, 0.97, 0.99])
    p.add_argument("--videos", type=int, nargs="+", default=[20, 100])
    p.add_argument("--frames", type=int, default=1_000_000, help="frames of the timed run")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    rows = []
    for n in args.videos:
        for x in args.xauc:
            rows.append(coverage(n, x, args.sets, args.n_boot, args.seed))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)  # progress
    rng = np.random.default_rng(args.seed)
    y, s, g, v = data_set(rng, args.frames // (4 * 32), 0.9, frames=(32, 33))
    start = time.perf_counter()
    cross_group_aucs(y[g == "a"], s[g == "a"], g[g == "a"], v[g == "a"], n_boot=args.n_boot)
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "sets": args.sets,
                "n_boot": args.n_boot,
                "coverage": rows,
                "timing": {"frames": int((g == "a").sum()), "n_boot": args.n_boot, "s": seconds},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
