#!/usr/bin/env python
"""Level, coverage and scale of the leaderboard's significance (docs/evaluation.md,
"Significance: level, coverage and scale"; issue 45 items 1-3, issue 47 item 3), by simulation;
prints JSON.

* ``ties``: share of data sets in which some of k equal-AUC detectors is marked "not tied" with
  the best (family-wise target: at most the level), max-|z| (the project's) beside Holm over
  "best vs j" (the statistic before issue 45);
* ``delong``: rejection rate of the clustered DeLong test under the null at few videos, with
  the t reference (the project's) and the normal one;
* ``seeds``: coverage of the seed mean's two intervals of AUC, each of its own target, and of
  the "given these trained models" interval read as an over-seeds one;
* ``scale`` (``--frames N``): CPU seconds and peak memory of ``compare_with_best`` for 10
  detectors at frame level on N frames (32 a video).

Rates with exact (Clopper-Pearson) 95 % binomial intervals."""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.evaluation.confidence import holm  # noqa: E402
from fairforensics.evaluation.predictions import Predictions  # noqa: E402
from fairforensics.evaluation.significance import (  # noqa: E402
    GIVEN_MODELS,
    OVER_SEEDS,
    clustered_delong_test,
    compare_with_best,
    seed_mean_intervals,
)


def _rate(hits: int, n: int) -> list[float]:
    ci = stats.binomtest(int(hits), n).proportion_ci(0.95) if n else None
    return [round(hits / n, 4), round(ci.low, 4), round(ci.high, 4)] if n else []


def _preds(y: np.ndarray, score: np.ndarray, video: np.ndarray, frame: np.ndarray) -> Predictions:
    return Predictions(
        dataset=np.full(len(y), "d", dtype=object), video_id=video.astype(str).astype(object),
        frame=frame, label=y, score=score, method=np.where(y == 1, "fake", "real").astype(object),
    )  # fmt: skip


def _equal(rng: np.random.Generator, k: int, videos: int, frames: tuple[int, int]) -> dict:
    """k equal-AUC detectors: a shared video look and class signal, each detector's own video
    effect (sd 0.7) and frame noise; ``frames`` a video, uniform."""
    n_frames = rng.integers(frames[0], frames[1] + 1, 2 * videos)
    video = np.repeat(np.arange(2 * videos), n_frames)
    frame = np.concatenate([np.arange(n) for n in n_frames])
    y = (video >= videos).astype(np.int64)
    shared = rng.normal(size=2 * videos)[video] + 0.8 * y
    own = (0.7 * rng.normal(size=2 * videos)[video] + rng.normal(size=len(y)) for _ in range(k))
    return {f"d{i}": _preds(y, shared + o, video, frame) for i, o in enumerate(own)}


def ties(ks: list[int], videos: int, n_sets: int, frames: tuple[int, int], seed: int) -> list:
    out = []
    for k in ks:
        rng = np.random.default_rng([seed, k])
        maxz = holm_hits = 0
        for _ in range(n_sets):
            res = compare_with_best(_equal(rng, k, videos, frames), level="frame")
            maxz += not all(c.tied for c in res.values())
            raw = [c.p_value for c in res.values() if not c.best]
            holm_hits += bool((holm(raw) < 0.05).any())
        out.append({"k": k, "videos": videos, "sets": n_sets, "max_z": _rate(maxz, n_sets),
                    "holm_before": _rate(holm_hits, n_sets)})  # fmt: skip
    return out


def delong(counts: list[int], n_sets: int, seed: int) -> list:
    out = []
    for videos in counts:
        for hard in (False, True):
            rng = np.random.default_rng([seed, videos, hard])
            t_hits = n_hits = made = 0
            for _ in range(n_sets):
                n_frames = rng.integers(8, 33, 2 * videos)
                video = np.repeat(np.arange(2 * videos), n_frames)
                y = (video >= videos).astype(int)
                rho = rng.uniform(0, 1)
                shared = rng.normal(size=2 * videos)[video] + y
                a, b = (shared + rho * rng.normal(size=2 * videos)[video]
                        + rng.normal(size=len(y)) for _ in range(2))  # fmt: skip
                if hard:
                    a, b = (a > 0.5).astype(float), (b > 0.5).astype(float)
                res = clustered_delong_test(y, a, b, video)
                n_hits += 2 * stats.norm.sf(abs(res.z)) < 0.05
                if np.isfinite(res.p_value):
                    made += 1
                    t_hits += res.p_value < 0.05
            out.append({"videos": videos, "scores": "0/1" if hard else "continuous",
                        "sets": n_sets, "p_given": made, "t": _rate(t_hits, made),
                        "normal": _rate(n_hits, n_sets)})  # fmt: skip
    return out


