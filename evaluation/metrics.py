"""Detection metrics with scikit-learn's ``metric(y_true, y_score)`` signature.

Labels: 0 = real / bona fide, 1 = fake / attack; ``y_score`` is the probability of class 1.
Metrics that need both classes (AUC, AP, EER) raise :class:`SingleClassError` when one class is
missing, instead of returning a misleading number.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn import metrics as skm


class SingleClassError(ValueError):
    """The metric needs both classes but ``y_true`` holds only one."""


def _check(y_true: Sequence, y_score: Sequence) -> tuple[np.ndarray, np.ndarray]:
    y_true = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=np.float64)
    if y_true.shape != y_score.shape or y_true.ndim != 1:
        raise ValueError(f"y_true and y_score must be 1-D of equal length, got {y_true.shape} and {y_score.shape}")
    if len(y_true) == 0:
        raise ValueError("no samples")
    if not np.isin(y_true, (0, 1)).all():
        raise ValueError("y_true must hold 0 (real/bona fide) and 1 (fake/attack) only")
    if not np.isfinite(y_score).all():
        raise ValueError("y_score contains NaN or infinite values")
    return y_true.astype(np.int64), y_score


def _need_both(y_true: np.ndarray, name: str) -> None:
    if y_true.min() == y_true.max():
        raise SingleClassError(f"{name} needs both classes; y_true holds only class {int(y_true[0])}")


def auc(y_true: Sequence, y_score: Sequence) -> float:
    """Area under the ROC curve (ties count one half, as in scikit-learn)."""
    y_true, y_score = _check(y_true, y_score)
    _need_both(y_true, "AUC")
    return float(skm.roc_auc_score(y_true, y_score))


def ap(y_true: Sequence, y_score: Sequence) -> float:
    """Average precision of the fake class (scikit-learn's step-wise definition)."""
    y_true, y_score = _check(y_true, y_score)
    _need_both(y_true, "AP")
    return float(skm.average_precision_score(y_true, y_score))


def eer(y_true: Sequence, y_score: Sequence) -> tuple[float, float]:
    """Equal error rate and its threshold.

    The ROC's FPR and FNR = 1 - TPR are linearly interpolated between the two consecutive
    operating points where FNR - FPR changes sign; the EER is the crossing value and the
    threshold is interpolated between those two points' thresholds.
    """
    y_true, y_score = _check(y_true, y_score)
    _need_both(y_true, "EER")
    fpr, tpr, thr = skm.roc_curve(y_true, y_score, drop_intermediate=False)
    fnr = 1.0 - tpr
    diff = fnr - fpr  # decreasing from 1 to -1 along the curve
    i = int(np.argmax(diff <= 0))
    if diff[i] == 0 or i == 0:
        return float(fpr[i]), float(min(thr[i], np.max(y_score)))
    d0, d1 = diff[i - 1], diff[i]
    w = d0 / (d0 - d1)
    rate = fpr[i - 1] + w * (fpr[i] - fpr[i - 1])
    t0 = min(thr[i - 1], np.max(y_score))
    threshold = t0 + w * (thr[i] - t0)
    return float(rate), float(threshold)


def acc(y_true: Sequence, y_score: Sequence, threshold: float = 0.5) -> float:
    """Accuracy of the decision ``score >= threshold`` -> fake/attack."""
    y_true, y_score = _check(y_true, y_score)
    return float(np.mean((y_score >= threshold).astype(np.int64) == y_true))


def video_scores(
    y_true: Sequence, y_score: Sequence, video_ids: Sequence, reduce: str = "mean"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Aggregate frame scores into one score per video.

    ``video_ids`` must identify a video uniquely (use ``Predictions.video_key``, which joins
    dataset, method and id: FF++ fake names repeat across methods). ``reduce`` is ``mean``,
    ``median`` or ``max``. Returns labels, scores and ids, sorted by id. A video whose frames
    disagree on the label is an error.
    """
    y_true, y_score = _check(y_true, y_score)
    ids = np.asarray(video_ids)
    if ids.shape != y_true.shape:
        raise ValueError("video_ids must have one entry per frame")
    uniq, inverse = np.unique(ids, return_inverse=True)
    counts = np.bincount(inverse)
    labels_sum = np.bincount(inverse, weights=y_true)
    if not np.all((labels_sum == 0) | (labels_sum == counts)):
        bad = uniq[(labels_sum != 0) & (labels_sum != counts)][0]
        raise ValueError(f"video {bad!r} has frames with different labels")
    labels = (labels_sum > 0).astype(np.int64)
    if reduce == "mean":
        scores = np.bincount(inverse, weights=y_score) / counts
    elif reduce in ("median", "max"):
        order = np.lexsort((y_score, inverse))
        sorted_scores = y_score[order]
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        if reduce == "max":
            scores = sorted_scores[starts + counts - 1]
        else:
            lo = sorted_scores[starts + (counts - 1) // 2]
            hi = sorted_scores[starts + counts // 2]
            scores = (lo + hi) / 2.0
    else:
        raise ValueError(f"reduce must be 'mean', 'median' or 'max', got {reduce!r}")
    return labels, scores, uniq
