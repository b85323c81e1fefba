"""Blending generators (SBI, FWA, Face X-ray) and the nearest-landmark partner table on real faces."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import cv2
import numpy as np
import pytest

from fairforensics.configs.filemode import file_mode
from fairforensics.preprocessing import blending
from fairforensics.preprocessing.blending import (
    BlendingError,
    NearestLandmarks,
    Partner,
    generate,
    landmark_hull_mask,
    needs_partner,
    self_blend,
)
from tests.testdata import FACE_RECOGNITION

FACES = FACE_RECOGNITION
SIZE = 192


def _predictor():
    import dlib

    root = importlib.util.find_spec("face_recognition_models").submodule_search_locations[0]
    return dlib, dlib.shape_predictor(
        str(Path(root) / "models" / "shape_predictor_68_face_landmarks.dat")
    )


def _face_crop(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A SIZE x SIZE crop around the largest dlib face with its 68 landmarks (crop pixels)."""
    dlib, predictor = _predictor()
    rgb = cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)
    boxes = dlib.get_frontal_face_detector()(rgb, 0)
    assert boxes, f"no face found in {path}"
    box = max(boxes, key=lambda r: r.area())
    shape = predictor(rgb, box)
    pts = np.array([[p.x, p.y] for p in shape.parts()], dtype=np.float32)
    cx, cy = pts.mean(0)
    half = 0.75 * max(np.ptp(pts[:, 0]), np.ptp(pts[:, 1]))
    x0, y0 = int(cx - half), int(cy - half)
    crop = rgb[max(y0, 0) : int(cy + half), max(x0, 0) : int(cx + half)]
    scale = SIZE / crop.shape[0]
    crop = cv2.resize(crop, (SIZE, SIZE), interpolation=cv2.INTER_AREA)
    return crop, ((pts - [max(x0, 0), max(y0, 0)]) * [SIZE / (2 * half), scale]).astype(np.float32)


@pytest.fixture(scope="module")
def obama() -> tuple[np.ndarray, np.ndarray]:
    return _face_crop(FACES / "obama.jpg")


@pytest.fixture(scope="module")
def biden() -> tuple[np.ndarray, np.ndarray]:
    return _face_crop(FACES / "biden.jpg")


def test_landmarks_fall_on_the_face(obama):
    image, pts = obama
    assert pts.shape == (68, 2)
    assert (pts > 0).all() and (pts < SIZE).all()
    assert pts[36:42, 1].mean() < pts[48:68, 1].mean()  # eyes above the mouth


def test_hull_mask_hand_computed_square():
    pts = np.zeros((68, 2), np.float32)
    pts[:4] = [[2, 2], [7, 2], [7, 7], [2, 7]]
    pts[4:] = [4, 4]
    mask = landmark_hull_mask((10, 10), pts)
    expected = np.zeros((10, 10), np.float32)
    expected[2:8, 2:8] = 1
    np.testing.assert_array_equal(mask, expected)
    assert mask.dtype == np.float32


@pytest.mark.parametrize("name", ["sbi", "fwa", "xray"])
def test_generators_on_real_faces(name, obama, biden):
    image, pts = obama
    hull = landmark_hull_mask(image.shape[:2], pts)
    partner = biden if needs_partner(name) else None
    for seed in range(3):
        out = generate(name, image, pts, np.random.default_rng(seed), partner=partner)
        fake, mask = out["image"], out["mask"]
        assert fake.shape == image.shape and fake.dtype == np.uint8
        assert mask.shape == image.shape[:2] and mask.dtype == np.float32
        assert mask.min() >= 0 and mask.max() <= 1 and mask.max() > 0.2
        assert not (mask[hull == 0] > 0).any(), "mask leaks outside the face hull"
        changed = (fake != image).any(axis=2)
        assert not changed[mask == 0].any(), "pixels outside the mask changed"
        assert changed[mask > 0.5 * mask.max()].mean() > 0.3, "the blended face barely changed"
        if name == "xray":
            xray = out["xray"]
            np.testing.assert_allclose(xray, 4 * mask * (1 - mask), atol=1e-6)
            assert xray.min() >= 0 and xray.max() <= 1 and xray.max() > 0.9
            # the X-ray peaks on the blending boundary, is ~0 at the face centre and outside
            centre = np.round(pts[27:36].mean(0)).astype(int)
            assert xray[centre[1], centre[0]] < 0.05
            assert xray[hull == 0].max() == 0
            peak = (xray > 0.9) & (hull > 0)
            inner = cv2.erode(hull, np.ones((41, 41), np.uint8))
            assert (peak & (inner == 0)).sum() > 0.8 * peak.sum()


def test_generation_is_reproducible(obama):
    image, pts = obama
    a = self_blend(image, pts, np.random.default_rng(7))
    b = self_blend(image, pts, np.random.default_rng(7))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    c = self_blend(image, pts, np.random.default_rng(8))
    assert not np.array_equal(a[1], c[1])


