#!/usr/bin/env python
"""Print the speed of detect as JSON: seconds per 10-second 720p video (300 frames, x264 CRF 23,
rendered once from a real face photo and cached) for meso4 and xception on the CPU, split into
decode, face detection and model, against preprocess + test.py's scoring of the same video.

python scripts/bench_detect.py
python scripts/bench_detect.py --detectors meso4 --video my.mp4
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fairforensics.benchmarks.detect import bench_detect_video  # noqa: E402
from fairforensics.benchmarks.videos import VideoSpec, ff_like_videos  # noqa: E402

SHARED = REPO.parent / "shared" / "data"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--detectors", nargs="+", default=["meso4", "xception"])
    parser.add_argument("--video", type=Path, help="this video instead of the rendered one")
    parser.add_argument("--cache-dir", type=Path, help="where the rendered video is kept (tmp)")
    parser.add_argument("--faces-dir", type=Path, default=SHARED / "faces" / "celebrities",
                        help="photos to film (default: ../shared celebrities, else astronaut)")  # fmt: skip
    parser.add_argument(
        "--repeat", type=int, default=2, help="detect calls per detector (last kept)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    video = args.video
    if video is None:
        faces = args.faces_dir if args.faces_dir.is_dir() else None
        (video,) = ff_like_videos(args.cache_dir, specs=(VideoSpec(300, 720),), faces_dir=faces)
    print(json.dumps(bench_detect_video(video, args.detectors, args.repeat), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
