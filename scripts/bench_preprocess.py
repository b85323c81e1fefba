#!/usr/bin/env python
"""Print the preprocessing speed as JSON: CPU seconds per kept frame (per stage), frames/s, faces.

Two cases by default: ``ff_like`` (7 FaceForensics++ c23-like videos, 309-751 frames,
480p-1080p, x264 CRF 23, rendered once from real face photos and cached) and ``short_clips``
(the real clips in ../shared/data/videos, when present). Each case runs the pipeline and, unless
``--no-baseline``, the DeepfakeBench-style emulation on the same videos, and reports the ratio.

python scripts/bench_preprocess.py
python scripts/bench_preprocess.py --cases ff_like --workers 1 --set decode.threads=2
python scripts/bench_preprocess.py --videos a.mp4 b.mp4 --frames 32 --no-baseline
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

from fairforensics.benchmarks.preprocess import bench_deepfakebench_style, bench_pipeline  # noqa: E402
from fairforensics.benchmarks.videos import ff_like_videos  # noqa: E402

SHARED = REPO.parent / "shared" / "data"


def _case(videos: list[Path], args: argparse.Namespace) -> dict:
    out = {
        "pipeline": bench_pipeline(
            videos, args.frames, args.workers, repeat=args.repeat, overrides=args.set
        )
    }
    for detector in args.also_detectors:  # e.g. MTCNN beside the default HOG, same videos
        out[f"pipeline_{detector}"] = bench_pipeline(
            videos, args.frames, args.workers, repeat=args.repeat,
            overrides=[*args.set, f"face.detector={detector}"],
        )  # fmt: skip
    if not args.no_baseline:
        base = bench_deepfakebench_style(videos, args.frames)
        out["deepfakebench_style"] = base
        pipe = out["pipeline"]
        out["speedup_cpu_per_frame"] = round(base["cpu_s_per_frame"] / pipe["cpu_s_per_frame"], 2)
        out["speedup_frames_per_s"] = round(pipe["frames_per_s"] / base["frames_per_s"], 2)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="+", default=["ff_like", "short_clips"],
                        choices=["ff_like", "short_clips"])  # fmt: skip
    parser.add_argument("--videos", nargs="+", type=Path, help="these videos instead of the cases")
    parser.add_argument("--cache-dir", type=Path, help="where rendered videos are kept (tmp)")
    parser.add_argument("--faces-dir", type=Path, default=SHARED / "faces" / "celebrities",
                        help="photos to film (default: ../shared celebrities, else astronaut)")  # fmt: skip
    parser.add_argument("--frames", type=int, default=32)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--repeat", type=int, default=4,
                        help="list each video this many times (start-up weighs as on a dataset)")  # fmt: skip
    parser.add_argument("--set", action="append", default=[], help="config override, repeatable")
    parser.add_argument("--no-baseline", action="store_true", help="skip the emulated baseline")
    parser.add_argument("--also-detectors", nargs="+", default=[], choices=["hog", "cnn", "mtcnn"],
                        help="also run the pipeline with these face detectors (e.g. mtcnn)")  # fmt: skip
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    report: dict = {"load_average_1min": os.getloadavg()[0], "cores": os.cpu_count(), "cases": {}}
    if args.videos:
        report["cases"]["videos"] = _case(args.videos, args)
    else:
        for case in args.cases:
            if case == "ff_like":
                faces = args.faces_dir if args.faces_dir.is_dir() else None
                videos = ff_like_videos(args.cache_dir, faces_dir=faces)
            else:
                videos = sorted((SHARED / "videos").glob("*.mp4"))
                if not videos:
                    logging.warning("short_clips skipped: needs ../shared/data/videos")
                    continue
            report["cases"][case] = _case(videos, args)
    report["load_average_1min_end"] = os.getloadavg()[0]
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
