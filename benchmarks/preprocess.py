"""Speed of the preprocessing pipeline on real videos, and of a DeepfakeBench-style baseline.

The baseline re-creates, with the same dlib models, what DeepfakeBench's
``preprocessing/preprocess.py`` does per video: load the models, decode every frame with
colour conversion, detect on the full-size frame with upsample 1, 68 landmarks, align, and
detect again on the aligned crop. It is an emulation for a same-machine comparison, not their code.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import cv2

from preprocessing.align import align_face
from preprocessing.config import load_preprocess_config
from preprocessing.faces import FaceAnalyzer, _load
from preprocessing.pipeline import run_preprocess
from preprocessing.video import count_frames, sample_indices

logger = logging.getLogger(__name__)


def bench_pipeline(
    videos: list[Path],
    num_frames: int = 32,
    workers: int | None = None,
    size: int = 256,
    repeat: int = 1,
) -> dict[str, Any]:
    """Run the real pipeline (generic layout in a temporary folder) and report its speed.

    ``repeat`` lists every video that many times (under other names), so that the one-off
    start of the worker processes weighs as little as on a real dataset.
    """
    tmp = Path(tempfile.mkdtemp(prefix="bench_preprocess_"))
    try:
        real = tmp / "raw" / "real"
        real.mkdir(parents=True)
        for r in range(repeat):
            for i, video in enumerate(videos):
                os.symlink(video.resolve(), real / f"{r:02d}_{i:03d}_{video.name}")
        cfg = load_preprocess_config(
            overrides=[
                "dataset.name=bench",
                "dataset.type=generic",
                f"dataset.root={tmp / 'raw'}",
                f"output.root={tmp / 'out'}",
                f"sampling.num_frames={num_frames}",
                f"align.size={size}",
            ]  # fmt: skip
        )
        start = time.perf_counter()
        s = run_preprocess(cfg, workers=workers or os.cpu_count() or 1, progress=False)
        wall = time.perf_counter() - start
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "videos": s.videos_total,
        "frames": s.frames_sampled,
        "faces_found": s.faces,
        "wall_s": round(wall, 2),
        "videos_per_s": round(s.videos_total / wall, 3),
        "frames_per_s": round(s.frames_sampled / wall, 2),
        "stage_s": {k: round(v, 2) for k, v in s.timing.items()},  # summed over workers
        "cpu_s_per_frame": round(s.cpu_s / max(s.frames_sampled, 1), 4),
        "workers": workers or os.cpu_count(),
    }


def bench_deepfakebench_style(videos: list[Path], num_frames: int = 32) -> dict[str, Any]:
    """The emulated DeepfakeBench per-video procedure, one process, same frames."""
    stages = dict.fromkeys(
        ("load_models", "decode", "detect", "landmarks", "align", "redetect"), 0.0
    )
    frames_done = faces = 0
    start, cpu0 = time.perf_counter(), time.process_time()
    for video in videos:
        t0 = time.perf_counter()
        _load.cache_clear()  # DeepfakeBench loads the models again for every video
        analyzer = FaceAnalyzer("hog", upsample=1, detect_max_side=None)
        _load("hog"), _load("shape68")
        stages["load_models"] += time.perf_counter() - t0
        keep = set(sample_indices(count_frames(video), "fixed_num_frames", num_frames))
        cap = cv2.VideoCapture(str(video))
        i = 0
        while True:
            t0 = time.perf_counter()
            ok, bgr = cap.read()
            if not ok:
                break
            rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
            stages["decode"] += time.perf_counter() - t0
            if i in keep:
                frames_done += 1
                t0 = time.perf_counter()
                boxes = analyzer.detect(rgb)
                stages["detect"] += time.perf_counter() - t0
                if boxes:
                    faces += 1
                    t0 = time.perf_counter()
                    lm = analyzer.landmarks(rgb, boxes[0])
                    stages["landmarks"] += time.perf_counter() - t0
                    t0 = time.perf_counter()
                    crop, _, _ = align_face(rgb, lm)
                    stages["align"] += time.perf_counter() - t0
                    t0 = time.perf_counter()
                    analyzer.analyze(crop)
                    stages["redetect"] += time.perf_counter() - t0
            i += 1
        cap.release()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
    return {
        "videos": len(videos),
        "frames": frames_done,
        "faces_found": faces,
        "wall_s": round(wall, 2),
        "frames_per_s": round(frames_done / wall, 2),
        "stage_s": {k: round(v, 2) for k, v in stages.items()},
        "cpu_s_per_frame": round(cpu / max(frames_done, 1), 4),
        "workers": 1,
    }
