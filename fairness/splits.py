"""Dataset-index transforms for fairness protocols: attribute subsets, derived attributes,
gender-balanced re-splitting (paper 000) and writing an index into another folder."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from fairforensics.preprocessing.index import (
    DatasetIndex,
    DatasetIndexError,
    VideoEntry,
    rebase_index,
    write_index,
)

log = logging.getLogger(__name__)

POSITIVE = ("yes", "true", "1", "y", "w")


def filter_train(
    index: DatasetIndex,
    attribute: str,
    values: Sequence[str] | None,
    splits: Sequence[str] = ("train", "val"),
) -> DatasetIndex:
    """Keep only videos whose ``attribute`` is in ``values`` in ``splits`` (others untouched).

    ``values=None`` keeps everything (the fused protocol). An empty train split is an error, an
    empty validation split a warning. Protocols 1.2/1.3 and 2.2/2.3 of
    paper 001 (Sec. III-C) train on one group and test on all.
    """
    if values is None:
        return replace(index, videos=list(index.videos))
    wanted = {str(v) for v in values}
    kept = [
        v for v in index.videos if v.split not in splits or v.attributes.get(attribute) in wanted
    ]
    for split in splits:
        if not any(v.split == split for v in kept) and any(v.split == split for v in index.videos):
            message = (
                f"{index.dataset}: no {split} video has {attribute} in {sorted(wanted)}; values present: "
                f"{sorted({v.attributes.get(attribute, '') for v in index.videos})}"
            )
            if split == "train":
                raise DatasetIndexError(message)
            log.warning("%s", message)
    return replace(index, videos=kept)


def derive_any(
    index: DatasetIndex,
    name: str,
    from_keys: Sequence[str],
    labels: tuple[str, str] = ("yes", "no"),
    positive: Sequence[str] = POSITIVE,
) -> DatasetIndex:
    """Add attribute ``name`` = ``labels[0]`` when any of ``from_keys`` is positive, else
    ``labels[1]``; unknown (empty) when none of ``from_keys`` is annotated.

    Paper 001 Sec. III-B: "occlusion" = beard, eyeglasses, bangs or a combination of them.
    """
    pos = {p.lower() for p in positive}
    videos = []
    for v in index.videos:
        present = [
            v.attributes[k].strip().lower() for k in from_keys if v.attributes.get(k, "").strip()
        ]
        attrs = dict(v.attributes)
        if present:
            attrs[name] = labels[0] if any(p in pos for p in present) else labels[1]
        videos.append(replace(v, attributes=attrs))
    return replace(index, videos=videos)


def _split_subjects(
    subjects: list[str], train_test: tuple[int, int], val_fraction: float, rng: np.random.Generator
) -> dict[str, str]:
    """Shuffle ``subjects`` and assign train / val / test in the ratio and fraction given."""
    subjects = [subjects[i] for i in rng.permutation(len(subjects))]
    n_train = round(len(subjects) * train_test[0] / sum(train_test))
    n_train = min(max(n_train, 1), len(subjects) - 1) if len(subjects) >= 2 else len(subjects)
    n_val = round(n_train * val_fraction)
    if val_fraction > 0 and n_val == 0 and n_train >= 2:
        n_val = 1
    return {
        s: "val" if k < n_val else "train" if k < n_train else "test"
        for k, s in enumerate(subjects)
    }


def gender_balanced_split(
    index: DatasetIndex,
    attribute: str = "gender",
    train_test: tuple[int, int] = (3, 2),
    val_fraction: float = 0.1,
    seed: int = 0,
) -> DatasetIndex:
    """Re-split an index as paper 000 does: train:test 3:2, 10 % of train as validation, and
    equal numbers of every ``attribute`` group "at each stage".

    1. videos without the attribute are dropped (logged);
    2. subjects (``identity``, or the video id when absent) are split per group into train and
       test in the ratio ``train_test``, and ``val_fraction`` of each group's train subjects
       become validation, so splits are subject-disjoint and every group is spread alike;
    3. within every split and every label (real, fake), each group is randomly down-sampled to
       the size of the smallest group, so train, validation and test each hold as many real
       videos of every group, and as many fake ones. A split/label cell that lacks a group is
       dropped with a warning.
    """
    if len(train_test) != 2 or min(train_test) < 1:
        raise ValueError(f"train_test must be two positive integers, got {train_test}")
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    rng = np.random.default_rng(seed)
    known = [v for v in index.videos if v.attributes.get(attribute, "").strip()]
    if len(known) < len(index.videos):
        log.warning(
            "%s: %d videos have no %r and are dropped",
            index.dataset,
            len(index.videos) - len(known),
            attribute,
        )
    groups = sorted({v.attributes[attribute] for v in known})
    if len(groups) < 2:
        raise DatasetIndexError(
            f"{index.dataset}: balancing by {attribute!r} needs two groups, found {groups}"
        )
    subject_group: dict[str, str] = {}
    for v in known:
        subject_group.setdefault(v.identity or v.id, v.attributes[attribute])
    split_of: dict[str, str] = {}
    for g in groups:
        subjects = sorted(s for s, sg in subject_group.items() if sg == g)
        split_of.update(_split_subjects(subjects, train_test, val_fraction, rng))
    kept: list[VideoEntry] = []
    for split in ("train", "val", "test"):
        for label in (0, 1):
            cells = {
                g: [
                    v
                    for v in known
                    if v.label == label
                    and v.attributes[attribute] == g
                    and split_of[v.identity or v.id] == split
                ]
                for g in groups
            }
            size = min(len(c) for c in cells.values())
            if size == 0 and any(cells.values()):
                log.warning(
                    "%s: %s split, label %d has no video of some %r group; the cell is dropped",
                    index.dataset,
                    split,
                    label,
                    attribute,
                )
            for g in groups:
                pick = rng.permutation(len(cells[g]))[:size]
                kept.extend(replace(cells[g][i], split=split) for i in sorted(pick))
    if not any(v.split == "train" for v in kept) or not any(v.split == "test" for v in kept):
        raise DatasetIndexError(
            f"{index.dataset}: no balanced train or test videos left after splitting by "
            f"{attribute!r} (each split needs every group)"
        )
    info = dict(index.split_info)
    info.update(
        {
            s: f"{attribute}-balanced {train_test[0]}:{train_test[1]}, val {val_fraction:g} (seed {seed})"
            for s in ("train", "val", "test")
        }
    )
    return replace(index, videos=kept, split_info=info)


def save_index(index: DatasetIndex, path: str | Path, dataset: str | None = None) -> DatasetIndex:
    """Write ``index`` (renamed to ``dataset`` when given) at ``path``, rebasing its paths."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    moved = rebase_index(index, path.parent)
    if dataset:
        moved = replace(moved, dataset=dataset)
    write_index(moved, path)
    return moved
