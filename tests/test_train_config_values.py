"""Out-of-range training config values are one-line config errors naming file, key, allowed (#14)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fairforensics.configs import ConfigError
from fairforensics.training.config import load_train_config

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("override", "section", "key", "allowed"),
    [
        ("data.num_workers=-1", "data", "num_workers", "an integer >= 0"),
        ("train.optimizer.lr=-1e-4", "train.optimizer", "lr", "a number > 0"),
        ("train.optimizer.lr=0", "train.optimizer", "lr", "a number > 0"),
        ("train.optimizer.betas=[0.9, 1.0]", "train.optimizer", "betas", "in [0, 1)"),
        ("train.optimizer.weight_decay=-0.1", "train.optimizer", "weight_decay", ">= 0"),
        ("train.scheduler.step_size=0", "train.scheduler", "step_size", ">= 1"),
        ("train.scheduler.warmup_steps=-5", "train.scheduler", "warmup_steps", ">= 0"),
        ("train.augment.hflip.p=1.5", "train.augment.hflip", "p", "a probability in [0, 1]"),
        ("train.augment.jpeg.quality=[50, 120]", "train.augment.jpeg", "quality", "<= 100"),
        ("train.augment.blur.blur_limit=[4, 7]", "train.augment.blur", "blur_limit", "odd"),
        ("train.augment.color.brightness_limit=[0.2, -0.2]", "train.augment.color",
         "brightness_limit", "low <= high"),
        ("train.augment.color.kinds=[sepia]", "train.augment.color", "kinds", "fancy_pca"),
        ("train.augment.downscale.ratios=[0]", "train.augment.downscale", "ratios", ">= 1"),
        ("train.augment.sharpen.p=2", "train.augment.sharpen", "p", "a probability in [0, 1]"),
        ("train.fairswap.p3=-0.1", "train.fairswap", "p3", "a probability in [0, 1]"),
        ("train.fairswap.patch=0", "train.fairswap", "patch", ">= 1"),
        ("train.seed=-1", "train", "seed", "[0, 2**32)"),
        ("train.log_every_steps=0", "train", "log_every_steps", ">= 1"),
        ("train.eval_every_steps=-1", "train", "eval_every_steps", ">= 0"),
        ("train.eval_batch_size=0", "train", "eval_batch_size", "null or an integer >= 1"),
        ("train.grad_clip=0", "train", "grad_clip", "null or a number > 0"),
    ],
)  # fmt: skip
def test_out_of_range_values_name_the_key_and_the_allowed_values(override, section, key, allowed):
    with pytest.raises(ConfigError) as info:
        load_train_config("meso4", overrides=[override])
    message = str(info.value)
    assert message.startswith("--set: ") and "\n" not in message
    assert f"section '{section}': key '{key}' has value" in message
    assert "allowed values: " in message and allowed in message


def test_the_error_names_the_file(tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text("data:\n  num_workers: -2\n")
    with pytest.raises(
        ConfigError, match=r"train\.yaml( \+ --set)?: section 'data': key 'num_workers'"
    ):
        load_train_config("meso4", path)


def test_boundary_values_are_accepted():
    cfg = load_train_config(
        "meso4",
        overrides=["data.num_workers=0", "train.augment.hflip.p=0", "train.augment.rotate.p=1",
                   "train.grad_clip=null", "train.eval_every_steps=0", "train.seed=0"],
    )  # fmt: skip
    assert cfg.data.num_workers == 0 and cfg.train.augment.hflip.p == 0.0


@pytest.mark.slow
def test_train_cli_exits_2_with_one_line(tmp_path):
    cmd = [sys.executable, str(REPO / "scripts" / "train.py"), "--detector", "meso4",
           "--set", "data.num_workers=-1", "--output-dir", str(tmp_path)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "key 'num_workers' has value -1" in lines[0]
    assert not list(tmp_path.iterdir())  # no run directory was made
