"""The in-memory path from a video or image to face crops (``preprocessing.face_path``): the
crops preprocessing writes are the crops it makes, step by step, and the settings that made an
index are recorded in it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from fairforensics.configs.loader import ConfigError
from fairforensics.preprocessing.config import FaceSettings, load_preprocess_config
from fairforensics.preprocessing.datasets.base import SourceItem
from fairforensics.preprocessing.face_path import (
    FaceLog,
    NoFaceError,
    assign_tracks,
    crop_faces,
    decode_sampled,
    face_crops,
    find_faces,
)
from fairforensics.preprocessing.video import MediaReadError
from fairforensics.preprocessing.worker import process_item
from tests.testdata import CELEBRITIES, FACE_RECOGNITION, VIDEOS

CLIP = VIDEOS / "short_hamilton_clip.mp4"  # 640x360, 275 frames
TWO = FACE_RECOGNITION / "two_people.jpg"


def preprocess_config(tmp_path: Path, *overrides: str):
    base = ["dataset.name=x", "dataset.type=generic", f"dataset.root={tmp_path}", "align.size=64"]
    return load_preprocess_config(overrides=[*base, *overrides])


def written(tmp_path: Path, path: Path, *overrides: str) -> tuple[dict, Path]:
    """What the worker writes for ``path``: its record and folder."""
    cfg = preprocess_config(tmp_path, *overrides)
    item = SourceItem(id="v", label=0, method="real", split="test", path=path, rel="v")
    result = process_item(item, cfg, tmp_path / "out")
    assert result.reason is None, result.reason
    return result.record, tmp_path / "out"


def read_rgb(path: Path) -> np.ndarray:
    return cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)


@pytest.mark.parametrize(
    "overrides",
    [
        ("sampling.num_frames=4", "align.smooth_window=3"),
        ("sampling.mode=clips", "sampling.clip_size=3", "sampling.num_clips=2"),
        ("sampling.num_frames=3", "output.format=jpg", "output.jpeg_quality=70"),
    ],
)
def test_crops_in_memory_are_the_crops_preprocessing_writes(tmp_path, overrides):
    record, folder = written(tmp_path, CLIP, *overrides)
    settings = preprocess_config(tmp_path, *overrides).face_settings()
    got = face_crops(CLIP, settings)
    assert [c.frame for c in got.crops] == record["frame_indices"]
    for crop, rel, lm in zip(got.crops, record["frames"], record["landmarks"], strict=True):
        assert np.array_equal(crop.image, read_rgb(folder / rel))
        assert np.array_equal(crop.landmarks.astype(np.float32), np.load(folder / lm))
    assert got.log.skipped_frames == record["skipped_frames"]
    if "sampling.mode=clips" in overrides:
        assert len({c.clip for c in got.crops}) == len(record["clips"]) >= 1
        assert got.decoded.clips is not None


#: ArcFace's five points (eye centres, nose tip, mouth corners) in a 112 x 112 crop: the
#: positions the template crop puts them at (docs/preprocessing.md), written here, not imported.
ARCFACE_112 = np.array(
    [[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366], [41.5493, 92.3655],
     [70.7299, 92.2041]]
)  # fmt: skip


def redetected_five_points(crop: np.ndarray) -> np.ndarray:
    """dlib's own detector and 68-point model run on a written crop (no project code): the eye
    centres (points 36-41, 42-47), the nose tip (30) and the mouth corners (48, 54)."""
    import dlib

    from fairforensics.preprocessing.faces import models_dir

    faces = dlib.get_frontal_face_detector()(crop, 1)
    assert len(faces) == 1, f"dlib finds {len(faces)} faces in the crop"
    model = dlib.shape_predictor(str(models_dir() / "shape_predictor_68_face_landmarks.dat"))
    lm = np.array([(p.x, p.y) for p in model(crop, faces[0]).parts()], dtype=np.float64)
    return np.stack([lm[36:42].mean(0), lm[42:48].mean(0), lm[30], lm[48], lm[54]])


@pytest.mark.parametrize("photo", ["img1.jpg", "img13.jpg", "img22.jpg"])
def test_written_crop_puts_the_face_on_the_template(tmp_path, photo):
    """Landmarks found again on the written crop sit where the template crop puts them: the
    least-squares similarity from them to ArcFace's positions (scaled to 256 with margin 1.3)
    is the identity within 3% of scale, 2 degrees and 2 pixels (measured: 1%, 0.7 degrees,
    0.5 px on these photos)."""
    record, folder = written(tmp_path, CELEBRITIES / photo, "align.size=256")
    assert_face_on_template(read_rgb(folder / record["frames"][0]))


def assert_face_on_template(crop: np.ndarray, margin: float = 1.3) -> None:
    """The check of :func:`test_written_crop_puts_the_face_on_the_template` on one crop."""
    found = redetected_five_points(crop)
    size = crop.shape[0]
    target = (ARCFACE_112 * size / 112 - size / 2) / margin + size / 2
    z, w = found @ [1, 1j], target @ [1, 1j]  # points as complex numbers: w = a z + b
    (a, b), *_ = np.linalg.lstsq(np.stack([z, np.ones_like(z)], 1), w, rcond=None)
    centre = size / 2 * (1 + 1j)
    assert abs(abs(a) - 1) < 0.03, f"scale {abs(a):.3f}"
    assert abs(np.degrees(np.angle(a))) < 2, f"rotation {np.degrees(np.angle(a)):.2f} degrees"
    assert abs(a * centre + b - centre) < 2, f"shift {a * centre + b - centre:.2f} px"


def test_every_face_gets_a_track_and_a_crop(tmp_path):
    record, folder = written(tmp_path, TWO, "face.keep=all")
    settings = preprocess_config(tmp_path, "face.keep=all").face_settings()
    got = face_crops(TWO, settings)
    assert [(c.frame, c.rank, c.track) for c in got.crops] == [(0, 0, 0), (0, 1, 1)]
    for crop, rel in zip(got.crops, record["frames"], strict=True):
        assert np.array_equal(crop.image, read_rgb(folder / rel))
    left, top, right, bottom = got.crops[0].box
    assert 0 <= left < right and 0 <= top < bottom


def test_a_perturbation_between_decode_and_crop(tmp_path):
    """Clean faces crop the perturbed frames where the clean crops were; faces found again on
    the perturbed frames are the perturbed frames' own."""
    settings = preprocess_config(tmp_path, "sampling.num_frames=3").face_settings()
    log = FaceLog()
    decoded = decode_sampled(CLIP, settings, log)
    assert decoded.total == 275 and decoded.keep == [0, 137, 274] and not decoded.image
    clean = find_faces(decoded, settings, log=log)
    blurred = {i: cv2.GaussianBlur(f, (9, 9), 3) for i, f in decoded.frames.items()}
    clean_crops = crop_faces(decoded.frames, clean, settings.align)
    with_clean_faces = crop_faces(blurred, clean, settings.align)
    for a, b in zip(clean_crops, with_clean_faces, strict=True):
        assert np.array_equal(a.matrix, b.matrix) and not np.array_equal(a.image, b.image)
        expected = cv2.warpAffine(blurred[a.frame], a.matrix, (64, 64), flags=cv2.INTER_LINEAR)
        assert np.array_equal(b.image, expected)
    again = find_faces(replace(decoded, frames=blurred), settings)
    assert len(again) >= 1 and again.boxes[0] is not None


