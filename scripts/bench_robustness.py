#!/usr/bin/env python
"""Print the CPU cost of robustness evaluation as JSON: each perturbation alone, a robustness
run (every case) per video, and its ratio to one clean pass per video (benchmarks.robustness).

python scripts/bench_robustness.py --run demo_data/runs/meso4-demo --test-data demo \
    --data-root demo_data/processed --source-root demo_data/raw --videos 8
python scripts/bench_robustness.py --perturbations-only --frame-size 720,1280
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from fairforensics.benchmarks.robustness import (  # noqa: E402
    clean_pass_costs,
    per_type_costs,
    perturbation_costs,
    robustness_costs,
)
from fairforensics.evaluation.robustness import RobustnessConfig  # noqa: E402
from fairforensics.evaluation.settings import load_test_config  # noqa: E402
from fairforensics.preprocessing.perturbations import TYPES  # noqa: E402
from fairforensics.preprocessing.resolve import resolve_index  # noqa: E402

VIDEO = REPO / "tests" / "data" / "videos" / "short_hamilton_clip.mp4"
PHOTO = REPO / "tests" / "data" / "faces" / "celebrities" / "img1.jpg"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", type=Path, help="a training run (its best checkpoint)")
    p.add_argument("--test-data", help="dataset name under --data-root")
    p.add_argument("--data-root", default="datasets")
    p.add_argument("--source-root", help="where the index's source videos lie")
    p.add_argument("--videos", type=int, default=8, help="test videos measured")
    p.add_argument("--types", default=",".join(TYPES))
    p.add_argument("--levels", default="1,2,3,4,5")
    p.add_argument("--per-type", action="store_true", help="also each type alone")
    p.add_argument("--threads", type=int, default=1, help="torch threads (CPU is summed anyway)")
    p.add_argument(
        "--batch-size",
        type=int,
        default=8,
        help="model batch (one thread: 4-8 cost least per crop)",
    )
    p.add_argument(
        "--frame-size", default="720,1280", help="perturbation costs: frame height,width"
    )
    p.add_argument("--vc-video", type=Path, default=VIDEO, help="perturbation costs: VC's video")
    p.add_argument("--perturbations-only", action="store_true")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    torch.set_num_threads(args.threads)
    h, w = (int(x) for x in args.frame_size.split(","))
    photo = cv2.cvtColor(cv2.imread(str(PHOTO)), cv2.COLOR_BGR2RGB)
    frame = np.ascontiguousarray(cv2.resize(photo, (w, h), interpolation=cv2.INTER_LINEAR))
    report: dict = {"load_average_1min": os.getloadavg()[0], "cores": os.cpu_count()}
    report["torch_threads"] = args.threads
    report["batch_size"] = args.batch_size
    report["perturbations"] = perturbation_costs(frame, args.vc_video)
    if not args.perturbations_only:
        if not (args.run and args.test_data and args.source_root):
            p.error("give --run, --test-data and --source-root (or --perturbations-only)")
        from fairforensics.evaluation.runs import load_run

        detector, run_cfg = load_run(args.run)
        frame_num = (run_cfg.get("train") or {}).get("test_frame_num")
        test = load_test_config(
            overrides=[
                f"frame_num={frame_num or 'null'}",
                "device=cpu",
                f"batch_size={args.batch_size}",
            ]
        )
        index = resolve_index(args.test_data, args.data_root)
        rcfg = RobustnessConfig(
            types=args.types.split(","),
            levels=[int(x) for x in args.levels.split(",")],
            source_root=args.source_root,
        )
        clean_pass_costs(detector, index, args.source_root, test, 1)  # load the models first
        clean = clean_pass_costs(detector, index, args.source_root, test, args.videos)
        robust = robustness_costs(detector, index, rcfg, test, args.videos)
        base = clean["face_path_cpu_s_per_video"]["total"]
        total = robust["cpu_s_per_video"]["total"]
        report |= {
            "detector": run_cfg.get("detector"),
            "test_data": args.test_data,
            "frames_scored_per_video": frame_num,
            "clean": clean,
            "robustness": robust,
            "ratio_to_clean_face_path": round(total / base, 2),
            "ratio_to_stored_crops_pass": round(
                total / clean["stored_crops_cpu_s_per_video"]["total"], 2
            ),
            "within_15x_of_clean_face_path": total <= 15 * base,
        }
        if args.per_type:
            report["per_type_cpu_s_per_video"] = per_type_costs(
                detector, index, rcfg, test, args.videos, rcfg.types
            )
    report["load_average_1min_end"] = os.getloadavg()[0]
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
