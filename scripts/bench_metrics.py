#!/usr/bin/env python
"""Time frame- and video-level AUC, AP and EER on 10^6 frame scores (31,250 videos of 32 frames);
prints JSON. Issue 8 target: both levels under 1 s (DeepfakeBench's get_test_metrics: 3.3 s)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fairforensics.evaluation import metrics as M  # noqa: E402
from fairforensics.evaluation.confidence import bootstrap_ci  # noqa: E402
from fairforensics.evaluation.predictions import Predictions  # noqa: E402
from fairforensics.evaluation.scoring import evaluate_levels  # noqa: E402


def synthetic(n_videos: int, frames: int, seed: int) -> Predictions:
    """FF++-like predictions: fake ids repeat across 4 methods, scores correlated within a video."""
    rng = np.random.default_rng(seed)
    methods = np.array(
        ["real", "Deepfakes", "Face2Face", "FaceSwap", "NeuralTextures"], dtype=object
    )
    m = np.arange(n_videos) % len(
        methods
    )  # video i: method i % 5, id i // 5 (repeats across methods)
    video = np.repeat(np.arange(n_videos), frames)
    label = (m > 0).astype(np.int64)[video]
    score = 1 / (
        1 + np.exp(-(rng.normal(1.5 * label - 0.75, 1.0) + rng.normal(0, 1, n_videos)[video]))
    )
    ids = np.array([f"{i // len(methods):05d}" for i in range(n_videos)], dtype=object)
    return Predictions(
        dataset=np.full(len(video), "FF-c23", dtype=object),
        video_id=ids[video],
        frame=np.tile(np.arange(frames), n_videos),
        label=label,
        score=score,
        method=methods[m][video],
    )


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--videos", type=int, default=31_250)
    p.add_argument("--frames", type=int, default=32)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--n-boot", type=int, default=20)
    args = p.parse_args()
    pred = synthetic(args.videos, args.frames, seed=0)
    y, s, keys = pred.label, pred.score, pred.video_key

    def arrays_both_levels() -> None:
        M.summarize(y, s)
        yv, sv, _, _ = M.group_videos(y, s, keys)
        M.summarize(yv, sv)

    def core_functions_both_levels() -> None:
        for yy, ss in ((y, s), M.video_scores(y, s, keys)[:2]):
            M.auc(yy, ss), M.ap(yy, ss), M.eer(yy, ss)

    out = {
        "frames": len(pred),
        "videos": int(len(np.unique(keys))),
        "summarize_frame_s": best_of(lambda: M.summarize(y, s), args.repeat),
        "arrays_frame_and_video_s": best_of(arrays_both_levels, args.repeat),
        "predictions_frame_and_video_s": best_of(lambda: evaluate_levels(pred), args.repeat),
        "separate_auc_ap_eer_video_scores_s": best_of(core_functions_both_levels, 1),
    }
    t = time.perf_counter()
    bootstrap_ci(y, s, keys, n_boot=args.n_boot, seed=0)
    out["bootstrap_frame_per_replicate_s"] = (time.perf_counter() - t) / args.n_boot
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}))


if __name__ == "__main__":
    main()