def test_sbi_blend_ratio_scales_the_mask(obama):
    image, pts = obama
    peaks = {
        round(float(self_blend(image, pts, np.random.default_rng(s))[1].max()), 2)
        for s in range(25)
    }
    assert peaks <= set(blending.SBI_BLEND_RATIOS) and len(peaks) >= 2


def test_bad_inputs(obama):
    image, pts = obama
    rng = np.random.default_rng(0)
    with pytest.raises(BlendingError, match="unknown blending generator 'nope'"):
        generate("nope", image, pts, rng)
    with pytest.raises(BlendingError, match="uint8 HxWx3"):
        generate("sbi", image.astype(np.float32), pts, rng)
    with pytest.raises(BlendingError, match=r"\(68, 2\)"):
        generate("fwa", image, pts[:5], rng)
    with pytest.raises(BlendingError, match="partner"):
        generate("xray", image, pts, rng)
    bad = pts.copy()
    bad[3] = np.nan
    with pytest.raises(BlendingError, match="finite"):
        generate("sbi", image, bad, rng)
    with pytest.raises(BlendingError, match="landmark_hull_mask"):
        landmark_hull_mask((5, 5), np.zeros((2, 2)))
    assert needs_partner("xray") and not needs_partner("sbi") and not needs_partner("fwa")


def _write_index(
    root: Path, face_sets: dict[str, list[np.ndarray]], corrupt: str | None = None
) -> Path:
    from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, write_index

    videos = []
    for vid, lms in face_sets.items():
        frames, lm_paths = [], []
        for i, lm in enumerate(lms):
            rel = f"real/{vid}/landmarks/{i:03d}.npy"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            np.save(root / rel, lm)
            frames.append(f"real/{vid}/frames/{i:03d}.png")
            lm_paths.append(rel)
        videos.append(VideoEntry(vid, 0, "real", "train", frames, lm_paths))
    videos.append(VideoEntry("f", 1, "SelfBlended", "train", ["fake/f/000.png"], None))
    if corrupt:
        (root / corrupt).write_bytes(b"not a numpy file")
    path = root / "toy.json"
    write_index(DatasetIndex("toy", "deepfake", videos, root=root), path)
    return path


def test_nearest_landmarks_table_and_cache(tmp_path, obama, biden, caplog):
    _, a = obama
    _, b = biden
    rng = np.random.default_rng(0)
    # video v0 has obama-like landmarks, v1 near-copies of them, v2 biden's
    sets = {
        "v0": [a + rng.normal(0, 0.5, a.shape).astype(np.float32) for _ in range(3)],
        "v1": [a + rng.normal(0, 0.5, a.shape).astype(np.float32) + 5 for _ in range(3)],
        "v2": [b * 1.3 + rng.normal(0, 0.5, b.shape).astype(np.float32) for _ in range(3)],
    }
    path = _write_index(tmp_path, sets, corrupt="real/v2/landmarks/002.npy")
    with caplog.at_level("WARNING"):
        table = NearestLandmarks.from_index(path, k=3)
    assert "002.npy" in caplog.text  # the corrupt file is logged and skipped
    assert len(table) == 8 and table.table.shape == (8, 3)
    first = table.entries[0]
    assert first.video == "real/v0"
    # nearest frames of another video: v1 (same shape, shifted) beats v2 (biden)
    nearest = table.table[0]
    assert [table.entries[i].video for i in nearest[:3]] == ["real/v1"] * 3
    for s in range(5):
        assert table.sample(first.frame, np.random.default_rng(s)).video != first.video
    cached = list(tmp_path.glob(".nearest_landmarks_*.npz"))
    assert len(cached) == 1
    assert cached[0].stat().st_mode & 0o777 == file_mode()  # as the umask says, not 0600
    again = NearestLandmarks.from_index(path, k=3)
    np.testing.assert_array_equal(again.table, table.table)
    assert again.entries == table.entries
    partner = table.query(a, np.random.default_rng(0), k=2, exclude_video="real/v0")
    assert isinstance(partner, Partner) and partner.video == "real/v1"
    with pytest.raises(KeyError, match="not a real training frame"):
        table.sample(tmp_path / "missing.png", rng)


def test_nearest_landmarks_needs_two_videos(obama):
    _, a = obama
    entries = [Partner("v", Path(f"{i}.png"), Path(f"{i}.npy")) for i in range(2)]
    with pytest.raises(BlendingError, match="at least 2 videos"):
        NearestLandmarks.build(entries, np.stack([a, a]), k=5)


def test_nearest_landmarks_unwritable_cache_is_logged(tmp_path, obama, biden, caplog):
    _, a = obama
    _, b = biden
    path = _write_index(tmp_path, {"v0": [a], "v1": [b]})
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    with caplog.at_level("WARNING"):
        table = NearestLandmarks.from_index(path, k=5, cache_dir=blocker / "sub")
    assert "cannot write cache" in caplog.text
    assert table.table.shape == (2, 1) and table.entries[table.table[0, 0]].video == "real/v1"
