"""The class x group oversampler of fused PAD training (paper 001 Sec. IV-C, VI-A)."""

from collections import Counter

import numpy as np
import pytest

from fairforensics.configs import ConfigError
from fairforensics.training.config import load_train_config
from fairforensics.training.samplers import TrainSampler


def test_class_group_balanced_draws_every_cell_about_equally() -> None:
    # CAAD-PAD-like skew: 1:1.9 bona fide : attack and 1:2.1 female : male, cells 10/40/40/110
    labels = np.array([0] * 10 + [0] * 40 + [1] * 40 + [1] * 110)
    groups = np.array(["female"] * 10 + ["male"] * 40 + ["female"] * 40 + ["male"] * 110)
    sampler = TrainSampler(labels, mode="class_group_balanced", groups=groups, seed=2)
    drawn = []
    for epoch in range(40):
        sampler.set_epoch(epoch)
        drawn.extend(sampler.epoch_indices())
    big = np.asarray(drawn)
    cells = Counter(zip(labels[big].tolist(), groups[big].tolist(), strict=True))
    shares = np.array([cells[c] for c in sorted(cells)]) / len(big)
    assert len(cells) == 4
    np.testing.assert_allclose(shares, 0.25, atol=0.02)
    # class balance alone keeps the 1:2.1 gender skew; the cell sampler removes it
    plain = np.asarray(TrainSampler(labels, mode="class_balanced", seed=2).epoch_indices())
    assert (groups[plain] == "female").mean() < 0.4


def test_class_group_balanced_errors() -> None:
    labels = [0, 1, 0, 1]
    with pytest.raises(ValueError, match="class_group_balanced sampling needs the group"):
        TrainSampler(labels, mode="class_group_balanced")
    with pytest.raises(ValueError, match="3 groups for 4 samples"):
        TrainSampler(labels, mode="class_group_balanced", groups=["a", "b", "a"])
    with pytest.raises(ConfigError, match="group_key"):
        load_train_config("meso4", overrides=["train.sampler=class_group_balanced"])
