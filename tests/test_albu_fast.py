"""The fused training augmentation gives albumentations' pixels (issue 47, item 6).

``training.albu_fast.FusedAugment`` draws as albumentations 2.x draws and calls OpenCV directly;
every test compares it bit for bit with the albumentations pipeline of the same config and seed,
on the real faces of ``tests/data``, with every transform on and off, and checks that the fused
path was the one taken (its self-check would otherwise hide a wrong step behind albumentations).
"""

from __future__ import annotations

import dataclasses
import logging
import pickle
import random
from pathlib import Path

import albumentations as A
import albumentations.augmentations.geometric.functional as fgeometric
import cv2
import numpy as np
import pytest

from fairforensics.preprocessing.albu_seed import (
    SampleSeeds,
    entropy_pool,
    first_state,
    first_uniform,
)
from fairforensics.preprocessing.frames import (
    FrameDataset,
    apply_augment,
    apply_augment_clip,
    read_rgb,
    sample_seed,
)
from fairforensics.preprocessing.index import read_index
from fairforensics.training import albu_fast
from fairforensics.training.albu_fast import FusedAugment, rotation_matrix
from fairforensics.training.augment import build_augment
from fairforensics.training.config import AugmentConfig
from tests.test_training_index_parity import make_parity_index
from tests.testdata import CELEBRITIES, FACE_RECOGNITION, JOHNS


