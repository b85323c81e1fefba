#!/usr/bin/env python
"""CPU seconds and peak memory of the statistics stages at scale (issue 47): ``fairness`` on two
attributes (:func:`fairness.report.fairness_report`, defaults) and the bootstrap of ``test
--predictions`` (:func:`evaluation.scoring.evaluate_predictions`, frame and video level, 1,000
replicates), on synthetic predictions (32 frames a video, gender x race groups of unequal size).
Each stage and size runs in a fresh process, so its peak RSS (``resource.getrusage``) is its
own; prints JSON. Times are CPU seconds (``time.process_time``) of that process. ``--split``
adds the CPU seconds of the functions the stage's time goes to (timers wrapped around them), and
the stage ``test_predictions``, the whole ``test --predictions`` command on these predictions
written to a CSV file (its imports included)."""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STAGES = ("fairness", "test_bootstrap", "test_predictions")
#: per stage, the functions ``--split`` times: (module, function name)
SPLIT = {
    "fairness": [
        ("fairforensics.fairness.gaps", n)
        for n in ("_permuted_values", "_group_figures", "_eer_replicates", "_gap_data")
    ]
    + [
        ("fairforensics.fairness.report", n)
        for n in ("_per_group", "_fairness_curves", "_curve_intervals", "_attempt")
    ],
    "test_predictions": [
        ("fairforensics.evaluation.results", n)
        for n in ("evaluate_levels", "_calibration_sections", "_figures", "read_predictions",
                  "write_predictions")
    ],
}  # fmt: skip


def synthetic_predictions(n_frames: int, seed: int = 0, frames_per_video: int = 32):
    """Predictions of ``n_frames`` rows: videos of ``frames_per_video`` frames, each with a
    label, a gender (60/40) and a race (50/25/15/10), scores correlated within a video."""
    from fairforensics.evaluation.predictions import Predictions

    rng = np.random.default_rng(seed)
    n_videos = max(1, n_frames // frames_per_video)
    vy = rng.integers(0, 2, n_videos)
    gender = rng.choice(np.array(["female", "male"], dtype=object), n_videos, p=[0.6, 0.4])
    race = rng.choice(
        np.array(["white", "black", "asian", "indian"], dtype=object),
        n_videos,
        p=[0.5, 0.25, 0.15, 0.1],
    )
    vs = 0.3 * vy + 0.35 + np.where(gender == "male", 0.05, 0.0) + rng.normal(0, 0.15, n_videos)
    vid = np.repeat(np.arange(n_videos), frames_per_video)[:n_frames]
    names = np.array([f"v{i:07d}" for i in range(n_videos)], dtype=object)
    methods = np.where(vy == 1, "Deepfakes", "real").astype(object)
    return Predictions(
        dataset=np.full(len(vid), "synthetic", dtype=object),
        video_id=names[vid],
        frame=np.tile(np.arange(frames_per_video), n_videos)[: len(vid)],
        label=vy[vid],
        score=np.clip(vs[vid] + rng.normal(0, 0.05, len(vid)), 0, 1),
        method=methods[vid],
        attributes={"gender": gender[vid], "race": race[vid]},
    )


def _timer(func, key: str, spent: dict[str, float]):
    """``func`` with its CPU seconds added to ``spent[key]``."""

    def timed(*args, **kwargs):
        start = time.process_time()
        try:
            return func(*args, **kwargs)
        finally:
            spent[key] = spent.get(key, 0.0) + time.process_time() - start

    return timed


def _timed(stage: str, spent: dict[str, float]) -> None:
    """Import the modules of ``SPLIT[stage]`` (``spent["imports"]``) and wrap its functions so
    that their CPU seconds add up in ``spent``."""
    import importlib

    start = time.process_time()
    modules = {m: importlib.import_module(m) for m, _ in SPLIT.get(stage, [])}
    spent["imports"] = time.process_time() - start
    for module_name, name in SPLIT.get(stage, []):
        module = modules[module_name]
        key = f"{module_name.rsplit('.', 1)[1]}.{name}"
        setattr(module, name, _timer(getattr(module, name), key, spent))


def run_stage(stage: str, n_frames: int, split: bool = False) -> dict[str, float]:
    """One stage on ``n_frames`` synthetic rows: CPU seconds, the process's peak RSS and, with
    ``split``, the CPU seconds of the functions of ``SPLIT[stage]``."""
    import tempfile

    pred = synthetic_predictions(n_frames)
    folder = tempfile.TemporaryDirectory()
    if stage == "test_predictions":
        from fairforensics.evaluation.predictions import write_predictions

        write_predictions(Path(folder.name) / "SYN.csv", pred)
    spent: dict[str, float] = {}
    t = time.process_time()
    if split:
        _timed(stage, spent)
    if stage == "fairness":
        from fairforensics.fairness.report import ReportConfig, fairness_report

        fairness_report(pred, ["gender", "race"], ReportConfig())
    elif stage == "test_bootstrap":
        from fairforensics.evaluation.scoring import evaluate_predictions

        for level in ("frame", "video"):
            evaluate_predictions(pred, level=level, n_boot=1000)
    elif stage == "test_predictions":
        from fairforensics.cli.test import main

        out = Path(folder.name) / "out"
        main(["--predictions", f"SYN={Path(folder.name) / 'SYN.csv'}", "--name", "syn", "--out",
              str(out)])  # fmt: skip
    else:
        raise ValueError(f"unknown stage {stage!r}; stages: {STAGES}")
    cpu = time.process_time() - t
    folder.cleanup()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    row = {"stage": stage, "frames": n_frames, "cpu_s": round(cpu, 2), "peak_gib": round(peak, 3)}
    if split:
        row["split_cpu_s"] = {k: round(v, 2) for k, v in spent.items()}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=float, nargs="+", default=[1e5, 1e6])
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    parser.add_argument("--split", action="store_true", help="CPU seconds of the main functions")
    parser.add_argument("--one", action="store_true", help="run one stage here (internal)")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_stage(args.stages[0], int(args.frames[0]), args.split)))
        return
    rows = []
    for n in args.frames:
        for stage in args.stages:
            cmd = [sys.executable, __file__, "--one", "--stages", stage, "--frames", str(n)]
            cmd += ["--split"] if args.split else []
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode:
                rows.append({"stage": stage, "frames": int(n), "error": done.stderr[-400:]})
            else:
                rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
