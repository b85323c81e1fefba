"""Checks before any training step and while training (issue 14, item 3): bad data fails early
with an error naming examples, instead of a run that trains on replaced frames and exits 0.

Before training (:func:`check_splits`, called by the trainer's set-up): every split named by the
config has an index (the resolver already fails on a missing one), a sample of its frames is
readable (more than half of the sample unreadable means a wrong data root or a broken import),
and, with ``train.selection: val``, every validation set holds both classes (AUC/EER cannot be
computed on one class). While training (:func:`check_unreadable`): more than
``data.max_unreadable_fraction`` of an epoch's frames unreadable stops the run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from fairforensics.preprocessing.frames import FrameDataset, TrainDataError, read_rgb

#: Frames read per dataset and split before training.
SAMPLE_FRAMES = 16


def sample_frame_paths(ds: FrameDataset, n: int = SAMPLE_FRAMES, seed: int = 0) -> list[str]:
    """Up to ``n`` frame paths of ``ds``, one per randomly chosen video (fixed ``seed``)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(ds.videos))[:n]
    paths = []
    for i in order:
        index, video = ds.videos[int(i)]
        if video.frames:
            frame = video.frames[int(rng.integers(len(video.frames)))]
            paths.append(str(index.resolve(frame)))
    return paths


def check_readable(name: str, split: str, ds: FrameDataset, n: int = SAMPLE_FRAMES) -> None:
    """A :class:`TrainDataError` naming examples when most sampled frames cannot be read."""
    paths = sample_frame_paths(ds, n)
    bad = [p for p in paths if read_rgb(p) is None]
    if paths and len(bad) * 2 > len(paths):
        raise TrainDataError(
            f"{name} ({split}): {len(bad)} of {len(paths)} sampled frames are unreadable, e.g. "
            f"{bad[0]}; check data.data_root and the paths in the index (a DeepfakeBench import "
            "needs the right --data-root)"
        )


def check_two_classes(name: str, split: str, labels: np.ndarray) -> None:
    """A :class:`TrainDataError` when ``labels`` hold only one class."""
    present = sorted({int(v) for v in np.unique(labels)})
    if len(present) < 2:
        raise TrainDataError(
            f"{name} ({split}): only label {present} present, but train.selection 'val' needs "
            "real and fake samples to compute the selection metric; use a validation set with "
            "both classes or set train.selection: test-top3"
        )


def check_splits(
    train: tuple[str, FrameDataset],
    evaluation: dict[str, Sequence[tuple[str, FrameDataset]]],
    selection: str,
) -> None:
    """Every split before training: readable frames, and both classes where selection needs
    them (see the module docstring)."""
    check_readable(train[0], "train", train[1])
    for split, sets in evaluation.items():
        for name, ds in sets:
            check_readable(name, split, ds)
            if split == "val" and selection == "val":
                check_two_classes(name, split, ds.labels)


def check_unreadable(
    epoch: int, replaced: Iterable[str], frames_read: int, max_fraction: float
) -> None:
    """Stop the run when more than ``max_fraction`` of an epoch's ``frames_read`` frames were
    unreadable (and replaced), naming examples."""
    replaced = list(replaced)
    if frames_read > 0 and len(replaced) > max_fraction * frames_read:
        examples = ", ".join(sorted(set(replaced))[:3])
        raise TrainDataError(
            f"epoch {epoch}: {len(replaced)} of {frames_read} frames unreadable (more than "
            f"data.max_unreadable_fraction={max_fraction:g}), e.g. {examples}; fix the data or "
            "raise data.max_unreadable_fraction"
        )
