#!/usr/bin/env python
"""Print the preprocessing speed as JSON: videos/s, frames/s, faces found, time per stage.

python scripts/bench_preprocess.py                       # the real videos in ../shared/data
python scripts/bench_preprocess.py --baseline            # plus a DeepfakeBench-style run
python scripts/bench_preprocess.py --videos a.mp4 b.mp4 --frames 32 --workers 2
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

from benchmarks.preprocess import bench_deepfakebench_style, bench_pipeline  # noqa: E402

DEFAULT_VIDEOS = sorted((REPO.parent / "shared" / "data" / "videos").glob("*.mp4"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--videos", nargs="+", type=Path, default=DEFAULT_VIDEOS)
    parser.add_argument("--frames", type=int, default=32)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--repeat", type=int, default=1, help="list each video this many times")
    parser.add_argument("--baseline", action="store_true", help="also time the emulated baseline")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if not args.videos:
        parser.error("no videos found; pass --videos")
    report = {
        "load_average": os.getloadavg()[0],
        "cores": os.cpu_count(),
        "pipeline": bench_pipeline(args.videos, args.frames, args.workers, repeat=args.repeat),
    }
    if args.baseline:
        base = bench_deepfakebench_style(args.videos, args.frames)
        report["deepfakebench_style"] = base
        report["speedup_frames_per_s"] = round(
            report["pipeline"]["frames_per_s"] / base["frames_per_s"], 2
        )
        report["speedup_cpu_per_frame"] = round(
            base["cpu_s_per_frame"] / report["pipeline"]["cpu_s_per_frame"], 2
        )
    # what the same work would reach on idle cores, from CPU time (the machine may be shared)
    report["pipeline"]["frames_per_s_idle_cores_est"] = round(
        (args.workers or 1) / report["pipeline"]["cpu_s_per_frame"], 1
    )
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
