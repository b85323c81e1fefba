#!/usr/bin/env python
"""Fit ``preprocessing.faces.MTCNN_BOX_SIDE`` against dlib HOG boxes; print the fit as JSON.

dlib's 68-point predictor expects boxes of dlib's detector, so ``dlib_box_from_mtcnn`` turns
an MTCNN face into a square centred on its five points whose side is ``MTCNN_BOX_SIDE`` times
the geometric mean of MTCNN's box width and height. This script finds the factor with the
highest mean IoU against dlib HOG's boxes (upsample 0, colour scan) on the photos' 640 px
copies, every dlib face matched to the MTCNN box that overlaps it most.

python scripts/fit_mtcnn_box_side.py                  # photos in ../shared/data
python scripts/fit_mtcnn_box_side.py --images a.jpg b.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import cv2  # noqa: E402
import numpy as np  # noqa: E402

from fairforensics.preprocessing.faces import MTCNN_BOX_SIDE, FaceAnalyzer  # noqa: E402
from fairforensics.preprocessing.mtcnn import MTCNN  # noqa: E402

DATA = REPO.parent / "shared" / "data"
FACES = DATA / "faces"
DEFAULT_IMAGES = [
    *sorted((DATA / "pad" / "silent_face").glob("*.jpg")),
    *sorted(p for p in (FACES / "face_recognition").iterdir() if p.suffix in (".jpg", ".png")),
    *sorted((FACES / "facenet_pytorch" / "test_images").glob("*/*.jpg")),
    FACES / "facenet_pytorch" / "multiface.jpg",
    *sorted((FACES / "celebrities").glob("*.jpg")),
] if FACES.is_dir() else []  # fmt: skip


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of boxes (..., 4) as left, top, right, bottom."""
    ix = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    iy = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    area = lambda r: (r[..., 2] - r[..., 0]) * (r[..., 3] - r[..., 1])  # noqa: E731
    inter = ix * iy
    return inter / (area(a) + area(b) - inter)


def pairs(paths: list[Path], max_side: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(dlib box, MTCNN box, MTCNN points) of every dlib face that MTCNN also finds."""
    hog = FaceAnalyzer("hog", 0, None, 0, detect_on="rgb")
    mtcnn = MTCNN()
    out = []
    for path in paths:
        bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if bgr is None:
            continue
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
        s = max_side / max(rgb.shape[:2])
        if s < 1:
            rgb = cv2.resize(rgb, None, fx=s, fy=s, interpolation=cv2.INTER_AREA)
        boxes, _, points = mtcnn.detect(rgb)
        for box in hog.detect(rgb):
            overlap = iou(np.asarray(box, np.float64), boxes.astype(np.float64))
            if len(boxes) and overlap.max() > 0.3:
                k = int(overlap.argmax())
                out.append((np.asarray(box, np.float64), boxes[k], points[k]))
    return out


def squares(found: list[tuple[np.ndarray, np.ndarray, np.ndarray]], side: float) -> np.ndarray:
    """``dlib_box_from_mtcnn`` of every pair with the factor ``side``, (N, 4)."""
    boxes = np.stack([m for _, m, _ in found]).astype(np.float64)
    centre = np.stack([p.mean(axis=0) for _, _, p in found]).astype(np.float64)
    half = side * np.sqrt((boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1]))[:, None] / 2
    return np.concatenate([centre - half, centre + half], axis=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", nargs="+", type=Path, default=DEFAULT_IMAGES)
    parser.add_argument("--max-side", type=int, default=640)
    args = parser.parse_args(argv)
    if not args.images:
        parser.error(f"no photos: {DATA} is absent; pass --images")
    found = pairs(args.images, args.max_side)
    if not found:
        parser.error("no face found by both detectors")
    dlib_boxes = np.stack([d for d, _, _ in found])
    grid = np.round(np.arange(0.80, 1.0501, 0.005), 3)
    means = [iou(squares(found, s), dlib_boxes).mean() for s in grid]
    best = float(grid[int(np.argmax(means))])

    def stats(side: float) -> dict[str, float]:
        o = iou(squares(found, side), dlib_boxes)
        return {k: round(float(f(o)), 3) for k, f in (("mean", np.mean), ("median", np.median), ("min", np.min))}  # fmt: skip

    report = {
        "photos": len(args.images),
        "faces": len(found),
        "max_side": args.max_side,
        "best_side": best,
        "iou_at_best": stats(best),
        "current_side": MTCNN_BOX_SIDE,
        "iou_at_current": stats(MTCNN_BOX_SIDE),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
