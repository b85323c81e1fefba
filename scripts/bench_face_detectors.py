#!/usr/bin/env python
"""Print face-detection speed as JSON: ms per image for dlib HOG and MTCNN on the same photos.

Both detect on a copy downscaled to --max-side pixels (640: the preprocessing default), one
thread each, interleaved image by image so that load from other processes hits both alike.
CPU time (process_time) is the figure to compare on a shared machine; wall time is beside it.

python scripts/bench_face_detectors.py                      # photos in ../shared/data
python scripts/bench_face_detectors.py --images a.jpg b.png --repeat 5 --device cuda
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import cv2  # noqa: E402

from fairforensics.preprocessing.faces import FaceAnalyzer  # noqa: E402

DATA = REPO.parent / "shared" / "data"
DEFAULT_IMAGES = [
    *sorted((DATA / "pad" / "silent_face").glob("*.jpg")),
    *(
        DATA / "faces" / "face_recognition" / n
        for n in ("obama.jpg", "biden.jpg", "two_people.jpg")
    ),
    *sorted((DATA / "faces" / "facenet_pytorch" / "test_images").glob("*/*.jpg")),
    DATA / "faces" / "facenet_pytorch" / "multiface.jpg",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", nargs="+", type=Path, default=DEFAULT_IMAGES)
    parser.add_argument("--max-side", type=int, default=640)
    parser.add_argument("--repeat", type=int, default=3, help="timed passes over the images")
    parser.add_argument("--device", default="cpu", help="where MTCNN runs (cpu, cuda)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    cv2.setNumThreads(1)
    images = [cv2.imread(str(p), cv2.IMREAD_COLOR) for p in args.images if p.is_file()]
    images = [cv2.cvtColor(im, cv2.COLOR_BGR2RGB) for im in images if im is not None]
    if not images:
        parser.error("no readable images; pass --images")
    detectors = {
        "dlib_hog": FaceAnalyzer("hog", 0, args.max_side, 0),
        "mtcnn": FaceAnalyzer("mtcnn", 0, args.max_side, 0, device=args.device),
    }
    cpu = dict.fromkeys(detectors, 0.0)
    wall = dict.fromkeys(detectors, 0.0)
    faces = dict.fromkeys(detectors, 0)
    for fa in detectors.values():  # warm-up: models, per-size setup (a video's frames share one)
        for rgb in images:
            fa.detect(rgb)
    for _ in range(args.repeat):
        for rgb in images:
            for name, fa in detectors.items():
                c0, w0 = time.process_time(), time.perf_counter()
                found = fa.detect(rgb)
                if args.device != "cpu" and name == "mtcnn":
                    import torch

                    torch.cuda.synchronize()
                cpu[name] += time.process_time() - c0
                wall[name] += time.perf_counter() - w0
                faces[name] += len(found)
    n = len(images) * args.repeat
    report = {
        "images": len(images),
        "repeat": args.repeat,
        "max_side": args.max_side,
        "mtcnn_device": args.device,
        "cores": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
        "cpu_ms_per_image": {k: round(1000 * v / n, 1) for k, v in cpu.items()},
        "wall_ms_per_image": {k: round(1000 * v / n, 1) for k, v in wall.items()},
        "faces_per_image": {k: round(v / n, 2) for k, v in faces.items()},
        "mtcnn_over_hog_cpu": round(cpu["mtcnn"] / cpu["dlib_hog"], 2),
        "mtcnn_over_hog_wall": round(wall["mtcnn"] / wall["dlib_hog"], 2),
        "image_sizes": sorted({f"{im.shape[1]}x{im.shape[0]}" for im in images}),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
