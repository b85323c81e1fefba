"""The training data pipeline: dataset keys, augmentations, bad frames, collate, samplers, config."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from fairforensics.configs import ConfigError
from fairforensics.preprocessing.frames import (
    FrameDataset,
    apply_augment,
    collate,
    sample_positions,
    to_device,
)
from fairforensics.preprocessing.index import read_index
from fairforensics.training.augment import build_augment
from fairforensics.training.config import AugmentConfig, TrainConfig, load_train_config
from fairforensics.training.samplers import ShardSampler, TrainSampler
from fairforensics.training.selection import Selector
from fairforensics.training.trainer import lr_factor
from tests.test_train_utils import face, make_index


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("data")
    return read_index(make_index(root, n_real=2, n_fake=2, frames=4, size=48, methods=("A", "B")))


def _ds(index, requires=(), split="train", **kw) -> FrameDataset:
    kw.setdefault("frame_num", 2)
    kw.setdefault("resolution", 32)
    return FrameDataset([index], split, requires=frozenset(requires), **kw)


def test_sample_positions_spread_over_the_video() -> None:
    assert sample_positions(10, 3) == [0, 4, 9]  # not the first N frames
    assert sample_positions(2, 32) == [0, 1]


def test_plain_batch_keys_shapes_and_metadata(index) -> None:
    ds = _ds(index)
    assert len(ds) == 8  # 4 train videos x 2 frames
    batch = collate([ds[i] for i in range(len(ds))])
    assert batch["image"].shape == (8, 3, 32, 32) and batch["image"].dtype == torch.uint8
    assert batch["label"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert batch["frame"].tolist()[:2] == [0, 3]
    assert batch["method"][-1] == "B" and batch["dataset"][0] == "tiny"
    assert set(batch["attributes"]["gender"]) == {"male", "female"}
    assert not {"mask", "landmarks", "views", "pixel_map"} & set(batch)
    dev = to_device(batch, "cpu", (0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    assert dev["image"].dtype == torch.float32
    assert -1.0 <= float(dev["image"].min()) and float(dev["image"].max()) <= 1.0


@pytest.mark.parametrize("channels_last", [False, True])
def test_to_device_normalises_per_channel(channels_last: bool) -> None:
    g = torch.Generator().manual_seed(0)
    image = torch.randint(0, 256, (2, 3, 4, 5), dtype=torch.uint8, generator=g)
    views = torch.randint(0, 256, (2, 4, 3, 4, 5), dtype=torch.uint8, generator=g)
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    out = to_device(
        {"image": image, "views": views, "label": torch.tensor([0, 1])},
        "cpu",
        mean,
        std,
        channels_last,
    )
    m, s = torch.tensor(mean).view(3, 1, 1), torch.tensor(std).view(3, 1, 1)
    torch.testing.assert_close(out["image"], (image.double() / 255 - m) / s, check_dtype=False)
    torch.testing.assert_close(out["views"], (views.double() / 255 - m) / s, check_dtype=False)
    assert out["image"].dtype == torch.float32 and out["label"].tolist() == [0, 1]
    assert out["image"].is_contiguous(
        memory_format=torch.channels_last if channels_last else torch.contiguous_format
    )


def test_required_keys(index) -> None:
    req = {"mask", "landmarks", "method_label", "views", "pixel_map"}
    ds = _ds(
        index, req, augment=build_augment(AugmentConfig(), 32, keypoints=True), pixel_map_size=14
    )
    batch = collate([ds[i] for i in range(len(ds))])
    assert batch["mask"].shape == (8, 1, 32, 32)
    assert batch["has_mask"].all()  # reals: known zero masks; these fakes have masks
    assert float(batch["mask"][:4].abs().sum()) == 0 and float(batch["mask"][4:].sum()) > 0
    assert batch["landmarks"].shape == (8, 68, 2)
    assert batch["method_label"].tolist() == [0, 0, 0, 0, 1, 1, 2, 2]  # real, then sorted A, B
    assert batch["views"].shape == (8, 2, 3, 32, 32)
    assert not torch.equal(batch["views"][:, 0], batch["views"][:, 1])  # independent views
    assert batch["pixel_map"].shape == (8, 1, 14, 14)
    assert batch["pixel_map"][:4].sum() == 0 and (batch["pixel_map"][4:] == 1).all()


def test_unseen_method_gets_ignore_index(index) -> None:
    ds = _ds(index, {"method_label"}, split="test", method_names=["A"])
    labels = collate([ds[i] for i in range(len(ds))])["method_label"].tolist()
    assert labels == [0, 0, 0, 0, 1, 1, -100, -100]


def test_pairs_batch_is_half_fake_half_real_with_partners(index) -> None:
    ds = _ds(index, {"pairs"}, train=True)
    assert len(ds) == 4  # items are the fakes
    batch = collate([ds[i] for i in range(4)])
    assert batch["label"].tolist() == [1, 1, 1, 1, 0, 0, 0, 0]
    assert batch["pair_index"].tolist() == [4, 5, 6, 7, 0, 1, 2, 3]
    # a fake "train000_001" is paired with the real video of its identity "train000"
    assert batch["video_id"][0].split("_")[0] == batch["video_id"][4]


def test_augmentation_moves_landmarks_and_masks_with_the_image() -> None:
    cfg = AugmentConfig()
    for name in ("rotate", "blur", "color", "jpeg"):
        getattr(cfg, name).p = 0.0
    cfg.hflip.p = 1.0
    pipe = build_augment(cfg, 48, keypoints=True)
    img = face(0, 48)
    pts = np.array([[5.0, 10.0], [30.0, 40.0]] * 34, np.float32)
    mask = np.zeros((48, 48), np.float32)
    mask[:, :10] = 1
    out, out_pts, out_mask = apply_augment(pipe, 3, img, pts, mask)
    np.testing.assert_array_equal(out, img[:, ::-1])
    np.testing.assert_allclose(out_pts[:, 0], 48 - pts[:, 0], atol=1.0)
    np.testing.assert_array_equal(out_mask, mask[:, ::-1])


def test_augmentation_is_seeded_and_rotation_keeps_points_on_the_face() -> None:
    cfg = AugmentConfig()
    for name in ("hflip", "blur", "color", "jpeg"):
        getattr(cfg, name).p = 0.0
    cfg.rotate.p = 1.0
    pipe = build_augment(cfg, 48, keypoints=True)
    img = face(1, 48)
    pts = np.array([[24.0, 12.0]] * 68, np.float32)
    a = apply_augment(pipe, 11, img, pts)
    b = apply_augment(pipe, 11, img, pts)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    angles = []
    for seed in range(8):
        moved = apply_augment(pipe, seed, img, pts)[1][0] - 23.5
        assert np.linalg.norm(moved) == pytest.approx(np.linalg.norm(pts[0] - 23.5), abs=1.0)
        angles.append(np.degrees(np.arctan2(moved[0], -moved[1])))
    # the angle is read back from a point 11.5 px from the assumed centre (23.5): half a pixel
    # of centre or rounding is up to 2.5 degrees there (with one seed per transform, seed 0-7
    # draw 10.66 for a limit of 10)
    assert max(abs(x) for x in angles) <= 12.5 and np.ptp(angles) > 1.0


def test_disabled_augmentation_is_identity() -> None:
    cfg = AugmentConfig(enabled=False)
    assert build_augment(cfg, 32) is None
    img = face(2, 32)
    out, _, _ = apply_augment(None, 0, img)
    assert out is img


def test_missing_frame_is_replaced_by_the_same_video(tmp_path: Path) -> None:
    index = read_index(
        make_index(tmp_path, n_real=2, n_fake=2, frames=3, size=32, splits=("train",))
    )
    video = index.videos[1]
    index.resolve(video.frames[0]).unlink()  # gone
    index.resolve(video.frames[2]).write_bytes(b"not a png")  # corrupt
    ds = _ds(index, frame_num=3)
    samples = [ds[i] for i in range(len(ds))]
    batch = collate(samples)
    assert len(batch["_replaced"]) == 2 and not batch["_skipped"]
    rows = [i for i, v in enumerate(batch["video_id"]) if v == video.id]
    assert len(rows) == 3  # the video still gives 3 samples, all its readable frame 1
    ref = batch["image"][rows[1]]
    assert all(torch.equal(batch["image"][r], ref) for r in rows)
    assert batch["frame"][rows].tolist() == [1, 1, 1]
    # every frame gone: the samples are skipped and reported, never replaced by sample 0
    for rel in video.frames:
        index.resolve(rel).unlink(missing_ok=True)
    batch = collate([ds[i] for i in range(len(ds))])
    assert len(batch["_skipped"]) == 3 and video.id not in batch["video_id"]
    assert len(batch["label"]) == len(ds) - 3


@pytest.mark.parametrize(
    ("content", "why"),
    [(b"", "unreadable landmarks file"), (b"not an npy file", "unreadable landmarks file")],
)
def test_an_unreadable_landmarks_file_is_reported_as_that(
    tmp_path: Path, caplog, content: bytes, why: str
) -> None:
    """A landmarks file that cannot be read is named in the warning and the skip reason (not
    "no readable frame", and an empty file does not crash the loader); the frame is replaced
    by another of its video while one is usable."""
    index = read_index(
        make_index(tmp_path, n_real=2, n_fake=2, frames=2, size=32, splits=("train",))
    )
    video = index.videos[1]
    bad = video.landmarks[0]
    index.resolve(bad).write_bytes(content)
    ds = _ds(index, {"landmarks"}, frame_num=2)
    with caplog.at_level("WARNING"):
        batch = collate([ds[i] for i in range(len(ds))])
    assert f"{why} {bad}" in caplog.text and not batch["_skipped"]
    assert len(batch["_replaced"]) == 1
    index.resolve(video.landmarks[1]).write_bytes(content)  # no usable frame left
    batch = collate([ds[i] for i in range(len(ds))])
    assert len(batch["_skipped"]) == 2
    for reason in batch["_skipped"]:
        assert reason.startswith(f"tiny/{video.method}/{video.id}: no usable frame: ")
        assert f"{why} {bad}" in reason and f"{why} {video.landmarks[1]}" in reason
    np.save(index.resolve(video.landmarks[1]), np.zeros((5, 2)))
    skipped = collate([ds[i] for i in range(len(ds))])["_skipped"]
    assert f"landmarks file {video.landmarks[1]} holds shape (5, 2), not (68, 2)" in skipped[0]


def test_samplers_balance_and_shard() -> None:
    labels = np.array([0] * 90 + [1] * 10)
    counts = Counter(labels[TrainSampler(labels, mode="class_balanced", seed=1).epoch_indices()])
    assert 35 < counts[1] < 65  # about 1:1 instead of 9:1
    groups = np.array(["a"] * 80 + ["b"] * 20)
    g = Counter(groups[TrainSampler(labels, mode="group_balanced", groups=groups).epoch_indices()])
    assert 35 < g["b"] < 65
    s0 = TrainSampler(labels[:7], seed=3, num_replicas=2, rank=0)
    s1 = TrainSampler(labels[:7], seed=3, num_replicas=2, rank=1)
    assert len(s0) == len(s1) == 4
    assert sorted(set(s0.epoch_indices()) | set(s1.epoch_indices())) == list(range(7))
    single = TrainSampler(labels[:8], seed=3)
    e0 = single.epoch_indices()
    single.set_epoch(1)
    assert single.epoch_indices() != e0 and sorted(single.epoch_indices()) == list(range(8))
    single.set_start(5)
    assert list(single) == single.epoch_indices()[5:] and len(single) == 3
    assert list(ShardSampler(5, 2, 1)) == [1, 3]
    with pytest.raises(ValueError, match="group"):
        TrainSampler(labels, mode="group_balanced")
    with pytest.raises(ValueError, match="mode"):
        TrainSampler(labels, mode="random")


def test_selection_on_a_scripted_metric_sequence() -> None:
    sel = Selector("val", "auc", "frame", patience=2)
    val = [0.6, 0.8, 0.7, 0.9, 0.85, 0.84]
    test = [0.9, 0.7, 0.95, 0.6, 0.99, 0.5]  # test would pick other epochs
    best = [
        sel.update(s, s, {"val": {"v": {"frame/auc": a}}, "test": {"t": {"frame/auc": b}}})
        for s, (a, b) in enumerate(zip(val, test, strict=True))
    ]
    assert best == [True, True, False, True, False, False]
    assert sel.best_step == 3 and sel.should_stop
    top = Selector("test-top3", "auc", "frame")
    for s, (a, b) in enumerate(zip(val, test, strict=True)):
        top.update(s, s, {"val": {"v": {"frame/auc": a}}, "test": {"t": {"frame/auc": b}}})
    summary = top.summary()
    assert summary["best_step"] == 4
    assert summary["test_top3"]["t"]["best"] == 0.99
    assert summary["test_top3"]["t"]["top3_mean"] == pytest.approx((0.99 + 0.95 + 0.9) / 3)
    eer = Selector("val", "eer", "video")
    assert eer.update(0, 0, {"val": {"v": {"video/eer": 0.3}}})
    assert eer.update(1, 1, {"val": {"v": {"video/eer": 0.2}}})
    assert not eer.update(2, 2, {"val": {"v": {"video/eer": 0.25}}})
    with pytest.raises(ValueError, match="val"):
        Selector("val").update(0, 0, {"test": {"t": {"frame/auc": 0.5}}})


def test_selection_treats_nan_as_not_available() -> None:
    # a one-class dataset has NaN AUC (evaluation.metrics.summarize); before, the key was absent
    nan = float("nan")
    val = [0.6, 0.8, 0.7]
    for one_class in ({}, {"frame/auc": nan}):
        for mode, split in (("val", "val"), ("test-top3", "test")):
            sel = Selector(mode, "auc", "frame")
            best = [
                sel.update(s, s, {split: {"both": {"frame/auc": a}, "one": one_class}})
                for s, a in enumerate(val)
            ]
            assert best == [True, True, False] and sel.best_value == 0.8
            if mode == "test-top3":
                assert set(sel.summary()["test_top3"]) == {"both"}
        with pytest.raises(ValueError, match="both classes"):
            Selector("val").update(0, 0, {"val": {"one": one_class}})


def test_lr_schedules() -> None:
    from fairforensics.training.config import SchedulerConfig

    step = SchedulerConfig(name="step", step_size=2, gamma=0.1)
    assert [lr_factor(step, 1.0, s, 10, 100) for s in (0, 19, 20, 40)] == pytest.approx(
        [1, 1, 0.1, 0.01]
    )
    cos = SchedulerConfig(name="cosine", min_lr=0.1)
    assert lr_factor(cos, 1.0, 0, 10, 100) == pytest.approx(1.0)
    assert lr_factor(cos, 1.0, 50, 10, 100) == pytest.approx(0.55)
    assert lr_factor(cos, 1.0, 100, 10, 100) == pytest.approx(0.1)
    warm = SchedulerConfig(warmup_steps=4)
    assert [lr_factor(warm, 1.0, s, 10, 100) for s in range(5)] == pytest.approx(
        [0.25, 0.5, 0.75, 1, 1]
    )


def test_train_config_layers_and_errors(tmp_path: Path) -> None:
    cfg = load_train_config("meso4")
    assert isinstance(cfg, TrainConfig) and cfg.detector == "meso4"
    assert cfg.train.optimizer.name == "adam" and cfg.train.optimizer.lr == 2e-4
    assert cfg.train.optimizer.betas == (0.9, 0.999) and cfg.train.batch_size == 32
    assert cfg.train.augment.jpeg.quality == (40, 100) and cfg.train.augment.rotate.limit == 10
    f = tmp_path / "run.yaml"
    f.write_text("train:\n  batch_size: 8\n  optimizer: {lr: 0.001}\ndata:\n  train_data: [a]\n")
    cfg = load_train_config("meso4", f, overrides=["train.batch_size=4", "data.val_data=[b, c]"])
    assert cfg.train.batch_size == 4 and cfg.train.optimizer.lr == 1e-3
    assert cfg.data.train_data == ["a"] and cfg.data.val_data == ["b", "c"]
    with pytest.raises(ConfigError, match="train.optimiser"):
        load_train_config("meso4", overrides=["train.optimiser=adam"])
    with pytest.raises(ConfigError, match="adam, adamw|'adam'"):
        load_train_config("meso4", overrides=["train.optimizer.name=rmsprop"])
    with pytest.raises(ConfigError, match="group_key"):
        load_train_config("meso4", overrides=["train.sampler=group_balanced"])
    with pytest.raises(ConfigError, match="unknown detector"):
        load_train_config("nope")
    with pytest.raises(ConfigError, match="no detector"):
        load_train_config(None)


def test_packed_cache_gives_the_same_samples(index, tmp_path: Path) -> None:
    from fairforensics.training.cache import PackedCache

    ds = _ds(index, {"landmarks", "mask"}, resolution=24)
    plain = [ds[i] for i in range(len(ds))]
    ds.cache = PackedCache.build(ds, tmp_path, "train")
    assert len(list(tmp_path.glob("train-*.u8"))) == 1
    again = PackedCache.build(ds, tmp_path, "train")  # reuses the file
    assert again.path == ds.cache.path
    index.resolve(index.videos[0].frames[0]).rename(tmp_path / "moved.png")  # cache still serves it
    try:
        cached = [ds[i] for i in range(len(ds))]
    finally:
        (tmp_path / "moved.png").rename(index.resolve(index.videos[0].frames[0]))
    for a, b in zip(plain, cached, strict=True):
        for key in ("image", "landmarks", "mask"):
            torch.testing.assert_close(a[key], b[key])
    import pickle

    assert pickle.loads(pickle.dumps(ds.cache))._arr is None  # workers map the file themselves


@pytest.mark.parametrize(
    "path", sorted((Path(__file__).parents[1] / "configs" / "train").glob("*.yaml"))
)
def test_shipped_train_configs_load(path: Path) -> None:
    """Full configs name their data; overlays (no ``data`` section) load over ff_c23.yaml."""
    import yaml

    base = () if "data" in yaml.safe_load(path.read_text()) else (path.parent / "ff_c23.yaml",)
    cfg = load_train_config("meso4", *base, path)
    assert cfg.data.train_data


def test_persistent_workers_follow_the_epoch(index) -> None:
    from torch.utils.data import DataLoader

    ds = _ds(index, augment=build_augment(AugmentConfig(), 32), train=True)
    sampler = TrainSampler(ds.labels, seed=5, tag_epoch=True)
    loader = DataLoader(
        ds,
        batch_size=8,
        sampler=sampler,
        num_workers=2,
        collate_fn=collate,
        persistent_workers=True,
        timeout=120,
    )
    images = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        (batch,) = list(loader)
        expected = collate([ds[(epoch, i)] for i in sampler.epoch_indices()])
        assert torch.equal(batch["image"], expected["image"])
        images.append(batch["image"])
    assert not torch.equal(images[0], images[1])


def test_dataset_errors_name_the_problem(index, tmp_path: Path) -> None:
    from fairforensics.preprocessing.frames import TrainDataError

    with pytest.raises(TrainDataError, match="unknown batch keys \\['depth'\\]"):
        _ds(index, {"depth"})
    with pytest.raises(TrainDataError, match="one blend generator"):
        _ds(index, {"blend:sbi", "blend:fwa"}, train=True)
    bare = read_index(
        make_index(tmp_path, "bare", n_real=1, n_fake=1, frames=1, size=16, splits=("train",))
    )
    for v in bare.videos:
        v.landmarks = None
    with pytest.raises(
        TrainDataError, match="landmarks but 2 videos have none, e.g. bare:real/train000"
    ):
        _ds(bare, {"landmarks"})
    with pytest.raises(TrainDataError, match="split 'val' of dataset\\(s\\) bare has no videos"):
        _ds(bare, split="val")


def test_fancy_pca_is_krizhevskys_per_image_shift() -> None:
    from fairforensics.training.augment import FancyPCA

    img = face(3, 64)
    t = FancyPCA(alpha=0.1, p=1.0)
    for alpha in ([0.05, -0.1, 0.2], [3.0, -3.0, 3.0], [0.0, 0.0, 0.0]):
        a = np.array(alpha, np.float32)
        x = img.reshape(-1, 3) / 255.0
        vals, vecs = np.linalg.eigh(np.cov(x, rowvar=False))
        expected = np.clip(np.rint(img + 255 * (vecs @ (a * vals))), 0, 255).astype(np.uint8)
        np.testing.assert_array_equal(t.apply(img, a), expected)
    assert any(isinstance(tr, FancyPCA) for tr in build_augment(AugmentConfig(), 32)[5].transforms)


def test_blend_all_blends_fake_frames_too(index) -> None:
    """DeepfakeBench's FWA: every frame, real or fake, also gives a blend labelled 1."""
    reals_only = _ds(index, {"blend:fwa"}, train=True)
    every = _ds(index, {"blend:fwa", "blend_all"}, train=True)
    assert set(reals_only.labels) == {0}
    assert sorted(set(every.labels)) == [0, 1] and len(every) == 2 * len(reals_only)
    fake_item = int(np.flatnonzero(every.labels == 1)[0])
    group = every[fake_item]
    assert isinstance(group, list) and all(s["label"] == 1 for s in group)