def test_no_face_and_bad_files(tmp_path):
    settings = FaceSettings()
    black = tmp_path / "black.png"
    cv2.imwrite(str(black), np.zeros((200, 200, 3), np.uint8))
    with pytest.raises(NoFaceError, match="no face in any of the 1 sampled frames"):
        face_crops(black, settings)
    text = tmp_path / "notes.png"
    text.write_text("not an image")
    with pytest.raises(MediaReadError, match="unreadable image"):
        face_crops(text, settings)
    with pytest.raises(MediaReadError, match="file not found"):
        face_crops(tmp_path / "absent.mp4", settings)


def test_tracks_follow_overlapping_boxes():
    a, b = (0, 0, 10, 10), (50, 50, 70, 70)
    faces = [(0, a), (0, b), (1, (51, 50, 71, 70)), (1, (1, 0, 11, 10)), (2, (200, 0, 210, 10))]
    assert assign_tracks(faces) == [0, 1, 1, 0, 2]
    assert assign_tracks([(0, a), (0, a)]) == [0, 1]  # one face per track and frame


def test_settings_round_trip_and_errors():
    settings = FaceSettings()
    data = settings.to_json()
    assert "root" not in data["output"] and data["align"]["scale"] == 1.3
    assert FaceSettings.from_json(data) == settings  # output.root: the default
    with pytest.raises(ConfigError, match="face.keep"):
        FaceSettings.from_json({"sampling": {"mode": "clips"}, "face": {"keep": "all"}})
    with pytest.raises(ConfigError, match="unknown key 'align.margin'"):
        FaceSettings.from_json({"align": {"margin": 2}}, source="run x")


def test_the_index_records_the_settings_that_made_it(tmp_path):
    from fairforensics.preprocessing.index import read_index
    from fairforensics.preprocessing.pipeline import run_preprocess

    raw = tmp_path / "raw" / "real"
    raw.mkdir(parents=True)
    (raw / "two.jpg").write_bytes(TWO.read_bytes())
    over = ["dataset.name=two", f"dataset.root={tmp_path / 'raw'}", "align.scale=1.1"]
    cfg = preprocess_config(tmp_path, *over, f"output.root={tmp_path / 'idx'}")
    run_preprocess(cfg, workers=1, progress=False)
    index = read_index(tmp_path / "idx" / "two.json")
    assert FaceSettings.from_json(index.preprocess).to_json() == cfg.face_settings().to_json()
    align = index.preprocess["align"]
    assert (align["size"], align["scale"], align["smooth_window"]) == (64, 1.1, 0)
