"""The training dataset and sampler yield what they yielded before the index became arrays.

``tests/data/training_index_parity.json`` holds, for a small seeded synthetic index, every sample
the old per-frame-object code gave (sampler order for several modes, ranks and epochs; the
path read, label, ids, frame number, attributes, replaced frames and a hash of every tensor,
augmented with the default pipeline). It was written once by the old code with
``python -m tests.test_training_index_parity --write``; the tests compare the current code with it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import torch

import fairforensics.preprocessing.frames as frames_mod
from fairforensics.preprocessing.frames import FrameDataset
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, read_index, write_index
from fairforensics.training.augment import build_augment
from fairforensics.training.config import AugmentConfig
from fairforensics.training.samplers import TrainSampler

FIXTURE = Path(__file__).parent / "data" / "training_index_parity.json"
_LANDMARKS = np.stack(np.meshgrid(np.linspace(8, 40, 17), np.linspace(10, 38, 4)), -1)


def make_parity_index(root: Path) -> Path:
    """A seeded index of 14 videos (two methods, gender groups with a missing value, frame
    numbers on some, clips on some, one unreadable frame) with 48x48 frames."""
    rng = np.random.default_rng(47)
    videos = []
    genders = ["female", "male", "male", None]
    for v in range(14):
        label = int(v % 3 != 0)
        method = "real" if label == 0 else ("Alpha", "Beta")[v % 2]
        vid = f"{v:03d}" if label == 0 else f"{v:03d}_{(v + 5) % 14:03d}"
        rel = f"synth/{method}/{vid}"
        (root / rel).mkdir(parents=True, exist_ok=True)
        n = int(rng.integers(3, 9))
        fr, lm, mk = [], [], []
        for f in range(n):
            small = rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)
            img = cv2.resize(small, (48, 48), interpolation=cv2.INTER_CUBIC)
            if not (v == 4 and f == 1):  # frame 1 of video 4 stays unreadable
                cv2.imwrite(str(root / rel / f"{f:03d}.png"), img)
            mask = np.zeros((48, 48), np.uint8)
            mask[12 : 12 + 4 * (f + 1) % 30, 10:30] = 255
            cv2.imwrite(str(root / rel / f"m{f:03d}.png"), mask)
            points = _LANDMARKS.reshape(-1, 2)[:68] + rng.normal(0, 1, (68, 2))
            np.save(root / rel / f"l{f:03d}.npy", points.astype(np.float32))
            fr.append(f"{rel}/{f:03d}.png")
            lm.append(f"{rel}/l{f:03d}.npy")
            mk.append(f"{rel}/m{f:03d}.png")
        gender = genders[v % 4]
        videos.append(
            VideoEntry(
                id=vid,
                label=label,
                method=method,
                split="train",
                frames=fr,
                landmarks=lm,
                masks=mk,
                attributes={"gender": gender, "race": ("a", "b", "c")[v % 3]}
                if gender
                else {"race": "a"},
                identity=f"{v:03d}" if label == 0 else None,
                frame_indices=[3 * f + 1 for f in range(n)] if v % 2 else None,
                clips=[[0, n]] if v % 5 == 0 else None,
            )
        )
    path = root / "synth.json"
    write_index(DatasetIndex(dataset="synth", task="deepfake", videos=videos, root=root), path)
    return path


def _digest(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        arr = value.numpy()
        return f"{arr.dtype}{list(arr.shape)}:" + hashlib.sha1(arr.tobytes()).hexdigest()[:16]
    if isinstance(value, dict):
        return {k: _digest(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [_digest(v) for v in value]
    return value


def _cases(index: DatasetIndex) -> dict[str, tuple[FrameDataset, list[str]]]:
    aug = AugmentConfig()
    common = {"resolution": 32, "seed": 5, "train": True}
    return {
        "frames": (
            FrameDataset([index], "train", frame_num=4, augment=build_augment(aug, 32), **common),
            ["shuffle", "class_balanced", "group_balanced", "class_group_balanced"],
        ),
        "keys": (
            FrameDataset(
                [index],
                "train",
                frame_num=3,
                augment=build_augment(aug, 32, keypoints=True),
                requires=frozenset(
                    {"landmarks", "mask", "method_label", "identity", "pixel_map", "views"}
                ),
                **common,
            ),
            ["shuffle"],
        ),
        "clips": (
            FrameDataset(
                [index],
                "train",
                frame_num=4,
                clip_size=2,
                augment=build_augment(aug, 32),
                **common,
            ),
            ["shuffle"],
        ),
        "eval": (FrameDataset([index], "train", frame_num=100, resolution=32), ["shuffle"]),
    }


def record(root: Path) -> dict[str, Any]:
    """Sampler orders and samples of every case on the index under ``root``."""
    index = read_index(make_parity_index(root))
    read: list[str] = []
    original = frames_mod.read_rgb

    def logged(path: str) -> np.ndarray | None:
        read.append(Path(path).relative_to(root).as_posix())
        return original(path)

    frames_mod.read_rgb = logged
    out: dict[str, Any] = {}
    try:
        for name, (ds, modes) in _cases(index).items():
            case: dict[str, Any] = {"len": len(ds), "labels": ds.labels.tolist()}
            case["gender"] = ds.groups("gender").tolist()
            for mode in modes:
                for rank in (0, 1):
                    sampler = TrainSampler(
                        ds.labels,
                        mode=mode,
                        groups=ds.groups("gender"),
                        seed=3,
                        num_replicas=2,
                        rank=rank,
                        tag_epoch=True,
                    )
                    for epoch in (0, 1):
                        sampler.set_epoch(epoch)
                        sampler.set_start(epoch)
                        case[f"{mode}/{rank}/{epoch}"] = [list(k) for k in sampler]
                    if hasattr(ds, "group_codes"):  # the trainer's integer groups: same order
                        coded = TrainSampler(
                            ds.labels,
                            mode=mode,
                            groups=ds.group_codes("gender"),
                            seed=3,
                            num_replicas=2,
                            rank=rank,
                            tag_epoch=True,
                        )
                        coded.set_epoch(1)
                        coded.set_start(1)
                        assert [list(k) for k in coded] == case[f"{mode}/{rank}/1"]
            samples = []
            for key in case[f"{modes[0]}/0/1"] + [[0, i] for i in range(len(ds))]:
                read.clear()
                sample = ds[tuple(key)]
                samples.append({"key": key, "read": list(read), "sample": _digest(sample)})
            case["samples"] = samples
            out[name] = case
    finally:
        frames_mod.read_rgb = original
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return record(tmp_path_factory.mktemp("parity"))


@pytest.fixture(scope="module")
def stored() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", ["frames", "keys", "clips", "eval"])
def test_samples_and_orders_match_the_old_code(recorded, stored, case: str) -> None:
    got, want = recorded[case], stored[case]
    assert got.keys() == want.keys()
    for key in want:
        if key != "samples":
            assert got[key] == want[key], f"{case}: {key} differs"
    assert len(got["samples"]) == len(want["samples"])
    for g, w in zip(got["samples"], want["samples"], strict=True):
        assert g == w, f"{case}: sample {w['key']} differs"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        FIXTURE.write_text(json.dumps(record(Path(tmp)), indent=None, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}")
