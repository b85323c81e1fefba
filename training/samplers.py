"""Training samplers: shuffle, class-, group- and class x group-balanced oversampling, DDP-aware.

One sampler does what ``DistributedSampler`` does (a per-epoch order seeded by ``seed`` and
``set_epoch``, padded to a multiple of the world size and split by rank) and adds oversampling
and an exact mid-epoch restart (``set_start``) for resume. Balanced modes draw ``len(dataset)``
indices with replacement, each with weight ``1 / size of its class (or group)``, so classes or
groups are about equally frequent (PAD: about 1:1 bona fide : attack, paper 001 Sec. IV-C).
``class_group_balanced`` weighs each sample by ``1 / size of its (label, group) cell``, so every
cell present is drawn about equally often: bona fide : attack about 1:1 and, within each class,
the groups about 1:1 (paper 001's fused training: "the ratio of male and female samples in the
fused training data is close to 1:1, achieved by data oversampling", Sec. VI-A with IV-C).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import Sampler


def balance_weights(keys: Sequence) -> torch.Tensor:
    """Per-sample weight ``1 / count(key)`` (every key value gets the same total weight)."""
    codes = _codes(keys)
    return torch.as_tensor(1.0 / np.bincount(codes)[codes], dtype=torch.float64)


def _codes(keys: Sequence) -> np.ndarray:
    """Non-negative integer codes that are equal where ``keys`` are (integers compared as
    numbers, anything else as its string)."""
    arr = np.asarray(keys)
    if arr.dtype.kind in "iub":
        if arr.size and 0 <= arr.min() and arr.max() < 1 << 20:
            return arr.reshape(-1).astype(np.int64, copy=False)  # gaps only add empty counts
        return np.unique(arr, return_inverse=True)[1].reshape(-1)
    return np.unique(arr.astype(str), return_inverse=True)[1].reshape(-1)


SAMPLER_MODES = ("shuffle", "class_balanced", "group_balanced", "class_group_balanced")


class TrainSampler(Sampler[int]):
    """Indices of one epoch for one rank; ``mode`` is one of :data:`SAMPLER_MODES`.

    With ``tag_epoch`` it yields ``(epoch, index)`` pairs, which :class:`preprocessing.frames.FrameDataset`
    accepts, so the augmentation seeds follow the epoch even in persistent workers.
    """

    def __init__(
        self,
        labels: Sequence[int],
        *,
        mode: str = "shuffle",
        groups: Sequence[str] | np.ndarray | None = None,
        seed: int = 0,
        num_replicas: int = 1,
        rank: int = 0,
        tag_epoch: bool = False,
    ) -> None:
        if mode not in SAMPLER_MODES:
            raise ValueError(
                f"sampler mode must be one of {', '.join(SAMPLER_MODES)}, got {mode!r}"
            )
        if mode in ("group_balanced", "class_group_balanced") and groups is None:
            raise ValueError(f"{mode} sampling needs the group of every sample")
        if groups is not None and len(groups) != len(labels):
            raise ValueError(f"{len(groups)} groups for {len(labels)} samples")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank {rank} is not in [0, {num_replicas})")
        self.n = len(labels)
        if self.n == 0:
            raise ValueError("cannot sample from an empty dataset")
        self.mode = mode
        self.weights = None
        if mode == "class_balanced":
            self.weights = balance_weights(labels)
        elif mode == "group_balanced":
            self.weights = balance_weights(groups)  # type: ignore[arg-type]
        elif mode == "class_group_balanced":
            groups_ = _codes(groups)  # type: ignore[arg-type]
            self.weights = balance_weights(_codes(labels) * (int(groups_.max()) + 1) + groups_)
        self.seed = seed
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.start = 0
        self.per_rank = math.ceil(self.n / num_replicas)
        self.tag_epoch = tag_epoch

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch (a new order each epoch); also resets the start position."""
        self.epoch = epoch
        self.start = 0

    def set_start(self, start: int) -> None:
        """Skip the first ``start`` indices of this rank's epoch (mid-epoch resume)."""
        self.start = start

    def epoch_indices(self) -> list[int]:
        """The whole order of this epoch for this rank, before ``start`` is applied."""
        return self.epoch_order().tolist()

    def epoch_order(self) -> np.ndarray:
        """:meth:`epoch_indices` as an int64 array (no Python object per sample)."""
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        if self.weights is None:
            order = torch.randperm(self.n, generator=g)
        else:
            order = torch.multinomial(self.weights, self.n, replacement=True, generator=g)
        total = self.per_rank * self.num_replicas
        if total > self.n:  # pad by repeating the start, as DistributedSampler does
            order = torch.cat([order, order[: total - self.n]])
        return order[self.rank : total : self.num_replicas].numpy()

    def __iter__(self) -> Iterator[int] | Iterator[tuple[int, int]]:
        order = self.epoch_order()[self.start :]
        if self.tag_epoch:
            epoch = self.epoch
            return ((epoch, i) for i in map(int, order))
        return map(int, order)

    def __len__(self) -> int:
        return self.per_rank - self.start


class ShardSampler(Sampler[int]):
    """Evaluation: this rank's share ``rank::world`` of the samples, in order, no padding."""

    def __init__(self, n: int, num_replicas: int = 1, rank: int = 0) -> None:
        self.indices = list(range(rank, n, num_replicas))

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)
