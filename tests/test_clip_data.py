"""Clips for video detectors: where they lie (recorded runs, DeepfakeBench v2's rule), one
augmentation per clip, [B, T, 3, H, W] batches, short videos, non-consecutive frames."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from fairforensics.preprocessing.clips import ClipWindow, clip_windows, has_gaps, video_runs
from fairforensics.preprocessing.frames import (
    FrameDataset,
    TrainDataError,
    apply_augment,
    apply_augment_clip,
    collate,
    sample_seed,
)
from fairforensics.preprocessing.index import DatasetIndex, read_index
from fairforensics.preprocessing.resolve import resolve_index
from fairforensics.training.augment import build_augment
from fairforensics.training.config import AugmentConfig
from tests.test_train_utils import face, make_index


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> DatasetIndex:
    root = tmp_path_factory.mktemp("clipdata")
    return read_index(make_index(root, n_real=2, n_fake=2, frames=8, size=32))


def _clipped(index: DatasetIndex, clips: list[list[int]]) -> DatasetIndex:
    """The index as ``sampling.mode: clips`` would record it: the same runs for every video."""
    return replace(index, videos=[replace(v, clips=clips) for v in index.videos])


def _ds(index: DatasetIndex, clip: int = 4, frame_num: int = 8, **kw) -> FrameDataset:
    return FrameDataset([index], "train", frame_num=frame_num, resolution=32, clip_size=clip, **kw)


def test_deepfakebench_rule_on_a_frame_list() -> None:
    # 32 frames, clips of 8: 4 clips; test starts at i * step, training anywhere in its part
    w = clip_windows([(0, 32)], 8, 4)
    assert [x.start for x in w] == [0, 8, 16, 24] and [x.span for x in w] == [8, 8, 8, 1]
    one = clip_windows([(0, 32)], 8, 1)
    assert one == [ClipWindow(0, 25, (0, 32))]  # one clip: at the start, anywhere in training
    assert [x.start for x in clip_windows([(0, 30)], 8, 3)] == [0, 11, 22]
    assert len(clip_windows([(0, 30)], 8, 9)) == 3  # at most length // clip_size clips
    assert clip_windows([(0, 7)], 8, 2) == []


def test_recorded_runs_hold_the_clips() -> None:
    runs = [(0, 16), (16, 16), (32, 16), (48, 16)]
    assert [w.start for w in clip_windows(runs, 16, 2)] == [0, 48]  # evenly spaced runs
    assert [(w.start, w.span) for w in clip_windows(runs, 8, 4)] == [
        (0, 9), (16, 9), (32, 9), (48, 9)
    ]  # fmt: skip
    # more clips than runs: shared out, each run cut by the rule
    assert [w.start for w in clip_windows(runs[:2], 8, 4)] == [0, 8, 16, 24]
    assert [w.start for w in clip_windows([(0, 16), (16, 4)], 8, 4)] == [0, 8]  # short run
    with pytest.raises(ValueError, match=">= 1"):
        clip_windows(runs, 0, 2)


def test_clip_samples_batches_and_epochs(index) -> None:
    ds = _ds(index, clip=4, frame_num=8, train=True)
    assert len(ds) == 8  # 4 train videos x 2 clips
    batch = collate([ds[i] for i in range(4)])
    assert batch["image"].shape == (4, 4, 3, 32, 32) and batch["image"].dtype == torch.uint8
    # a clip is 4 consecutive stored frames, the same frames as read one by one
    frames = FrameDataset([index], "train", frame_num=8, resolution=32)
    first = ds[0]
    for k in range(4):
        np.testing.assert_array_equal(first["image"][k], frames[first["frame"] + k]["image"])
    # training draws a start per epoch inside the clip's part, the same again on resume
    starts = {e: [ds[(e, i)]["frame"] for i in range(len(ds))] for e in range(6)}
    assert starts[0] == [ds[(0, i)]["frame"] for i in range(len(ds))]
    assert len({tuple(v) for v in starts.values()}) > 1
    assert all(0 <= f <= 4 for v in starts.values() for f in v)
    test = FrameDataset([index], "test", frame_num=8, resolution=32, clip_size=4)
    assert [test[i]["frame"] for i in range(2)] == [0, 4]  # evaluation: the rule's fixed starts
    one = FrameDataset([index], "test", frame_num=8, resolution=32, clip_size=1)
    assert one[0]["image"].shape == (1, 3, 32, 32)  # a clip of one frame keeps its T axis


def test_recorded_clips_are_never_crossed(index) -> None:
    clipped = _clipped(index, [[0, 4], [4, 4]])
    ds = _ds(clipped, clip=3, frame_num=6, train=True)
    assert {(it.pos, it.span, it.run) for it in ds.items} == {(0, 2, (0, 4)), (4, 2, (4, 4))}
    assert ds.frame_keys()[:4] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert all(ds[(e, i)]["frame"] in (0, 1, 4, 5) for e in range(4) for i in range(len(ds)))


def test_one_augmentation_for_the_whole_clip(index) -> None:
    cfg = AugmentConfig()
    for name in ("hflip", "rotate", "blur", "color", "jpeg"):
        getattr(cfg, name).p = 1.0
    pipe = build_augment(cfg, 32, keypoints=True)
    img = face(3, 32)
    lm = np.random.default_rng(0).uniform(4, 28, (68, 2)).astype(np.float32)
    for seed in range(8):
        out = apply_augment_clip(
            pipe, seed, [(img, lm, None), (img, lm, None), (face(4, 32), lm, None)]
        )
        np.testing.assert_array_equal(out[0][0], out[1][0])  # identical frames stay identical
        np.testing.assert_allclose(out[0][1], out[2][1])  # one geometric transform for all
        np.testing.assert_array_equal(out[2][0], apply_augment(pipe, seed, face(4, 32), lm)[0])
    ds = _ds(index, augment=build_augment(cfg, 32))  # fixed starts: compare with raw clips
    raw = _ds(index)[0]["image"]
    sample = ds[0]["image"]
    seed = sample_seed(sample_seed(ds.seed, ds.epoch, 0), 0)
    frames = [(raw[k].permute(1, 2, 0).numpy(), None, None) for k in range(4)]
    expected = apply_augment_clip(build_augment(cfg, 32), seed, frames)
    for k in range(4):
        np.testing.assert_array_equal(sample[k].permute(1, 2, 0).numpy(), expected[k][0])


def test_clip_keys_have_a_time_axis(index) -> None:
    ds = _ds(
        index, requires={"landmarks", "mask"}, augment=build_augment(AugmentConfig(), 32, True)
    )
    batch = collate([ds[i] for i in range(len(ds))])
    assert batch["landmarks"].shape == (8, 4, 68, 2)
    assert batch["mask"].shape == (8, 4, 1, 32, 32)
    with pytest.raises(TrainDataError, match="single frames"):
        _ds(index, requires={"blend:sbi"}, train=True)


def test_short_videos_are_left_out_and_named(index, caplog) -> None:
    with caplog.at_level(logging.WARNING):
        ds = _ds(_clipped(index, [[0, 2], [2, 6]]), clip=4)
    assert len(ds) == 4 and not ds.short_videos  # the 6-frame run holds the clips
    short = replace(
        index, videos=[replace(v, frames=v.frames[:2]) for v in index.videos[:2]] + index.videos[2:]
    )
    with caplog.at_level(logging.WARNING):
        ds = _ds(short, clip=4)
    assert ds.short_videos == ["tiny:real/train000", "tiny:real/train001"]
    assert "no run of 4 consecutive frames" in caplog.text
    with pytest.raises(TrainDataError, match="consecutive frames for one clip"):
        _ds(index, clip=9)


def test_spread_frames_are_flagged(index, caplog) -> None:
    spread = replace(
        index, videos=[replace(v, frame_indices=list(range(0, 80, 10))) for v in index.videos]
    )
    assert has_gaps(spread.videos[0]) and not has_gaps(index.videos[0])
    with caplog.at_level(logging.WARNING):
        _ds(spread)
    assert "not consecutive in the source video" in caplog.text
    assert "sampling.mode: clips" in caplog.text
    recorded = _clipped(spread, [[0, 4], [4, 4]])
    assert video_runs(recorded.videos[0]) == [(0, 4), (4, 4)]


def test_deepfakebench_json_trains_by_its_rule(tmp_path: Path) -> None:
    frames = {}
    for vid, name in (("000", "FF-real"), ("000_003", "FF-DF")):
        paths = [f"FF/{name}/{vid}/frames/{i:03d}.png" for i in range(8)]
        for k, rel in enumerate(paths):
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(tmp_path / rel), cv2.cvtColor(face(k, 32), cv2.COLOR_RGB2BGR))
        frames[vid] = (name, paths[::-1])  # listed backwards: sorted by frame number on import
    dfb = {
        "FF-c23": {
            name: {"test": {"c23": {vid: {"label": name, "frames": paths}}}}
            for vid, (name, paths) in frames.items()
        }
    }
    (tmp_path / "FF-c23.json").write_text(json.dumps(dfb))
    index = resolve_index("FF-c23", tmp_path)
    assert index.videos[0].frames[0].endswith("000.png")
    ds = FrameDataset([index], "test", frame_num=8, resolution=32, clip_size=4)
    assert [(ds.items[i].pos, ds.items[i].span) for i in range(2)] == [(0, 1), (4, 1)]
    np.testing.assert_array_equal(ds[1]["image"][0].permute(1, 2, 0).numpy(), face(4, 32))


def test_packed_cache_holds_every_frame_a_training_clip_can_start_on(index, tmp_path) -> None:
    from fairforensics.training.cache import PackedCache

    ds = _ds(index, clip=3, frame_num=6, train=True)
    plain = [ds[(e, i)]["image"] for e in range(3) for i in range(len(ds))]
    ds.cache = PackedCache.build(ds, tmp_path, "train")
    assert len(ds.cache.slot) == 4 * 8  # spans cover every stored frame here
    cached = [ds[(e, i)]["image"] for e in range(3) for i in range(len(ds))]
    for a, b in zip(plain, cached, strict=True):
        torch.testing.assert_close(a, b)
