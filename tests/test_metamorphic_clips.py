"""Metamorphic testing of a video detector: makeup on every frame of a clip, clip rows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

import tests.clip_detectors  # noqa: F401  (registers _tiny_clip)
from fairforensics.detectors import build_detector
from fairforensics.fairness.metamorphic import (
    BENCHMARK,
    FaceSample,
    Skipped,
    detector_scorer,
    load_relations,
    run_metamorphic,
)
from fairforensics.fairness.metamorphic.data import samples_from_index
from fairforensics.preprocessing.index import read_index, write_index
from tests.test_metamorphic_faces import aligned_faces
from tests.test_metamorphic_runner import CONFIG
from tests.test_train_utils import make_index

SHIFT = 2  # pixels the face moves per frame


def _clip_samples(labels=(1, 0, 0, 1)) -> list[FaceSample]:
    """The four real faces as 3-frame clips of a face moving SHIFT px per frame."""
    out = []
    for (name, face, lm, gender), label in zip(aligned_faces(), labels, strict=True):
        frames = np.stack([np.roll(face, SHIFT * k, axis=1) for k in range(3)])
        points = np.stack([lm + [SHIFT * k, 0] for k in range(3)])
        out.append(
            FaceSample(
                key=name, image=frames, label=label, attributes={"gender": gender},
                landmarks=points, dataset="celeb", video_id=name,
                method="fake" if label else "real",
            )
        )  # fmt: skip
    return out


def test_makeup_on_every_frame_of_each_clip() -> None:
    cfg, transforms = load_relations(CONFIG)
    seen: list[np.ndarray] = []

    def scorer(clips: list[np.ndarray]) -> np.ndarray:
        seen.extend(clips)
        return np.array([c[:, c.shape[1] // 2 :, :, 0].mean() / 255.0 for c in clips])

    samples = _clip_samples()
    result = run_metamorphic(samples, cfg, transforms, scorer, progress=False, n_examples=2)
    assert len(result.rows) == 4 and all(r.unit == "clip" for r in result.rows)
    assert all(c.shape == (3, 128, 128, 3) for c in seen)
    pred = result.predictions("TC1")
    assert set(pred.unit) == {"clip"} and pred.row_unit == "clip"
    # each follow-up frame is the transform of that source frame with that frame's landmarks
    follow = seen[4 : 4 + 4]  # TC1's clips come right after the benchmark's 4
    for sample, clip in zip(samples, follow, strict=True):
        for k in range(3):
            expected, mask = transforms["TC1"](sample.image[k], sample.landmarks[k])
            np.testing.assert_array_equal(clip[k], expected)
            assert (mask > 0).any()
    assert (result.changed["TC1"] > 0).all()
    shown = result.examples[0].images  # a clip shows its first frame
    assert shown[BENCHMARK].shape == (128, 128, 3) and shown["TC1"].shape == (128, 128, 3)


def test_clips_with_a_tiny_video_detector_and_skips() -> None:
    cfg, transforms = load_relations(CONFIG)
    detector = build_detector("_tiny_clip", {"input_size": 32})
    samples: list = _clip_samples()
    samples[1] = replace(samples[1], landmarks=samples[1].landmarks[:2])  # one set missing
    samples.append(Skipped("gone", "unreadable image"))
    result = run_metamorphic(
        samples, cfg, transforms, detector_scorer(detector, batch_size=2), progress=False
    )
    assert len(result.rows) == 3
    reasons = {s.key: s.reason for s in result.skipped}
    assert reasons["gone"] == "unreadable image"
    assert "2 landmark sets for 3 frames" in reasons[samples[1].key]
    assert ((result.scores[BENCHMARK] >= 0) & (result.scores[BENCHMARK] <= 1)).all()


def test_index_clips_with_their_landmarks(tmp_path: Path) -> None:
    index = read_index(make_index(tmp_path, n_real=1, n_fake=1, frames=6, size=48))
    index = replace(index, videos=[replace(v, clips=[[0, 3], [3, 3]]) for v in index.videos])
    write_index(index, tmp_path / "tiny.json")
    samples = list(samples_from_index(tmp_path / "tiny.json", "test", clip_size=3))
    assert [s.frame for s in samples] == [0, 3, 0, 3]  # two clips per video
    assert all(s.image.shape == (3, 48, 48, 3) and s.landmarks.shape == (3, 68, 2) for s in samples)
    one = list(samples_from_index(tmp_path / "tiny.json", "test", clip_size=3, frame_num=3))
    assert [s.frame for s in one] == [0, 0]
    (tmp_path / index.split("test")[0].frames[4]).write_bytes(b"broken")
    again = list(samples_from_index(tmp_path / "tiny.json", "test", clip_size=3))
    assert isinstance(again[1], Skipped) and "unreadable image" in again[1].reason