def seeds(counts: list[int], videos: int, taus: list[float], n_sets: int, seed: int) -> list:
    out = []
    for tau in taus:
        for n_seeds in counts:
            rng = np.random.default_rng([seed, n_seeds, int(tau * 1000)])
            hits = {"given": 0, "over": 0, "given_read_over": 0}
            width = []
            for _ in range(n_sets):
                y = np.repeat([0, 1], videos)
                video = np.arange(2 * videos)
                look = rng.normal(size=2 * videos)
                d = rng.normal(1.2, tau, n_seeds)
                runs = [_preds(y, look + ds * y + rng.normal(size=2 * videos), video, video * 0)
                        for ds in d]  # fmt: skip
                given = float(np.mean(stats.norm.cdf(d / 2)))
                over = float(stats.norm.cdf(1.2 / np.sqrt(4 + tau**2)))
                ci = {k: v["auc"] for k, v in seed_mean_intervals(runs, level="video", n_boot=2).items()}  # fmt: skip
                g, o = ci[GIVEN_MODELS], ci[OVER_SEEDS]
                hits["given"] += g.low <= given <= g.high
                hits["over"] += o.low <= over <= o.high
                hits["given_read_over"] += g.low <= over <= g.high
                width.append(o.high - o.low)
            out.append({"seeds": n_seeds, "tau": tau, "videos": videos, "sets": n_sets,
                        "auc_between_seed_sd": round(float(0.5 * stats.norm.pdf(0.6) * tau), 4),
                        **{k: _rate(v, n_sets) for k, v in hits.items()},
                        "over_width": [round(float(np.min(width)), 3), round(float(np.median(width)), 3),
                                       round(float(np.max(width)), 3)]})  # fmt: skip
    return out


def scale(n_frames: int, detectors: int, seed: int) -> dict:
    """CPU seconds and peak memory of compare_with_best on 10 detectors' frame predictions."""
    rng = np.random.default_rng(seed)
    videos = n_frames // 32
    video = np.repeat(np.arange(videos), 32)
    frame = np.tile(np.arange(32), videos)
    y = (video % 2).astype(np.int64)
    vid = np.array([f"id_{v:07d}" for v in range(videos)], dtype=object)[video]
    method = np.where(y == 1, "Deepfakes", "youtube").astype(object)
    dataset = np.full(len(y), "FaceForensics++", dtype=object)
    shared = rng.normal(size=videos)[video] + y
    preds = {
        f"det{i}": Predictions(dataset=dataset, video_id=vid, frame=frame, label=y,
                               score=shared + 0.5 * rng.normal(size=len(y)) + 0.01 * i * y,
                               method=method)
        for i in range(detectors)
    }  # fmt: skip
    start_cpu, start = time.process_time(), time.perf_counter()
    res = compare_with_best(preds, level="frame")
    return {
        "frames": n_frames, "detectors": detectors,
        "cpu_s": round(time.process_time() - start_cpu, 1),
        "wall_s": round(time.perf_counter() - start, 1),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "tied": sum(c.tied for c in res.values()),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", type=int, default=1000, help="data sets per scenario")
    parser.add_argument("--ks", type=int, nargs="+", default=[2, 3, 5, 10])
    parser.add_argument("--videos", nargs="+", type=int, default=[2, 3, 5, 20])
    parser.add_argument("--seeds", nargs="+", type=int, default=[2, 3, 5])
    parser.add_argument("--taus", nargs="+", type=float, default=[0.1, 0.3, 0.6])
    parser.add_argument("--only", nargs="+", default=["ties", "delong", "seeds"],
                        choices=["ties", "delong", "seeds", "scale"])  # fmt: skip
    parser.add_argument("--frames", type=int, default=1_000_000, help="scale: frames")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out: dict = {}
    for part in args.only:
        start = time.perf_counter()
        if part == "ties":
            out["ties"] = ties(args.ks, 50, args.sets, (1, 1), args.seed)
            out["ties_frames"] = ties([5], 50, max(args.sets // 4, 1), (8, 32), args.seed)
        elif part == "delong":
            out["delong"] = delong(args.videos, args.sets, args.seed)
        elif part == "seeds":
            out["seeds"] = seeds(args.seeds, 100, args.taus, args.sets, args.seed)
        else:
            out["scale"] = scale(args.frames, 10, args.seed)
        print(f"{part}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
