"""Thread counts (issue 46, item 7): the rule of :mod:`configs.threads`, and that training and
evaluation apply it in the main process and in every loader worker."""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from fairforensics.configs import ConfigError
from fairforensics.configs.threads import init_worker_threads, main_threads, user_threads
from fairforensics.evaluation.predict import make_eval_loader
from fairforensics.training.config import load_train_config
from fairforensics.training.trainer import Trainer
from tests.test_train_utils import make_index


@pytest.fixture
def restore_threads():
    torch_before, cv2_before = torch.get_num_threads(), cv2.getNumThreads()
    yield
    torch.set_num_threads(torch_before)
    cv2.setNumThreads(cv2_before)


def test_the_rule_leaves_a_core_per_worker_and_one_for_the_main_process() -> None:
    none: dict[str, str] = {}
    assert main_threads(0, cores=2, env=none) == 1  # the docs' 2-core machine, the demo
    assert main_threads(2, cores=2, env=none) == 1  # never below one
    assert main_threads(0, cores=16, env=none) == 15
    assert main_threads(4, cores=16, env=none) == 11


def test_the_users_setting_wins() -> None:
    assert main_threads(4, cores=16, env={"OMP_NUM_THREADS": "2"}) == 2
    assert main_threads(0, cores=2, env={"OMP_NUM_THREADS": "2", "FF_NUM_THREADS": "3"}) == 3
    assert user_threads({"OMP_NUM_THREADS": ""}) is None
    for bad in ("0", "two", "-1"):
        with pytest.raises(ConfigError, match="OMP_NUM_THREADS"):
            user_threads({"OMP_NUM_THREADS": bad})


class _Threads(Dataset):
    """Each item: the torch and OpenCV thread counts of the process that loads it."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"threads": torch.tensor([torch.get_num_threads(), cv2.getNumThreads()])}


def test_evaluation_sets_the_main_process_and_its_workers(monkeypatch, restore_threads) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("FF_NUM_THREADS", "3")
    torch.set_num_threads(1)
    cv2.setNumThreads(7)
    loader = make_eval_loader(_Threads(), batch_size=1, num_workers=1)
    assert (torch.get_num_threads(), cv2.getNumThreads()) == (3, 3)
    # the workers: one thread each, torch's and OpenCV's (OpenCV's default is every core)
    cv2.setNumThreads(5)  # inherited by the forked worker unless its init sets it
    workers = DataLoader(_Threads(), num_workers=1, worker_init_fn=loader.worker_init_fn)
    assert [batch["threads"].tolist() for batch in workers] == [[[1, 1]], [[1, 1]]]


def test_training_sets_the_threads_for_its_workers(
    tmp_path: Path, monkeypatch, restore_threads
) -> None:
    make_index(tmp_path / "data", "tiny", n_real=2, n_fake=2, frames=2, size=32)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("FF_NUM_THREADS", raising=False)
    monkeypatch.setattr("fairforensics.configs.threads.available_cores", lambda: 8)
    torch.set_num_threads(1)
    sets = {
        "data.data_root": str(tmp_path / "data"),
        "data.train_data": "[tiny]",
        "data.num_workers": 2,
        "train.epochs": 1,
        "train.batch_size": 2,
        "train.resolution": 32,
        "train.frame_num": 2,
        "output_dir": str(tmp_path / "runs"),
    }
    cfg = load_train_config("meso4", overrides=[f"{k}={v}" for k, v in sets.items()])
    trainer = Trainer(cfg)
    trainer.fit()
    assert torch.get_num_threads() == 5  # 8 cores - 2 workers - 1 for the main process
    assert trainer.loader.worker_init_fn is init_worker_threads
