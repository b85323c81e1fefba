"""Applying a fitted calibration to scores: a predictions file's rows (``test --calibration``;
the original score kept as ``score_uncalibrated``), the faces ``detect`` scored, and the
decision threshold chosen on the raw scores.

The map is applied to each row's (frame's or clip's) original score; a video's calibrated
score is then the mean of its rows' calibrated scores, as ``test`` reduces a video. Temperature
and Platt scaling are strictly increasing, so the order of the rows, and every frame-level AUC,
is unchanged. Isotonic regression is a non-decreasing step function: a (fake, real) pair whose
scores fall in one flat step becomes a tie, which counts one half in the AUC whichever way the
raw scores ranked it, and every other pair keeps its order; so its AUC can rise (pairs ranked
wrong, as the violators it pooled on its own validation data) or fall (pairs ranked right).
The calibration's ``note`` says how many distinct values it has.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fairforensics.evaluation.calibration.fitting import Calibration, CalibrationError
from fairforensics.evaluation.predictions import Predictions


def check_frame_level(calibration: Calibration, where: str) -> None:
    """Refuse a calibration fitted on video scores: it is applied to rows (frames or clips)."""
    level = calibration.fitted_on.get("level", "frame")
    if level != "frame":
        raise CalibrationError(
            f"{where}: fitted on {level} scores; a calibration is applied to frame scores "
            "(a video's score is then the mean of its calibrated frames): fit it with "
            "fairforensics calibrate --level frame"
        )


def calibrate_predictions(pred: Predictions, calibration: Calibration) -> Predictions:
    """``pred`` with ``score`` the calibrated probability of each row's original score and
    ``score_uncalibrated`` that original (a file calibrated before is mapped from its
    original, never calibrated twice)."""
    original = pred.original_score
    return _with_scores(pred, calibration.apply(original), original)


def uncalibrated(pred: Predictions) -> Predictions:
    """``pred`` with its original scores back in ``score`` and no ``score_uncalibrated``."""
    if pred.score_uncalibrated is None:
        return pred
    return _with_scores(pred, pred.score_uncalibrated, None)


def _with_scores(pred: Predictions, score: np.ndarray, original: np.ndarray | None) -> Predictions:
    out = pred.subset(np.arange(len(pred)))
    out.score = np.asarray(score, dtype=np.float64)
    out.score_uncalibrated = None if original is None else np.asarray(original, np.float64)
    return out


def calibrated_threshold(calibration: Calibration, threshold: float) -> float:
    """The image of a threshold chosen on raw scores: at the frame level the same rows are at
    or above it after a strictly increasing map (temperature, Platt); after isotonic, rows in
    the threshold's flat step join it."""
    return float(calibration.apply([threshold])[0])


def calibration_record(calibration: Calibration, source: str, sha256: str | None) -> dict[str, Any]:
    """What ``eval.json`` says of the calibration it applied: method, parameters, where it came
    from and that file's SHA-256, what it was fitted on and for."""
    return {
        "method": calibration.method,
        "params": calibration.params,
        "source": source,
        "source_sha256": sha256,
        "fitted_on": calibration.fitted_on,
        "producer": calibration.producer,
        **({"note": calibration.note} if calibration.note else {}),
    }
