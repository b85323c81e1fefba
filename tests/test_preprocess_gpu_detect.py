"""Batched face detection in preprocessing (issue 18, GPU path): ``FaceAnalyzer.detect_batch``,
``face.batch_size`` / ``face.device`` in the worker, and their config errors. Runs on the CPU;
the CUDA checks skip without a GPU."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from fairforensics.configs.loader import ConfigError
from fairforensics.preprocessing.config import PreprocessConfig, load_preprocess_config
from fairforensics.preprocessing.datasets.base import SourceItem
from fairforensics.preprocessing.faces import FaceAnalyzer
from fairforensics.preprocessing.video import read_frames
from fairforensics.preprocessing.worker import VideoResult, process_item
from tests.testdata import FACE_RECOGNITION, VIDEOS

CLIP = VIDEOS / "short_hamilton_clip.mp4"  # 640x360, 275 frames


def clip_frames() -> list[np.ndarray]:
    """Nine frames of the clip and a black frame of its size (no face: the retry runs)."""
    frames = read_frames(CLIP, list(range(0, 270, 30)))
    return [frames[i] for i in sorted(frames)] + [np.zeros((360, 640, 3), np.uint8)]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"detector": "mtcnn", "retry_upsample": 1},
        {"detector": "mtcnn", "detect_max_side": 320, "upsample": 1},
        {"detector": "hog", "retry_upsample": 1},
    ],
)
def test_detect_batch_equals_detect_per_frame(kwargs):
    analyzer = FaceAnalyzer(**kwargs)
    frames = clip_frames()
    batch = analyzer.detect_batch(frames)
    assert batch == [analyzer.detect(f) for f in frames]
    assert batch[-1] == [] and sum(map(len, batch)) >= 7  # HOG: 7 of the 9 clip frames
    for boxes in batch:  # largest first
        areas = [(r - left) * (b - t) for left, t, r, b in boxes]
        assert areas == sorted(areas, reverse=True)


def test_detect_batch_groups_frames_of_different_sizes():
    import cv2

    analyzer = FaceAnalyzer("mtcnn")
    photo = cv2.cvtColor(cv2.imread(str(FACE_RECOGNITION / "two_people.jpg")), cv2.COLOR_BGR2RGB)
    frames = clip_frames()[:3] + [photo] + clip_frames()[3:5]
    batch = analyzer.detect_batch(frames)
    assert batch == [analyzer.detect(f) for f in frames]
    assert len(batch[3]) == 2
    assert analyzer.detect_batch([]) == []
    with pytest.raises(ValueError, match="uint8"):
        analyzer.detect_batch([frames[0].astype(np.float32)])


def clip_config(tmp_path: Path, *overrides: str) -> PreprocessConfig:
    return load_preprocess_config(
        overrides=[
            "dataset.name=clip",
            "dataset.type=generic",
            f"dataset.root={tmp_path}",
            f"output.root={tmp_path / 'out'}",
            "sampling.num_frames=12",
            "face.detector=mtcnn",
            "align.size=64",
            *overrides,
        ]
    )


def run_clip(tmp_path: Path, name: str, *overrides: str) -> tuple[VideoResult, Path]:
    item = SourceItem(id="clip", label=0, method="real", split="test", path=CLIP, rel="clip")
    out = tmp_path / name
    return process_item(item, clip_config(tmp_path, *overrides), out), out


def test_worker_batches_give_the_same_faces_as_frame_by_frame(tmp_path):
    """batch_size 8 (12 kept frames: batches of 8 and 4) writes the same crops and landmarks
    as frame-by-frame detection without the previous frame's face size (which batches do not
    use), and the detect stage is timed."""
    one, one_dir = run_clip(
        tmp_path, "one", "face.batch_size=1", "face.face_size_from_previous=false"
    )
    eight, eight_dir = run_clip(tmp_path, "eight", "face.batch_size=8")
    assert one.reason is None and eight.reason is None
    assert one.record["frame_indices"] == eight.record["frame_indices"]
    assert len(eight.record["frames"]) >= 10 and one.faces == eight.faces
    assert one.skipped_frames == eight.skipped_frames
    for kind in ("frames", "landmarks"):
        for rel_one, rel_eight in zip(one.record[kind], eight.record[kind], strict=True):
            assert rel_one == rel_eight
            assert (one_dir / rel_one).read_bytes() == (eight_dir / rel_eight).read_bytes()
    assert eight.timing["detect"] > 0 and one.timing["detect"] > 0
    record = json.loads((eight_dir / "_done.json").read_text())
    assert record["fingerprint"] != json.loads((one_dir / "_done.json").read_text())["fingerprint"]


def test_batch_size_is_ignored_by_dlib_detectors(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(FaceAnalyzer, "detect_batch", lambda self, f: calls.append(f))
    result, _ = run_clip(tmp_path, "hog", "face.detector=hog", "sampling.num_frames=2")
    assert result.reason is None and calls == []


@pytest.mark.parametrize(
    "override, message",
    [
        (["face.batch_size=0"], "face.batch_size must be an integer >= 1"),
        (["face.batch_size=2.5"], "face.batch_size"),
        (["face.device=cuda", "face.detector=hog"], "face.device: cuda needs face.detector"),
        (["face.device=cuda", "face.detector=cnn"], "face.device: cuda needs face.detector"),
        (["face.device=tpu"], "face.device"),
    ],
)
def test_config_errors_name_the_key(tmp_path, override, message):
    with pytest.raises(ConfigError, match=message):
        clip_config(tmp_path, *override)


def test_defaults_batch_on_cuda_only():
    base = ["dataset.name=x", "dataset.type=generic", "dataset.root=."]
    cfg = load_preprocess_config(overrides=base)
    assert cfg.face.device == "cpu" and cfg.face.batch_size == 1
    cfg = load_preprocess_config(overrides=[*base, "face.detector=mtcnn", "face.device=cuda"])
    assert cfg.face.batch_size == 32
    cfg = load_preprocess_config(overrides=[*base, "face.detector=mtcnn", "face.batch_size=8"])
    assert cfg.face.device == "cpu" and cfg.face.batch_size == 8


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
def test_cuda_without_cuda_is_an_error_not_a_cpu_fallback(tmp_path):
    from fairforensics.preprocessing.pipeline import run_preprocess

    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "clip.mp4").symlink_to(CLIP)
    cfg = clip_config(tmp_path, "face.device=cuda", "dataset.options.ratios={test: 1.0}")
    with pytest.raises(ConfigError, match=r"face\.device: cuda.*no CUDA device"):
        run_preprocess(cfg, workers=1, progress=False)
    assert not (tmp_path / "out" / "clip").exists()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_worker_on_cuda_finds_the_faces_the_cpu_finds(tmp_path):
    cpu, _ = run_clip(tmp_path, "cpu", "face.batch_size=32")
    gpu, _ = run_clip(tmp_path, "gpu", "face.device=cuda")  # batches of 32 by default
    assert gpu.reason is None and gpu.record["frame_indices"] == cpu.record["frame_indices"]
    assert gpu.skipped_frames == cpu.skipped_frames
