"""Speed of ``detect`` on one video, split into decode, face detection and model, against
``preprocess`` + ``test.py``'s scoring of the same video with the same settings.

The detectors are built untrained (``pretrained: false``) and saved as checkpoints: speed does
not depend on the weights. ``detect`` runs through its function (as the command does, without
the start-up); the comparison runs :func:`preprocessing.pipeline.run_preprocess` (one worker,
in this process) and :func:`evaluation.predict.predict_index` on the index it wrote, which is
how ``test.py`` scores a test set.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from fairforensics.configs.loader import config_to_dict
from fairforensics.detectors import build_detector, load_detector_file, save_checkpoint
from fairforensics.evaluation.detection import detect
from fairforensics.evaluation.predict import predict_index
from fairforensics.preprocessing.config import load_preprocess_config
from fairforensics.preprocessing.pipeline import run_preprocess
from fairforensics.preprocessing.video import count_frames


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clock()
    return round(wall - start[0], 3), round(cpu - start[1], 3)


def untrained_checkpoint(name: str, folder: Path) -> Path:
    """A checkpoint of detector ``name`` built without pretrained weights."""
    detector = build_detector(name, pretrained=False)
    path = folder / f"{name}.pt"
    save_checkpoint(
        path, {"model": detector.state_dict(), "meta": {"model": config_to_dict(detector.cfg)}}
    )
    return path


def bench_detect_video(
    video: Path, detectors: Sequence[str] = ("meso4", "xception"), repeat: int = 2
) -> dict[str, Any]:
    """Seconds (wall and CPU) per stage of ``detect`` and of preprocess + test.py on ``video``
    with the default face-crop settings (dlib HOG, 32 frames, margin 1.3, 256 px)."""
    report: dict[str, Any] = {
        "video": str(video),
        "frames": count_frames(video),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "detectors": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = tmp / "raw" / "test" / "real"
        data.mkdir(parents=True)
        os.symlink(video.resolve(), data / video.name)
        start = _clock()
        cfg = load_preprocess_config(
            overrides=[
                "dataset.name=bench",
                "dataset.type=generic",
                f"dataset.root={tmp / 'raw'}",
                f"output.root={tmp / 'processed'}",
            ]  # fmt: skip
        )
        summary = run_preprocess(cfg, workers=1, progress=False)
        wall, cpu = _since(start)
        preprocess = {"wall_s": wall, "cpu_s": cpu, "stage_cpu_s": _rounded(summary.timing)}
        report["preprocess"] = preprocess
        for name in detectors:
            weights = untrained_checkpoint(name, tmp)
            runs = []
            for _ in range(repeat):  # the first includes loading dlib's models
                start = _clock()
                result = detect(video, detector=name, weights=weights, device="cpu")
                wall, cpu = _since(start)
                runs.append((wall, cpu, result))
            wall, cpu, result = runs[-1]
            t = result.timing
            (f,) = result.files
            model = load_detector_file(name, weights)
            start = _clock()
            pred = predict_index(model, tmp / "processed" / "bench.json", "test", device="cpu")
            test_wall, test_cpu = _since(start)
            report["detectors"][name] = {
                "detect": {
                    "wall_s": wall,
                    "cpu_s": cpu,
                    "first_call_wall_s": runs[0][0],
                    "stage_cpu_s": {
                        "decode": round(t["decode"], 3),
                        "face_detection": round(t["detect"] + t["landmarks"] + t["align"], 3),
                        "model": round(t["model"], 3),
                    },
                    "faces_scored": f.n_faces,
                },
                "preprocess_plus_test": {
                    "wall_s": round(preprocess["wall_s"] + test_wall, 3),
                    "cpu_s": round(preprocess["cpu_s"] + test_cpu, 3),
                    "test_scoring_wall_s": test_wall,
                    "test_scoring_cpu_s": test_cpu,
                },
                "score_difference": float(abs(f.score - np.mean(pred.score))),
            }
    return report


def _rounded(timing: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 3) for k, v in timing.items()}
