"""Training fails early and clearly on bad data (issue 14, item 3): unreadable frames found
before the first step, a one-class validation set with selection ``val``, and a run in which more
than ``data.max_unreadable_fraction`` of an epoch's frames are unreadable."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fairforensics.preprocessing.frames import TrainDataError
from fairforensics.preprocessing.index import read_index, write_index
from fairforensics.training import Trainer
from fairforensics.training.config import load_train_config
from fairforensics.training.preflight import check_two_classes, check_unreadable
from tests.test_train_utils import make_index


def _cfg(root: Path, out: Path, val: str = "tiny", **sets: object):
    base = {
        "data.data_root": str(root),
        "data.train_data": "[tiny]",
        "data.val_data": f"[{val}]",
        "data.num_workers": 0,
        "train.epochs": 1,
        "train.batch_size": 4,
        "train.resolution": 32,
        "train.frame_num": 2,
        "train.test_frame_num": 2,
        "output_dir": str(out),
        "run_name": "r",
    }
    base.update(sets)
    return load_train_config("meso4", overrides=[f"{k}={v}" for k, v in base.items()])


@pytest.fixture
def root(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    make_index(data, "tiny", n_real=3, n_fake=3, frames=2, size=32)
    return data


def _frames(root: Path, split: str) -> list[Path]:
    index = read_index(root / "tiny.json")
    return [index.resolve(f) for v in index.split(split) for f in v.frames]


def test_unreadable_data_fails_before_training(root: Path, tmp_path: Path) -> None:
    for path in _frames(root, "train"):
        path.unlink()  # e.g. a DeepfakeBench import with a wrong --data-root
    with pytest.raises(
        TrainDataError, match=r"tiny \(train\): \d+ of \d+ sampled frames are unreadable, e\.g\. "
    ):
        Trainer(_cfg(root, tmp_path / "runs")).fit()
    assert not (tmp_path / "runs" / "r" / "checkpoints" / "last.pt").exists()


def test_one_class_validation_fails_before_epoch_one(root: Path, tmp_path: Path) -> None:
    index = read_index(root / "tiny.json")
    index.videos = [v for v in index.videos if v.split != "val" or v.label == 0]
    index.dataset = "realval"
    write_index(index, root / "realval.json")
    with pytest.raises(TrainDataError, match=r"realval \(val\): only label \[0\]"):
        Trainer(_cfg(root, tmp_path / "runs", val="realval")).fit()
    assert not (tmp_path / "runs" / "r" / "checkpoints" / "last.pt").exists()
    # test-top3 selects on test sets: a one-class validation set is then allowed
    cfg = _cfg(root, tmp_path / "runs2", val="realval", **{"train.selection": "test-top3"})
    cfg.data.test_data = ["tiny"]
    assert Trainer(cfg).fit().is_dir()


def test_too_many_unreadable_frames_stop_the_run(root: Path, tmp_path: Path) -> None:
    _frames(root, "train")[0].unlink()  # 1 of 12 frames: sampled checks may pass, epochs not
    with pytest.raises(TrainDataError, match="max_unreadable_fraction=0.01"):
        Trainer(_cfg(root, tmp_path / "runs")).fit()
    manifest = json.loads((tmp_path / "runs" / "r" / "manifest.json").read_text())
    assert manifest["replaced_frames"]  # the examples are recorded too
    cfg = _cfg(root, tmp_path / "ok", **{"data.max_unreadable_fraction": 0.5})
    assert (Trainer(cfg).fit() / "checkpoints" / "last.pt").is_file()


def test_unit_checks() -> None:
    check_two_classes("a", "val", np.array([0, 1, 1]))
    with pytest.raises(TrainDataError, match=r"only label \[1\]"):
        check_two_classes("a", "val", np.array([1, 1]))
    check_unreadable(0, ["x"] * 10, 1000, 0.01)  # exactly 1 %: allowed
    with pytest.raises(TrainDataError, match="11 of 1000 frames unreadable.*e.g. x"):
        check_unreadable(0, ["x"] * 11, 1000, 0.01)
    check_unreadable(0, [], 0, 0.0)
    with pytest.raises(ValueError, match="max_unreadable_fraction"):
        load_train_config("meso4", overrides=["data.max_unreadable_fraction=2"])
