"""A video detector through the trainer: clips by ``input_kind``, AMP, resume, DDP, selection,
clip predictions aggregated to videos, and the test half (``predict_index``, ``predict_images``)."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from fairforensics.detectors import build_detector, read_checkpoint
from fairforensics.evaluation.predict import predict_images, predict_index
from fairforensics.evaluation.predictions import read_predictions
from fairforensics.evaluation.runs import load_run
from fairforensics.preprocessing.frames import TrainDataError
from fairforensics.preprocessing.index import read_index, write_index
from fairforensics.training.config import load_train_config
from fairforensics.training.trainer import Trainer
from tests.clip_detectors import TinyClip
from tests.test_train_run import _free_port
from tests.test_train_utils import face, make_index


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """6 frames per video recorded as two clips of 3 (as ``sampling.mode: clips`` writes)."""
    root = tmp_path_factory.mktemp("clips")
    index = read_index(make_index(root, "tiny", n_real=3, n_fake=3, frames=6, size=32))
    index = replace(index, videos=[replace(v, clips=[[0, 3], [3, 3]]) for v in index.videos])
    write_index(index, root / "tiny.json")
    return root


def _cfg(data_root: Path, out: Path, **sets: Any):
    base = {
        "data.data_root": str(data_root),
        "data.train_data": "[tiny]",
        "data.val_data": "[tiny]",
        "data.test_data": "[tiny]",
        "data.num_workers": 0,
        "train.epochs": 2,
        "train.batch_size": 4,
        "train.frame_num": 6,  # 2 clips of 3 per video
        "train.test_frame_num": 6,
        "train.log_every_steps": 1,
        "output_dir": str(out),
    }
    base.update(sets)
    return load_train_config("_tiny_clip", overrides=[f"{k}={v}" for k, v in base.items()])


class _KillAt:
    """A batch transform that checks the clip batches and dies at call ``n``."""

    def __init__(self, n: int | None) -> None:
        self.n, self.calls = n, 0

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        assert batch["image"].shape[1:] == (3, 3, 32, 32) and batch["image"].dtype == torch.uint8
        if self.n is not None and self.calls == self.n:
            raise KeyboardInterrupt("killed")
        return batch


def test_clip_run_scores_clips_and_videos(
    data_root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("INFO", logger="fairforensics.training.trainer"):
        run = Trainer(_cfg(data_root, tmp_path)).fit()
    assert "eval step 3: val clip AUC = " in caplog.text  # not frame/auc: the rows are clips
    m = json.loads(sorted((run / "metrics").glob("step*.json"))[-1].read_text())
    val = m["val"]["tiny"]
    assert val["n_frames"] == 12 and val["n_videos"] == 6  # 6 videos x 2 clips: one row per clip
    assert {"frame/auc", "video/auc"} <= set(val)
    saved = read_predictions(sorted((run / "predictions").glob("val_tiny_*.csv"))[-1])
    assert set(saved.unit) == {"clip"} and sorted(set(saved.frame)) == [0, 3]
    detector, resolved = load_run(run, "best")
    assert resolved["model"]["clip_size"] == 3 and isinstance(detector, TinyClip)
    again = predict_index(detector, data_root / "tiny.json", "val", frame_num=6, batch_size=5)
    assert len(again) == 12 and set(again.unit) == {"clip"}
    clips = [np.stack([face(i + k, 32) for k in range(3)]) for i in range(2)]
    scores = predict_images(detector, clips)
    assert scores.shape == (2,) and ((scores >= 0) & (scores <= 1)).all()
    with pytest.raises(ValueError, match="3xHxWx3 RGB clips"):
        predict_images(detector, [face(0, 32)])


def test_resume_and_bf16(data_root: Path, tmp_path: Path) -> None:
    sets = {"train.checkpoint_every_steps": 1, "train.save_predictions": "false"}
    full = Trainer(_cfg(data_root, tmp_path / "a", **sets), batch_transforms=[_KillAt(None)]).fit()
    with pytest.raises(KeyboardInterrupt):
        Trainer(_cfg(data_root, tmp_path / "b", **sets), batch_transforms=[_KillAt(5)]).fit()
    (killed,) = (tmp_path / "b").iterdir()
    resumed = Trainer.from_run(killed, batch_transforms=[_KillAt(None)]).fit()
    a = read_checkpoint(full / "checkpoints" / "last.pt")
    b = read_checkpoint(resumed / "checkpoints" / "last.pt")
    assert a["state"]["step"] == b["state"]["step"] == 6  # 12 clips / batch 4, 2 epochs
    for k, v in a["model"].items():
        torch.testing.assert_close(b["model"][k], v, rtol=1e-5, atol=1e-6, msg=k)
    bf16 = Trainer(_cfg(data_root, tmp_path / "c", **{"train.precision": "bf16"})).fit()
    summary = json.loads((bf16 / "metrics" / "summary.json").read_text())
    assert np.isfinite(summary["best_value"])


def test_short_videos_go_to_the_manifest(data_root: Path, tmp_path: Path) -> None:
    index = read_index(data_root / "tiny.json")
    short = {"train000", "val000"}  # runs of 2 frames: no clip of 3
    videos = [
        replace(v, clips=[[0, 2], [2, 2], [4, 2]]) if v.id in short else v for v in index.videos
    ]
    root = tmp_path / "data"
    root.mkdir()
    write_index(replace(index, videos=videos), root / "tiny.json")
    for item in data_root.iterdir():
        if item.is_dir():
            (root / item.name).symlink_to(item)
    run = Trainer(_cfg(root, tmp_path, **{"train.epochs": 1})).fit()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["short_videos"] == ["tiny:real/train000", "tiny:real/val000"]
    with pytest.raises(TrainDataError, match="no video has 4 consecutive frames"):
        Trainer(_cfg(data_root, tmp_path, **{"model.clip_size": 4})).fit()


def _ddp_worker(rank: int, world: int, port: int, data_root: str, out: str) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world),
        RANK=str(rank), LOCAL_RANK=str(rank),
    )  # fmt: skip
    torch.set_num_threads(1)
    Trainer(_cfg(Path(data_root), Path(out), **{"run_name": "ddp"})).fit()
    torch.distributed.destroy_process_group()


@pytest.mark.slow
def test_ddp_two_processes_match_one_process(data_root: Path, tmp_path: Path) -> None:
    single = Trainer(_cfg(data_root, tmp_path / "one")).fit()
    torch.multiprocessing.spawn(
        _ddp_worker, args=(2, _free_port(), str(data_root), str(tmp_path / "two")), nprocs=2
    )
    a = read_checkpoint(single / "checkpoints" / "last.pt")
    b = read_checkpoint(tmp_path / "two" / "ddp" / "checkpoints" / "last.pt")
    for k, v in a["model"].items():
        torch.testing.assert_close(b["model"][k], v, rtol=1e-5, atol=1e-6, msg=k)
    m2 = json.loads(
        sorted((tmp_path / "two" / "ddp" / "metrics").glob("step*.json"))[-1].read_text()
    )
    assert m2["val"]["tiny"]["n_frames"] == 12  # clips gathered from both ranks


def test_contract_batch_trains(tmp_path: Path) -> None:
    """The tiny video detector on tests/detector_batches.py's clip batch: the loss falls."""
    from tests.detector_batches import make_batch

    det = build_detector("_tiny_clip", {"input_size": 16})
    batch = make_batch(det, 16, batch_size=4)
    assert batch["image"].shape == (4, 3, 3, 16, 16)
    opt = torch.optim.Adam(det.parameters(), lr=0.05)
    losses = []
    for _ in range(10):
        loss = det.loss(batch, det(batch))["total"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
