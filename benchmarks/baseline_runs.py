"""Evaluation folders of the sanity baselines (:mod:`evaluation.baselines`) beside a sweep's
detectors, so that the leaderboards show them as rows scored through the same evaluation.

The test items come from the first evaluation folder that holds each test set; each baseline's
folder ``<out>/<name>/eval`` says ``"baseline": true`` in its ``eval.json`` (the leaderboard's
mark). The folders are rewritten on every call (seconds), so a resumed sweep gets them too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from fairforensics.evaluation.baselines import BUILT_IN, built_in, video_scores_onto
from fairforensics.evaluation.predictions import (
    Predictions,
    PredictionsError,
    read_predictions,
    write_predictions,
)
from fairforensics.evaluation.results import evaluate_prediction_files, slug
from fairforensics.evaluation.settings import TestConfig

log = logging.getLogger(__name__)


def reference_items(eval_dirs: Sequence[Path]) -> tuple[dict[str, Predictions], str]:
    """``{test set: predictions}`` of the first folder holding each set, and its training data."""
    items: dict[str, Predictions] = {}
    train_data = ""
    for d in eval_dirs:
        info = json.loads((d / "eval.json").read_text(encoding="utf-8"))
        train_data = train_data or info.get("train_data", "")
        for name in info.get("test_data", []):
            path = d / "predictions" / f"{slug(name)}.csv"
            if name not in items and path.is_file():
                items[name] = read_predictions(path)
    return items, train_data


def write_baselines(
    eval_dirs: Sequence[Path],
    out: Path,
    cfg: TestConfig,
    *,
    extra: Mapping[str, Path] | None = None,
    seed: int = 0,
) -> list[Path]:
    """The evaluation folders of ``constant``, ``random`` (``seed``) and each ``extra``
    predictions file on the test items of ``eval_dirs``; returns the folders."""
    items, train_data = reference_items(eval_dirs)
    if not items:
        raise ValueError("no test predictions to put baselines beside")
    sources: dict[str, Predictions | None] = dict.fromkeys(BUILT_IN)
    for name, path in (extra or {}).items():
        try:
            sources[name] = read_predictions(path)
        except PredictionsError as exc:
            raise ValueError(f"--baseline {name}: {path}: {exc}") from None
    folders = []
    quiet = replace(cfg, n_boot=0, plots=False, report=False)
    for name, source in sources.items():
        folder = out / name / "eval"
        files = {}
        for test_set, pred in items.items():
            scored = (
                built_in(name, pred, seed) if source is None else video_scores_onto(pred, source)
            )
            if scored is None:
                log.warning("baseline %s: no scores for %s", name, test_set)
                continue
            files[test_set] = folder / "predictions" / f"{slug(test_set)}.csv"
            files[test_set].parent.mkdir(parents=True, exist_ok=True)
            write_predictions(files[test_set], scored)
        if not files:
            log.warning("baseline %s: covers none of the test sets; no row", name)
            continue
        meta = {"baseline": True, "source": str(extra[name]) if source is not None else "built in"}
        evaluate_prediction_files(files, folder, quiet, name, train_data, meta=meta)
        folders.append(folder)
    return folders
