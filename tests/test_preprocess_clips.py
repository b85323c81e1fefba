"""Clip sampling (``sampling.mode: clips``): runs of consecutive frames, one crop per clip."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from fairforensics.configs.loader import ConfigError
from fairforensics.preprocessing.align import alignment_matrix, warp_face
from fairforensics.preprocessing.clip_crops import fill_landmarks
from fairforensics.preprocessing.datasets.base import SourceItem
from fairforensics.preprocessing.faces import FaceAnalyzer
from fairforensics.preprocessing.index import read_index
from fairforensics.preprocessing.pipeline import run_preprocess
from fairforensics.preprocessing.pyav_reader import _ranges
from fairforensics.preprocessing.video import read_frames, sample_clips
from fairforensics.preprocessing.worker import process_item
from tests.test_preprocess_pipeline import config, face_frames, make_ff_tree, write_video

CLIPS = {"sampling.mode": "clips", "sampling.clip_size": 3, "sampling.num_clips": 2}


@pytest.fixture(scope="module")
def clip_run(tmp_path_factory):
    raw = make_ff_tree(tmp_path_factory.mktemp("ffclips") / "raw", n_frames=10)
    out = tmp_path_factory.mktemp("out")
    cfg = config(raw, out, **CLIPS)
    summary = run_preprocess(cfg, workers=1, progress=False)
    return cfg, raw, out, summary


def test_sample_clips() -> None:
    assert sample_clips(10, 3, 2) == [[0, 1, 2], [7, 8, 9]]
    assert sample_clips(100, 16, 4) == [
        list(range(s, s + 16)) for s in (0, 28, 56, 84)
    ]  # evenly spaced starts, from the first frame to the last possible start
    assert sample_clips(10, 4, 4) == [[0, 1, 2, 3], [6, 7, 8, 9]]  # never overlapping
    assert sample_clips(10, 4, 1) == [[0, 1, 2, 3]]
    assert sample_clips(2, 3, 2) == [[0, 1]]  # shorter than a clip: one clip of all frames
    assert sample_clips(0, 3, 2) == []
    with pytest.raises(ValueError, match="positive"):
        sample_clips(10, 0, 2)


def test_a_run_of_consecutive_frames_is_decoded_in_one_pass() -> None:
    # 30 packets, keyframe every 10, no B-frames: a clip across a GOP boundary is one range
    pts, key = list(range(30)), [j % 10 == 0 for j in range(30)]
    assert _ranges(pts, key, [8, 9, 10, 11, 12]) == [(0, 12)]
    assert _ranges(pts, key, [0, 1, 2, 27, 28, 29]) == [(0, 2), (20, 29)]


def test_index_records_clips_of_consecutive_frames(clip_run) -> None:
    _, _, out, summary = clip_run
    assert json.loads((out / "demo.json").read_text())["schema_version"] == 4  # source_root
    index = read_index(out / "demo.json", check_files=True)
    assert summary.videos_done == 8
    by_key = {(v.method, v.id): v for v in index.videos}
    v = by_key[("Deepfakes", "000_001")]
    assert v.clips == [[0, 3], [3, 3]] and v.frame_indices == [0, 1, 2, 7, 8, 9]
    assert len(v.frames) == len(v.landmarks) == len(v.masks) == 6
    short = by_key[("Deepfakes", "002_003")]  # 2 frames: one clip of both
    assert short.clips == [[0, 2]] and short.frame_indices == [0, 1]
    manifest = json.loads((out / "demo.manifest.json").read_text())
    assert any(
        w["id"] == "002_003" and "1 clip(s) of 2 frames instead of 2 of 3" in w["warning"]
        for w in manifest["warnings"]
    )


def test_one_crop_per_clip_and_landmarks_per_frame(clip_run) -> None:
    """Each saved crop is its source frame warped with the alignment of the clip's mean
    landmarks; the landmarks are each frame's own, in that crop."""
    _, raw, out, _ = clip_run
    index = read_index(out / "demo.json")
    v = next(x for x in index.videos if x.id == "001")
    analyzer = FaceAnalyzer()
    for start, length in v.clips:
        numbers = v.frame_indices[start : start + length]
        frames = read_frames(raw / v.source, numbers)
        lms = [analyzer.analyze(frames[i])[0][1] for i in numbers]
        matrix = alignment_matrix(np.mean(np.stack(lms), axis=0), 64, 1.3)
        for k, (i, lm) in enumerate(zip(numbers, lms, strict=True)):
            crop, _, crop_lm = warp_face(frames[i], lm, matrix, 64)
            saved = cv2.imread(str(index.resolve(v.frames[start + k])))
            np.testing.assert_array_equal(saved, cv2.cvtColor(crop, cv2.COLOR_RGB2BGR))
            np.testing.assert_allclose(
                np.load(index.resolve(v.landmarks[start + k])), crop_lm, atol=1e-4
            )
    # the face moves 3 px per frame in the source: it moves in the stable crop too
    xs = [np.load(index.resolve(p))[:, 0].mean() for p in v.landmarks[:3]]
    assert 1.0 < xs[1] - xs[0] < 4.0 and 1.0 < xs[2] - xs[1] < 4.0


