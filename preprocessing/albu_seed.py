"""Seeding an albumentations 2.x pipeline so that its transforms draw independently.

albumentations 2.x's ``Compose.set_random_seed(seed)`` (and ``Compose(..., seed=s)``) hands the
*same* seed to every transform, and each transform decides whether to apply with the first
number of its own generator: reseeded per sample, every transform of one probability fires
together or not at all (flip, rotation and blur of the training augmentation, p 0.5 each, were
all or none; of SBI's shared colour/JPEG transform no change at all for 47 % of the pairs instead
of 17 %). albumentations 1.x, which DeepfakeBench used, draws them independently from one global
generator. :func:`seed_pipeline` gives every transform, nested ones included, its own seed
derived from the sample's seed, which restores independent draws and keeps a sample's
augmentation a function of its seed alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def seed_pipeline(pipeline: Any, seed: int) -> None:
    """Seed ``pipeline`` (a ``Compose``/``OneOf``/... or a single transform) with ``seed`` and
    each transform in it with its own seed spawned from ``seed`` (independent draws)."""
    pipeline.set_random_seed(int(seed))
    _seed_children(pipeline, np.random.SeedSequence(int(seed) & 0xFFFFFFFF))


def _seed_children(node: Any, sequence: np.random.SeedSequence) -> None:
    children = getattr(node, "transforms", None)
    if not children:
        return
    for child, sub in zip(children, sequence.spawn(len(children)), strict=True):
        child.set_random_seed(int(sub.generate_state(1)[0]))  # a Compose passes it on ...
        _seed_children(child, sub)  # ... and its children then get their own