def _faces(size: int) -> list[np.ndarray]:
    """Every third real face of ``tests/data/faces`` (all three folders), centre square at
    ``size``, RGB uint8."""
    files = sorted(CELEBRITIES.glob("*.jpg")) + sorted(JOHNS.glob("*.jpg"))
    files += sorted(FACE_RECOGNITION.glob("*.jpg"))
    out = []
    for f in files[::3]:
        img = read_rgb(str(f))
        h, w = img.shape[:2]
        s = min(h, w)
        crop = img[(h - s) // 2 : (h - s) // 2 + s, (w - s) // 2 : (w - s) // 2 + s]
        out.append(cv2.resize(crop, (size, size), interpolation=cv2.INTER_AREA))
    return out


def _assert_same(cfg: AugmentConfig, size: int, seeds: range, keypoints: bool = False) -> None:
    """The fused pipeline of ``cfg`` gives the albumentations one's pixels for ``seeds``."""
    fused = FusedAugment(build_augment(cfg, size, keypoints=keypoints))
    reference = build_augment(cfg, size, keypoints=keypoints)
    assert fused.steps is not None, "the fused path is off"
    faces = _faces(size)
    for seed in seeds:
        image = faces[seed % len(faces)]
        assert fused.accepts(image)
        got, _, _ = apply_augment(fused, seed, image)
        want, _, _ = apply_augment(reference, seed, image)
        assert got.dtype == want.dtype and got.flags.c_contiguous
        assert np.array_equal(got, want), f"seed {seed}"


@pytest.mark.parametrize("size", [256, 48])
def test_default_augmentation_gives_albumentations_pixels(size: int) -> None:
    _assert_same(AugmentConfig(), size, range(60 if size == 256 else 400))


def _only(**on: float) -> AugmentConfig:
    """The default config with every transform off except those in ``on`` (name: p)."""
    cfg = AugmentConfig()
    for name in ("hflip", "rotate", "blur", "color", "downscale", "sharpen", "jpeg"):
        cfg = dataclasses.replace(cfg, **{name: dataclasses.replace(getattr(cfg, name), p=0.0)})
    for name, p in on.items():
        cfg = dataclasses.replace(cfg, **{name: dataclasses.replace(getattr(cfg, name), p=p)})
    return cfg


CASES = {
    "all off": _only(),
    "flip": _only(hflip=1.0),
    "rotation": _only(rotate=1.0),
    "blur": _only(blur=1.0),
    "jpeg": _only(jpeg=1.0),
    "downscale": _only(downscale=1.0),
    "sharpen": _only(sharpen=1.0),
    "every transform half the time": _only(
        hflip=0.5, rotate=0.5, blur=0.5, color=0.5, downscale=0.5, sharpen=0.5, jpeg=0.5
    ),
    "resize choice half the time": dataclasses.replace(
        AugmentConfig(),
        isotropic_resize=dataclasses.replace(AugmentConfig().isotropic_resize, p=0.5),
    ),
}
for _kind in ("brightness_contrast", "fancy_pca", "hsv"):
    _cfg = _only(color=1.0)
    CASES[_kind] = dataclasses.replace(_cfg, color=dataclasses.replace(_cfg.color, kinds=(_kind,)))


@pytest.mark.parametrize("case", list(CASES))
def test_every_transform_on_and_off(case: str) -> None:
    _assert_same(CASES[case], 40, range(60))


def test_pipeline_built_for_landmarks_fills_black_as_albumentations() -> None:
    """The keypoint pipeline rotates with a constant border; a lone image takes the fused path."""
    _assert_same(_only(rotate=1.0, jpeg=0.5), 40, range(40), keypoints=True)


def test_hsv_table_equals_albumentations_channel_maps() -> None:
    """Grey pixels (saturation 0 stays 0), saturating shifts, and shifts of exactly 0 (no
    change at all, not a round trip through HSV)."""
    rng = np.random.default_rng(0)
    grey = np.repeat(rng.integers(0, 256, (24, 24, 1), dtype=np.uint8), 3, axis=2)
    images = [*_faces(24)[:8], grey, rng.integers(0, 256, (24, 24, 3), dtype=np.uint8)]
    for limits in [(-20.0, 20.0), (0.0, 0.0), (60.0, 60.0), (-60.0, -60.0), (-0.5, 0.5)]:
        transform = A.HueSaturationValue(limits, limits, limits, p=1.0)
        for k in range(60):
            image = images[k % len(images)]
            transform.set_random_seed(k)
            want = transform(image=image)["image"]
            got = albu_fast._hsv(transform, image, random.Random(k))  # its py_random's seed
            assert np.array_equal(got, want), (limits, k)


def test_sample_seeds_are_numpys_spawned_seeds() -> None:
    rng = random.Random(3)
    for _ in range(3000):
        seed = rng.getrandbits(rng.choice([8, 32, 40]))
        key = tuple(rng.randrange(12) for _ in range(rng.choice([1, 2, 3])))
        want = np.random.SeedSequence(seed & 0xFFFFFFFF, spawn_key=key).generate_state(1)[0]
        assert SampleSeeds(seed).of(key) == int(want), (seed, key)


def test_entropy_pool_and_sample_seed_are_numpys() -> None:
    """The Python SeedSequence hash gives numpy's pool and first state word for entropy of 1 to
    9 words (beyond the pool's 4 too), zeros and the largest words included, and
    ``sample_seed`` is numpy's ``SeedSequence(parts).generate_state(1)[0]``."""
    rng = random.Random(5)
    for k in range(3000):
        n = 1 + k % 9
        words = [
            rng.choice([0, 1, 0xFFFFFFFF, rng.getrandbits(rng.choice([4, 31, 32]))])
            for _ in range(n)
        ]
        sequence = np.random.SeedSequence(words)
        assert entropy_pool(words) == sequence.pool.tolist(), words
        assert first_state(entropy_pool(words)) == int(sequence.generate_state(1)[0]), words
        parts = [rng.choice([-1, 2**32, 2**40 + 7, rng.getrandbits(33)]) for _ in range(n)]
        want = np.random.SeedSequence([p & 0xFFFFFFFF for p in parts]).generate_state(1)[0]
        assert sample_seed(*parts) == int(want), parts


def test_first_uniform_and_one_of_choice_are_numpys() -> None:
    """``first_uniform`` is ``default_rng(seed).random()`` (PCG64 seeded in Python), and a
    fused ``OneOf`` picks what ``default_rng(seed).choice(n, p=ps)`` picks, for probabilities
    of several shapes (equal, unequal, one child, ten)."""
    rng = random.Random(7)
    seeds = [0, 1, 2, 0xFFFFFFFF] + [rng.getrandbits(32) for _ in range(4000)]
    for seed in seeds:
        assert first_uniform(seed) == np.random.default_rng(seed).random(), seed
    for ps in ([1.0, 1.0, 1.0], [0.2, 0.5, 0.3], [1.0], [0.7, 0.3], [0.1] * 10):
        node = A.OneOf([A.HorizontalFlip(p=p) for p in ps], p=1.0)
        picked: list[int] = []
        children = [
            lambda image, r, s, j=j, got=picked: got.append(j) or image for j in range(len(ps))
        ]
        step = albu_fast._one_of(node, (0,), children)
        for seed in seeds[:1500]:
            picked.clear()
            step(np.zeros((1, 1, 3), np.uint8), SampleSeeds(seed))
            child_seed = SampleSeeds(seed).of((0,))
            want = np.random.default_rng(child_seed).choice(len(ps), p=node.transforms_ps)
            assert picked == [int(want)], (ps, seed)


def test_rotation_matrix_is_albumentations_matrix_bit_for_bit() -> None:
    rng = np.random.default_rng(1)
    for k in range(5000):
        angle = float(rng.uniform(-10, 10) if k % 2 else rng.uniform(-400, 400))
        size = int(rng.choice([24, 48, 255, 256, 299, 380]))
        center = fgeometric.center((size, size))
        want = fgeometric.create_affine_transformation_matrix(
            {"x": 0, "y": 0}, {"x": 0, "y": 0}, {"x": 1, "y": 1}, angle, center
        )
        assert np.array_equal(rotation_matrix(angle, center), want), angle
    assert albu_fast._is_identity(rotation_matrix(0.0, (11.5, 11.5)))
    assert not albu_fast._is_identity(rotation_matrix(0.01, (11.5, 11.5)))


def test_other_inputs_use_albumentations() -> None:
    """Another size, float pixels, landmarks: albumentations' own result."""
    fused = FusedAugment(build_augment(AugmentConfig(), 40, keypoints=True))
    reference = build_augment(AugmentConfig(), 40, keypoints=True)
    face = _faces(40)[0]
    points = np.tile(np.array([[10.0, 12.0], [30.0, 25.0]], np.float32), (34, 1))
    for seed in range(10):
        for image in (_faces(56)[1], face.astype(np.float32) / 255.0):
            assert not fused.accepts(image)
            got, _, _ = apply_augment(fused, seed, image)
            assert np.array_equal(got, apply_augment(reference, seed, image)[0])
        got_image, got_points, _ = apply_augment(fused, seed, face, points)
        want_image, want_points, _ = apply_augment(reference, seed, face, points)
        assert np.array_equal(got_image, want_image) and np.array_equal(got_points, want_points)


def test_clips_use_albumentations_with_one_draw() -> None:
    frames = [(face, None, None) for face in _faces(40)[:3]]
    fused = FusedAugment(build_augment(AugmentConfig(), 40))
    reference = build_augment(AugmentConfig(), 40)
    for seed in range(8):
        got = apply_augment_clip(fused, seed, frames)
        want = apply_augment_clip(reference, seed, frames)
        assert all(np.array_equal(g[0], w[0]) for g, w in zip(got, want, strict=True))


def test_unknown_transforms_leave_the_fused_path_off() -> None:
    sometimes = build_augment(AugmentConfig(), 32)
    sometimes.p = 0.5  # the whole pipeline only half the time
    assert FusedAugment(sometimes).steps is None
    pipeline = A.Compose([A.HorizontalFlip(p=0.5), A.Affine(scale=(0.9, 1.1), p=0.5)], seed=0)
    fused = FusedAugment(pipeline)
    assert fused.steps is None
    image = _faces(32)[0]
    assert not fused.accepts(image)
    got, _, _ = apply_augment(fused, 3, image)
    assert np.array_equal(got, apply_augment(pipeline, 3, image)[0])


def test_a_step_that_differs_turns_the_fused_path_off(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The self-check when fusing: a blur that draws its kernel size before its sigma (as
    another albumentations version might) is caught, logged, and albumentations is used."""

    def blur_drawn_the_other_way(
        node: A.GaussianBlur, image: np.ndarray, rng: random.Random
    ) -> np.ndarray:
        ksize = rng.randint(*node.blur_limit)
        sigma = rng.uniform(*node.sigma_limit)
        kernel = albu_fast.fblur.create_gaussian_kernel_1d(sigma, ksize)
        return cv2.sepFilter2D(image, -1, kernel, kernel)

    monkeypatch.setattr(albu_fast, "_blur", blur_drawn_the_other_way)
    with caplog.at_level(logging.WARNING):
        fused = FusedAugment(build_augment(AugmentConfig(), 40))
    assert fused.steps is None
    assert "albumentations' own calls" in caplog.text
    face = _faces(40)[2]
    want = apply_augment(build_augment(AugmentConfig(), 40), 5, face)[0]
    assert np.array_equal(apply_augment(fused, 5, face)[0], want)


def test_dataset_samples_equal_albumentations_samples(tmp_path: Path) -> None:
    index = read_index(make_parity_index(tmp_path))
    common = {"frame_num": 2, "resolution": 32, "train": True}
    fused = FrameDataset(
        [index], "train", augment=FusedAugment(build_augment(AugmentConfig(), 32)), **common
    )
    plain = FrameDataset([index], "train", augment=build_augment(AugmentConfig(), 32), **common)
    for epoch in range(3):
        for i in range(len(fused)):
            assert np.array_equal(fused[(epoch, i)]["image"], plain[(epoch, i)]["image"])


def test_fused_and_seeded_pipelines_pickle() -> None:
    """Spawned DataLoader workers get the dataset pickled: a used pipeline unpickles (its lazy
    generators did not) and the fused one gives the same pixels after the trip."""
    fused = FusedAugment(build_augment(AugmentConfig(), 40))
    face = _faces(40)[4]
    before = [apply_augment(fused, seed, face)[0] for seed in range(6)]
    copy = pickle.loads(pickle.dumps(fused))
    assert copy.steps is not None
    for seed, want in enumerate(before):
        assert np.array_equal(apply_augment(copy, seed, face)[0], want)
    used = pickle.loads(pickle.dumps(fused.pipeline))
    assert np.array_equal(apply_augment(used, 2, face)[0], before[2])


def test_rgb_decode_equals_bgr_decode_swapped(tmp_path: Path) -> None:
    files = sorted(CELEBRITIES.glob("*.jpg")) + sorted(JOHNS.glob("*.jpg"))
    png = tmp_path / "face.png"
    cv2.imwrite(str(png), _faces(32)[0])
    for f in [*files, *sorted(FACE_RECOGNITION.glob("*.jpg")), png]:
        want = cv2.cvtColor(cv2.imread(str(f), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
        assert np.array_equal(read_rgb(str(f)), want), f.name
    assert read_rgb(str(tmp_path / "missing.png")) is None