def test_cached_rerun_and_fingerprints(clip_run) -> None:
    cfg, raw, out, _ = clip_run
    again = run_preprocess(cfg, workers=1, progress=False)
    assert again.videos_cached == 8
    # the clip settings change the result only in clips mode: older results stay valid
    frames_a = config(raw, out, **{"sampling.clip_size": 3})
    frames_b = config(raw, out, **{"sampling.clip_size": 16})
    assert frames_a.fingerprint() == frames_b.fingerprint()
    assert config(raw, out, **{**CLIPS, "sampling.clip_size": 4}).fingerprint() != cfg.fingerprint()
    with pytest.raises(ConfigError, match="face.keep: largest"):
        config(raw, out, **CLIPS, **{"face.keep": "all"})
    with pytest.raises(ConfigError, match="sampling.num_clips must be positive"):
        config(raw, out, **{"sampling.num_clips": 0})


def test_frames_without_a_face_get_interpolated_landmarks(tmp_path: Path, clip_run) -> None:
    _, raw, _, _ = clip_run
    frames = face_frames(6)
    frames[1] = np.full_like(frames[1], 128)  # no face in the middle of the first clip
    frames[3:] = [np.full_like(frames[0], 128)] * 3  # no face at all in the second clip
    path = tmp_path / "v.mp4"
    write_video(path, frames)
    cfg = config(raw, tmp_path / "out", **CLIPS)
    item = SourceItem("v", 0, "real", "test", path, "v")
    res = process_item(item, cfg, tmp_path / "out" / "v")
    assert res.reason is None, res.reason
    assert res.record["frame_indices"] == [0, 1, 2] and res.record["clips"] == [[0, 3]]
    assert any("no face in 1 of its 3 frames" in n for n in res.notes)
    assert [f["frame"] for f in res.skipped_frames] == [3, 4, 5]
    assert {f["reason"] for f in res.skipped_frames} == {"no face in any frame of its clip"}
    lm = [np.load(tmp_path / "out" / "v" / p) for p in res.record["landmarks"]]
    np.testing.assert_allclose(lm[1], (lm[0] + lm[2]) / 2, atol=1e-3)  # shared matrix: linear


def test_fill_landmarks() -> None:
    a, b = np.zeros((68, 2), np.float32), np.full((68, 2), 4.0, np.float32)
    out = fill_landmarks([0, 1, 2, 3, 4, 5], {1: a, 5: b})
    np.testing.assert_array_equal(out[0], a)  # before the first detection: its copy
    np.testing.assert_allclose(out[2], np.full((68, 2), 1.0))
    np.testing.assert_allclose(out[4], np.full((68, 2), 3.0))
    with pytest.raises(ValueError, match="no frame"):
        fill_landmarks([0], {})
