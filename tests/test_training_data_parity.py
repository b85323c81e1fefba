"""Our training-data recipes against DeepfakeBench's datasets (issue 30, item 4).

The references in ``tests/data/training_data_parity/`` are summaries of N draws of DeepfakeBench's
own dataset code on the same real faces (how they were made: the README there). Each test draws
fewer samples of ours (a few seconds) and checks every statistic within 4 standard errors of
both sides' sampling error plus a small slack, except the differences documented in
docs/training.md (``benchmarks.training_data.KNOWN_DIFFERENCES``).
"""

from __future__ import annotations

from collections import Counter

import albumentations as A
import numpy as np
import pytest

from fairforensics.benchmarks import training_data as td
from fairforensics.preprocessing.frames import apply_augment
from tests.testdata import CELEBRITIES


@pytest.fixture(scope="module")
def faces() -> list:
    return td.parity_faces(CELEBRITIES)


def _failures(recipe: str, faces: list, n: int) -> list[str]:
    rows = td.compare_recipe(recipe, faces, n)
    assert rows and all(r["tol"] is not None for r in rows)
    return [
        f"{r['stat']}: dfb {r['dfb']} ours {r['ours']} tol {r['tol']}"
        for r in td.iter_failures(rows)
    ]


def test_reference_faces(faces) -> None:
    ref = td.load_reference("sbi")
    assert len(faces) == 26 and all(f[1].shape == (256, 256, 3) for f in faces)
    assert ref["faces"].startswith("benchmarks.training_data.parity_faces") and ref["draws"] >= 200


@pytest.mark.parametrize(("recipe", "n"), [("sbi", 60), ("i2g", 60)])
def test_recipe_matches_deepfakebench(recipe: str, n: int, faces) -> None:
    assert _failures(recipe, faces, n) == []


def test_augment_transforms_draw_independently() -> None:
    """Each transform of a seeded pipeline decides on its own: with three p=0.5 flips, all three
    fire together in about 1/8 of the samples (albumentations 2.x's own seeding: 1/2)."""
    pipeline = A.Compose(
        [A.HorizontalFlip(p=0.5), A.VerticalFlip(p=0.5), A.Transpose(p=0.5)], seed=0
    )
    image = np.arange(4 * 4 * 3, dtype=np.uint8).reshape(4, 4, 3)
    seen = Counter()
    for seed in range(400):
        out = apply_augment(pipeline, seed, image)[0]
        seen[out.tobytes()] += 1
    assert len(seen) == 8  # every combination of the three occurs
    assert max(seen.values()) / 400 < 0.2
