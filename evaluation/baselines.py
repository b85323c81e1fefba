"""Sanity baselines: trivial predictors scored through the same evaluation as any detector
(issue 38, item 4), so that a table shows what a predictor that learnt nothing would get.

* ``constant``: one score (0.5) for every item: AUC 0.5 and zero fairness gaps at any
  threshold, the predictor that wins a fairness-only table (the NeurIPS 2025 fairness
  challenge's analysis; Lin et al.'s gaps at a fixed threshold);
* ``random``: a uniform score per item, seeded (AUC near 0.5, small gaps by chance);
* any predictions file of the same test items, named on the command line
  (``--baseline NAME=PREDICTIONS.csv``), e.g. ``metadata``: the out-of-fold scores of
  ``fairforensics audit``'s classifier of file metadata (container, codec, resolution, ...),
  which shows how far a shortcut alone gets. Its scores are per video (its mean per video):
  every frame of a video takes its video's score.

A baseline's rows are the test items of a detector's predictions file, so baselines and
detectors are scored on the same frames and videos (a paired comparison).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from fairforensics.evaluation.metrics import factorize, reduce_by_code
from fairforensics.evaluation.predictions import Predictions

log = logging.getLogger(__name__)

#: The baselines computed from the test items alone.
BUILT_IN = ("constant", "random")
CONSTANT_SCORE = 0.5


def parse_baselines(items: Sequence[str]) -> dict[str, Path]:
    """``["metadata=audit/predictions.csv", ...]`` -> ``{name: path}``; a bad item, a built-in
    name or a missing file is a ValueError that names it."""
    out: dict[str, Path] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ValueError(f"--baseline {item!r}: expected NAME=PREDICTIONS.csv")
        if name in BUILT_IN:
            raise ValueError(f"--baseline {name}: a built-in baseline's name; choose another")
        if not Path(path).is_file():
            raise ValueError(f"--baseline {name}: no such predictions file {path}")
        out[name] = Path(path)
    return out


def constant_scores(items: Predictions, value: float = CONSTANT_SCORE) -> Predictions:
    """``items`` with every score set to ``value``."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"a constant score must be in [0, 1], got {value}")
    return replace(items, score=np.full(len(items), float(value)))


def random_scores(items: Predictions, seed: int = 0) -> Predictions:
    """``items`` with uniform scores in [0, 1), from ``seed`` (the same seed, the same scores)."""
    return replace(items, score=np.random.default_rng(seed).random(len(items)))


def built_in(name: str, items: Predictions, seed: int = 0) -> Predictions:
    """The built-in baseline ``name`` (:data:`BUILT_IN`) on ``items``."""
    if name == "constant":
        return constant_scores(items)
    if name == "random":
        return random_scores(items, seed)
    raise ValueError(f"unknown baseline {name!r}; built in: {', '.join(BUILT_IN)}")


def video_scores_onto(items: Predictions, source: Predictions) -> Predictions | None:
    """``items`` scored with ``source``'s mean score of each video (matched by video key
    ``dataset/method/video_id``); None, logged, when ``source`` lacks some of the items'
    videos (a partial row would not be comparable). Labels must agree."""
    codes, keys = factorize(source.video_key)
    labels, scores = reduce_by_code(source.label, source.score, codes, "mean")
    index = {k: i for i, k in enumerate(keys)}
    wanted = items.video_key
    missing = sorted({k for k in wanted if k not in index})
    if missing:
        log.warning(
            "baseline: lacks %d of the test set's %d videos (e.g. %s); left out of this set",
            len(missing), len(set(wanted)), missing[0],
        )  # fmt: skip
        return None
    rows = np.array([index[k] for k in wanted])
    if (labels[rows] != items.label).any():
        raise ValueError("the baseline's labels disagree with the test set's on the same videos")
    return replace(items, score=np.asarray(scores, dtype=np.float64)[rows])
