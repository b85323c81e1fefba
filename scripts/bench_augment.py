#!/usr/bin/env python
"""The default training augmentation per transform, in one process (JSON; issue 47, item 6).

On the real faces of ``tests/data/faces`` (centre squares at ``--size`` px, RGB), CPU
milliseconds (``time.process_time``, OpenCV on one thread as in DataLoader workers) of each
transform's own OpenCV work when it is applied, with parameters drawn from the default ranges,
and times its probability in the default pipeline: their sum is the floor of any implementation
with these transforms and pixels. Then the whole pipeline as training runs it
(``training.albu_fast.FusedAugment``) and through albumentations' own calls, per frame.

Example::

    OMP_NUM_THREADS=1 python scripts/bench_augment.py --size 256 --repeats 4
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def faces(size: int) -> list[np.ndarray]:
    """The test faces (every JPEG under ``tests/data/faces``), centre squares at ``size``."""
    from fairforensics.preprocessing.frames import read_rgb

    out = []
    for path in sorted((REPO / "tests" / "data" / "faces").rglob("*.jpg")):
        img = read_rgb(str(path))
        h, w = img.shape[:2]
        s = min(h, w)
        crop = img[(h - s) // 2 : (h - s) // 2 + s, (w - s) // 2 : (w - s) // 2 + s]
        out.append(cv2.resize(crop, (size, size), interpolation=cv2.INTER_AREA))
    return out


def cpu_ms(work: Callable[[int], Any], n: int, repeats: int) -> float:
    """CPU ms a call of ``work(i)`` over ``i < n``, ``repeats`` times after one warm-up pass."""
    for i in range(n):
        work(i)
    t0 = time.process_time()
    for _ in range(repeats):
        for i in range(n):
            work(i)
    return 1e3 * (time.process_time() - t0) / (repeats * n)


def bench(size: int, repeats: int) -> dict[str, Any]:
    """Per-transform floor and the whole pipeline, fused and through albumentations."""
    import albumentations.augmentations.blur.functional as fblur

    from fairforensics.preprocessing.albu_seed import seed_pipeline
    from fairforensics.training import albu_fast
    from fairforensics.training.augment import build_augment
    from fairforensics.training.config import AugmentConfig

    cv2.setNumThreads(1)
    cfg = AugmentConfig()
    images = faces(size)
    n = len(images)
    pipeline = build_augment(cfg, size)
    kinds = {
        type(t).__name__: t for node in pipeline.transforms for t in getattr(node, "transforms", [])
    }
    brightness, fancy_pca, hsv = (
        kinds[k] for k in ("RandomBrightnessContrast", "FancyPCA", "HueSaturationValue")
    )
    draw = random.Random(0)
    center = (size / 2 - 0.5, size / 2 - 0.5)
    angles = [draw.uniform(-cfg.rotate.limit, cfg.rotate.limit) for _ in range(n)]
    matrices = [albu_fast.rotation_matrix(a, center)[:2] for a in angles]
    kernels = [
        fblur.create_gaussian_kernel_1d(draw.uniform(0.5, 3.0), draw.randint(*cfg.blur.blur_limit))
        for _ in range(n)
    ]
    qualities = [draw.randint(*cfg.jpeg.quality) for _ in range(n)]
    alphas = [np.array([draw.gauss(0, 0.1) for _ in range(3)], np.float32) for _ in range(n)]
    color_p = cfg.color.p / len(cfg.color.kinds)
    work = {  # name: (probability in the default pipeline, the work of one application)
        "rotation (warpAffine, reflected border)": (
            cfg.rotate.p,
            lambda i: cv2.warpAffine(
                images[i], matrices[i], (size, size), borderMode=cv2.BORDER_REFLECT_101
            ),
        ),
        "jpeg (imencode + imdecode)": (
            cfg.jpeg.p,
            lambda i: cv2.imdecode(
                cv2.imencode(".jpg", images[i], (cv2.IMWRITE_JPEG_QUALITY, qualities[i]))[1],
                cv2.IMREAD_UNCHANGED,
            ),
        ),
        "blur (sepFilter2D)": (
            cfg.blur.p,
            lambda i: cv2.sepFilter2D(images[i], -1, kernels[i], kernels[i]),
        ),
        "flip": (cfg.hflip.p, lambda i: cv2.flip(images[i], 1)),
        "fancy_pca": (color_p, lambda i: fancy_pca.apply(images[i], alpha_vector=alphas[i])),
        "hsv": (color_p, lambda i: albu_fast._hsv(hsv, images[i], draw)),
        "brightness_contrast": (
            color_p,
            lambda i: brightness.apply(images[i], alpha=1.0 + draw.uniform(-0.1, 0.1), beta=25.5),
        ),
    }
    transforms = {}
    for name, (p, one) in work.items():
        applied = cpu_ms(one, n, repeats)
        transforms[name] = {
            "p": round(p, 3),
            "cpu_ms_applied": round(applied, 3),
            "cpu_ms_a_frame": round(p * applied, 3),
        }
    fused = albu_fast.FusedAugment(pipeline)

    def through_albumentations(i: int) -> None:
        seed_pipeline(pipeline, i)
        pipeline(image=images[i])

    return {
        "faces": n,
        "size": size,
        "repeats": repeats,
        "transforms": transforms,
        "floor_cpu_ms_a_frame": round(sum(t["cpu_ms_a_frame"] for t in transforms.values()), 3),
        "fused_cpu_ms_a_frame": round(
            cpu_ms(lambda i: fused.augment_image(i, images[i]), n, repeats), 3
        ),
        "albumentations_cpu_ms_a_frame": round(cpu_ms(through_albumentations, n, repeats), 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=256, help="face side in px")
    ap.add_argument("--repeats", type=int, default=4, help="timed passes over the faces")
    args = ap.parse_args(argv)
    print(json.dumps(bench(args.size, args.repeats), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
