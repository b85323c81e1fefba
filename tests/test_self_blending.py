"""SBI's self-blended pairs as its authors make them (``preprocessing.self_blending``, generator
``blend:sbi_paper``) on real faces with dlib landmarks, and through the training data set."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from fairforensics.preprocessing import self_blending as sb
from fairforensics.preprocessing.blending import BlendingError, generate, landmark_hull_mask
from fairforensics.preprocessing.frames import FrameDataset, collate
from fairforensics.preprocessing.index import read_index
from tests.test_blending import FACES, _face_crop
from tests.test_train_utils import make_index


@pytest.fixture(scope="module")
def obama() -> tuple[np.ndarray, np.ndarray]:
    return _face_crop(FACES / "obama.jpg")


def test_hull_masks(obama) -> None:
    image, pts = obama
    masks = {k: sb.hull_mask(image.shape[:2], pts, k) for k in sb.HULL_TYPES}
    hull = landmark_hull_mask(image.shape[:2], pts)
    for kind, mask in masks.items():
        assert mask.dtype == np.float32 and mask.min() == 0 and mask.max() == 1, kind
        assert mask[pts[30, 1].astype(int), pts[30, 0].astype(int)] == 1, kind  # nose tip
        assert (mask[hull == 0] > 0).mean() < 0.02 or kind == "extended", kind
    # the extended mask reaches above the brows, the component mask does not
    top = {k: int(np.nonzero(m.any(axis=1))[0][0]) for k, m in masks.items()}
    assert top["extended"] < top["components"] - 3
    assert top["components"] >= int(pts[17:27, 1].min()) - 1
    with pytest.raises(BlendingError, match="unknown hull type"):
        sb.hull_mask(image.shape[:2], pts, "oval")


def test_blend_mask_stays_on_the_face(obama) -> None:
    image, pts = obama
    hull = sb.hull_mask(image.shape[:2], pts, "facehull")
    for seed in range(4):
        mask = sb.blend_mask(hull, np.random.default_rng(seed))
        assert mask.shape == hull.shape and mask.max() == pytest.approx(1.0, abs=1e-3)
        far = cv2.dilate(hull, np.ones((31, 31), np.uint8)) == 0
        assert mask[far].max() < 0.05  # the blur spreads the edge a little, not further
        assert mask[hull > 0].mean() > 0.5
    with pytest.raises(BlendingError, match="empty"):
        sb.blend_mask(np.zeros_like(hull), np.random.default_rng(0))


def test_pairs_differ_only_around_the_blended_face(obama) -> None:
    """Away from the blend mask, the fake equals its real image (both get the same colour and
    JPEG transform); inside, the source was shifted, deformed or re-coloured."""
    image, pts = obama
    peaks, real_changed = set(), 0
    for seed in range(12):
        out = generate("sbi_paper", image, pts, np.random.default_rng(seed))
        fake, real, mask = out["image"], out["real"], out["mask"]
        assert fake.shape == real.shape == image.shape and fake.dtype == real.dtype == np.uint8
        assert mask.dtype == np.float32 and 0 <= mask.min() and mask.max() <= 1
        peaks.add(round(float(mask.max()), 2))
        # JPEG blocks (16x16 with chroma subsampling) two blocks away from the mask are
        # identical in both images
        touched = cv2.dilate((mask > 0).astype(np.uint8), np.ones((33, 33), np.uint8)) > 0
        blocks = touched.reshape(12, 16, 12, 16).any(axis=(1, 3))
        same = (fake == real).all(axis=2).reshape(12, 16, 12, 16).all(axis=(1, 3))
        assert (~blocks).sum() >= 20 and same[~blocks].all(), seed
        diff = np.abs(fake.astype(int) - real.astype(int)).sum(axis=2)
        assert diff[mask > 0.5 * mask.max()].mean() > 2 * diff[~touched].mean() + 1
        real_changed += int((real != image).any())
    assert peaks <= set(sb.BLEND_RATIOS) and len(peaks) >= 2
    assert real_changed >= 6  # the target (the real image) is transformed too


def test_pairs_are_reproducible(obama) -> None:
    image, pts = obama
    a = sb.self_blend_pair(image, pts, np.random.default_rng(3))
    b = sb.self_blend_pair(image, pts, np.random.default_rng(3))
    c = sb.self_blend_pair(image, pts, np.random.default_rng(4))
    for key in ("image", "mask", "real"):
        np.testing.assert_array_equal(a[key], b[key])
    assert not np.array_equal(a["mask"], c["mask"])


def test_training_set_pairs_each_real_frame_with_its_blend(tmp_path: Path) -> None:
    path = make_index(tmp_path, n_real=2, n_fake=2, frames=2, size=64, splits=("train",))
    ds = FrameDataset(
        [read_index(path)],
        "train",
        frame_num=2,
        resolution=64,
        requires={"blend:sbi_paper"},
        train=True,
    )
    assert len(ds) == 4  # the real videos' frames only; the dataset's fakes are not used
    batch = collate([ds[i] for i in range(len(ds))])
    assert batch["label"].tolist() == [0, 1] * 4
    assert batch["method"][1::2] == ["blend:sbi_paper"] * 4
    assert batch["image"].shape == (8, 3, 64, 64) and batch["_skipped"] == []
    again = collate([ds[i] for i in range(len(ds))])
    assert (again["image"] == batch["image"]).all()  # seeded by (seed, epoch, index)


def test_a_frame_that_cannot_be_blended_is_logged_and_skipped(tmp_path: Path, caplog) -> None:
    path = make_index(tmp_path, n_real=1, n_fake=1, frames=2, size=64, splits=("train",))
    index = read_index(path)
    real = next(v for v in index.videos if v.label == 0)
    np.save(index.resolve(real.landmarks[0]), np.full((68, 2), -500.0, np.float32))  # off-image
    ds = FrameDataset(
        [index], "train", frame_num=2, resolution=64, requires={"blend:sbi_paper"}, train=True
    )
    with caplog.at_level("WARNING"):
        first, second = ds[0], ds[1]
    assert len(first) == 1 and first[0]["label"] == 0  # the real frame stays, without a fake
    assert [s["label"] for s in second] == [0, 1]
    assert "no sbi_paper blend of frame 0" in caplog.text and "empty" in caplog.text
