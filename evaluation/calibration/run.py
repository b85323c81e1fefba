"""Calibration from predictions files: fit one on a validation file (``fairforensics
calibrate``), and the calibration rows of a test set at frame and video level."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from fairforensics.evaluation.calibration.fitting import Calibration, fit_calibration
from fairforensics.evaluation.calibration.metrics import brier, calibration_summaries, ece, nll
from fairforensics.evaluation.metrics import reduce_by_code
from fairforensics.evaluation.predictions import Predictions, read_predictions
from fairforensics.evaluation.provenance import file_sha256, provenance_path

LEVELS = ("frame", "video")


def level_codes(preds: Predictions, level: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels, P(fake) and video codes at ``level``: every row, or one row a video (the mean of
    its rows, as ``test`` reduces a video); a code is the video's rank among the sorted video
    keys (:meth:`Predictions.video_codes`), so codes order videos as their keys do."""
    if level not in LEVELS:
        raise ValueError(f"level={level!r}: expected one of {', '.join(LEVELS)}")
    codes, keys = preds.video_codes()
    if level == "frame":
        return preds.label, preds.score, codes
    labels, scores = reduce_by_code(preds.label, preds.score, codes)
    return labels, scores, np.arange(len(keys))


def level_scores(preds: Predictions, level: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`level_codes` with the video keys (``dataset/method/id``) in place of the codes."""
    y, s, codes = level_codes(preds, level)
    return y, s, preds.video_codes()[1][codes]


def producer_of(predictions_file: str | Path) -> dict[str, Any]:
    """The detector and weights a predictions file came from (its provenance), or {}."""
    try:
        recorded = json.loads(provenance_path(predictions_file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(recorded, dict):
        return {}
    return {k: recorded[k] for k in ("detector", "weights_sha256") if recorded.get(k)}


def calibrate_file(
    path: str | Path, method: str, *, level: str = "frame"
) -> tuple[Calibration, dict[str, Any]]:
    """Fit ``method`` on a validation predictions file; the calibration and a report of the
    validation ECE, Brier and NLL before and after (in-sample)."""
    path = Path(path)
    preds = read_predictions(path)
    y, s, videos = level_scores(preds, level)
    calibration = fit_calibration(y, s, method, clusters=videos)
    calibration.fitted_on = {
        "predictions": str(path),
        "sha256": file_sha256(path),
        "level": level,
        "rows": int(len(y)),
        "videos": int(len(np.unique(videos))),
    }
    calibration.producer = producer_of(path)
    after = calibration.apply(s)
    report = {
        "method": method,
        "params": calibration.params,
        "validation_before": {"ece": ece(y, s), "brier": brier(y, s), "nll": nll(y, s)},
        "validation_after": {"ece": ece(y, after), "brier": brier(y, after), "nll": nll(y, after)},
    }
    if calibration.note:
        report["note"] = calibration.note
    return calibration, report


def calibration_rows(
    preds: Predictions, test_data: str, *, n_bins: int = 15, n_boot: int = 1000, seed: int = 0
) -> list[dict[str, Any]]:
    """One row per level of ``tables/calibration``: ECE with its interval clustered by video,
    MCE, Brier, NLL, the number of bins and of videos per class."""
    summaries = calibration_summaries(  # the levels' videos are the same: one draw of weights
        [level_codes(preds, level) for level in LEVELS], n_bins=n_bins, n_boot=n_boot, seed=seed
    )
    return [
        {"test_data": test_data, "level": level, **summary}
        for level, summary in zip(LEVELS, summaries, strict=True)
    ]
