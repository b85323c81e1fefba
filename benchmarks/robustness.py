"""CPU cost of robustness evaluation (``scripts/bench_robustness.py``).

Three measurements, each in CPU seconds of this process (``time.process_time``):

* :func:`perturbation_costs`: each perturbation type and level alone, per frame of a given
  size; VC per frame of a whole video re-encoded (x264, ffmpeg's defaults, one thread).
* :func:`clean_pass_costs`: one clean pass per video, the baseline: decode the index's frames of
  the source video, find the faces, crop and score the scored frames (what ``detect`` does, and
  ``preprocess`` + ``test.py`` without their disk round trip); and ``test.py``'s own clean pass
  on the stored crops (read and score).
* :func:`robustness_costs`: a robustness run over the same videos (every case), per stage.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from fairforensics.evaluation.predict import clip_size_of, predict_images
from fairforensics.evaluation.robustness import RobustnessConfig, predict_cases
from fairforensics.evaluation.settings import TestConfig
from fairforensics.preprocessing.config import FaceSettings
from fairforensics.preprocessing.face_path import (
    DecodedFrames,
    as_stored,
    crop_faces,
    face_analyzer,
    find_faces,
)
from fairforensics.preprocessing.index import DatasetIndex
from fairforensics.preprocessing.perturb_video import compress_in_memory, open_video
from fairforensics.preprocessing.perturbations import (
    FRAME_TYPES,
    LEVELS,
    Perturbation,
    perturb_frame,
    perturbation_rng,
)
from fairforensics.preprocessing.perturbed_faces import scored_positions
from fairforensics.preprocessing.video import read_frames


def _cpu() -> float:
    return time.process_time()


def perturbation_costs(frame: np.ndarray, video: Path | None = None, repeat: int = 5) -> dict:
    """CPU milliseconds per frame of each frame type and level on ``frame`` (RGB), and of VC per
    frame of ``video`` (the whole video re-encoded in memory at each CRF)."""
    out: dict[str, Any] = {"frame_shape": list(frame.shape), "ms_per_frame": {}}
    for kind in FRAME_TYPES:
        for level in LEVELS:
            case = Perturbation(kind, level)
            rng = perturbation_rng(0, kind, level)
            t0 = _cpu()
            for _ in range(repeat):
                perturb_frame(frame, case, rng)
            out["ms_per_frame"][str(case)] = round(1000 * (_cpu() - t0) / repeat, 3)
    if video is not None:
        source = open_video(video)
        try:
            frames = list(source.frames())
            out["vc_video"] = {
                "path": str(video),
                "frames": len(frames),
                "size": [source.width, source.height],
            }
            for level in LEVELS:
                case = Perturbation("VC", level)
                t0 = _cpu()
                compress_in_memory(iter(frames), source, int(case.param))
                out["ms_per_frame"][str(case)] = round(1000 * (_cpu() - t0) / len(frames), 3)
        finally:
            source.close()
    return out


def _subset(index: DatasetIndex, split: str, n: int) -> DatasetIndex:
    return replace(index, videos=index.split(split)[:n])


def clean_pass_costs(
    detector: Any, index: DatasetIndex, source_root: str | Path, test: TestConfig, n: int
) -> dict:
    """CPU seconds per video of the clean face path from the source video, and of ``test.py``'s
    pass over the stored crops, on the first ``n`` videos of the test split."""
    settings = FaceSettings.from_json(index.preprocess, index.dataset)
    analyzer = face_analyzer(settings.face)
    clip = clip_size_of(detector)
    stages = dict.fromkeys(("decode", "detect", "crop", "model"), 0.0)
    stored = dict.fromkeys(("read", "model"), 0.0)
    videos = index.split(test.split)[:n]
    d = settings.decode
    for video in videos:
        t0 = _cpu()
        frames = read_frames(
            Path(source_root) / str(video.source), list(video.frame_indices or []),
            backend=d.backend, threads=d.threads, device=d.device,
        )  # fmt: skip
        t1 = _cpu()
        decoded = DecodedFrames(Path(str(video.source)), frames, len(frames), sorted(frames))
        faces = find_faces(decoded, settings, analyzer)
        t2 = _cpu()
        units = scored_positions(video, test.frame_num, clip)
        numbers = [[video.frame_indices[p] for p in u] for u in units]
        crops = {c.frame: as_stored(c.image, settings.output)
                 for c in crop_faces(frames, faces, settings.align)}  # fmt: skip
        images = [crops[u[0]] if clip is None else np.stack([crops[i] for i in u]) for u in numbers]
        t3 = _cpu()
        predict_images(detector, images, batch_size=test.batch_size)
        t4 = _cpu()
        for key, a, b in (
            ("decode", t0, t1),
            ("detect", t1, t2),
            ("crop", t2, t3),
            ("model", t3, t4),
        ):
            stages[key] += b - a
        t0 = _cpu()
        read = [
            cv2.cvtColor(cv2.imread(str(index.resolve(video.frames[p]))), cv2.COLOR_BGR2RGB)
            for u in units
            for p in u
        ]
        images = (
            read
            if clip is None
            else [np.stack(read[i : i + clip]) for i in range(0, len(read), clip)]
        )
        t1 = _cpu()
        predict_images(detector, images, batch_size=test.batch_size)
        t2 = _cpu()
        stored["read"] += t1 - t0
        stored["model"] += t2 - t1
    per = {k: v / len(videos) for k, v in stages.items()}
    per_stored = {k: v / len(videos) for k, v in stored.items()}
    return {
        "videos": len(videos),
        "face_path_cpu_s_per_video": {**per, "total": sum(per.values())},
        "stored_crops_cpu_s_per_video": {**per_stored, "total": sum(per_stored.values())},
    }


def robustness_costs(
    detector: Any,
    index: DatasetIndex,
    rcfg: RobustnessConfig,
    test: TestConfig,
    n: int,
) -> dict:
    """CPU seconds per video of a robustness run (every case of ``rcfg``) on the first ``n``
    videos of the test split, per stage and in total."""
    sub = _subset(index, test.split, n)
    t0 = _cpu()
    result = predict_cases(detector, sub, rcfg, test, progress=False)
    total = _cpu() - t0
    per = {k: v / result.videos for k, v in result.timing.items()}
    per["other"] = total / result.videos - sum(per.values())
    return {
        "videos": result.videos,
        "cases": len(rcfg.cases),
        "cpu_s_per_video": {**per, "total": total / result.videos},
    }


def per_type_costs(
    detector: Any, index: DatasetIndex, rcfg: RobustnessConfig, test: TestConfig, n: int,
    types: Sequence[str],
) -> dict:  # fmt: skip
    """:func:`robustness_costs` of each type alone (its five levels)."""
    return {
        t: robustness_costs(detector, index, replace(rcfg, types=[t]), test, n)["cpu_s_per_video"]
        for t in types
    }
