"""Detection metrics with scikit-learn's ``metric(y_true, y_score)`` signature.

Labels: 0 = real / bona fide, 1 = fake / attack; ``y_score`` is the probability of class 1.
Metrics that need both classes (AUC, AP, EER) raise :class:`SingleClassError` when one class is
missing, instead of returning a misleading number.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn import metrics as skm


class SingleClassError(ValueError):
    """The metric needs both classes but ``y_true`` holds only one."""


def check_scores(y_true: Sequence, y_score: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """1-D labels in {0, 1} and finite scores of equal length, as int64 and float64 arrays.

    The one input check of every metric here and in :mod:`fairness` (errors say what is wrong).
    """
    y_true = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=np.float64)
    if y_true.shape != y_score.shape or y_true.ndim != 1:
        raise ValueError(
            f"y_true and y_score must be 1-D of equal length, got {y_true.shape} and {y_score.shape}"
        )
    if len(y_true) == 0:
        raise ValueError("no samples")
    if not np.isin(y_true, (0, 1)).all():
        raise ValueError("y_true must hold 0 (real/bona fide) and 1 (fake/attack) only")
    if not np.isfinite(y_score).all():
        raise ValueError("y_score contains NaN or infinite values")
    return y_true.astype(np.int64), y_score


def _need_both(y_true: np.ndarray, name: str) -> None:
    if y_true.min() == y_true.max():
        raise SingleClassError(
            f"{name} needs both classes; y_true holds only class {int(y_true[0])}"
        )


def auc(y_true: Sequence, y_score: Sequence) -> float:
    """Area under the ROC curve (ties count one half, as in scikit-learn)."""
    y_true, y_score = check_scores(y_true, y_score)
    _need_both(y_true, "AUC")
    return float(skm.roc_auc_score(y_true, y_score))


def ap(y_true: Sequence, y_score: Sequence) -> float:
    """Average precision of the fake class (scikit-learn's step-wise definition)."""
    y_true, y_score = check_scores(y_true, y_score)
    _need_both(y_true, "AP")
    return float(skm.average_precision_score(y_true, y_score))


def eer(y_true: Sequence, y_score: Sequence) -> tuple[float, float]:
    """Equal error rate and its threshold.

    The ROC's FPR and FNR = 1 - TPR are linearly interpolated between the two consecutive
    operating points where FNR - FPR changes sign; the EER is the crossing value and the
    threshold is interpolated between those two points' thresholds.
    """
    y_true, y_score = check_scores(y_true, y_score)
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


def acc(y_true: Sequence, y_score: Sequence, *, threshold: float = 0.5) -> float:
    """Accuracy of the decision ``score >= threshold`` -> fake/attack."""
    y_true, y_score = check_scores(y_true, y_score)
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
    y_true, y_score = check_scores(y_true, y_score)
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


# --------------------------------------------------------------------------------------------
# Extensions (issue 8): threshold metrics, TPR at a fixed FPR, one-sort summaries, fast grouping.
# --------------------------------------------------------------------------------------------


class MetricWarning(UserWarning):
    """A metric is undefined for this input (for example precision with no predicted fakes)."""


def _safe_div(num: float, den: float, name: str) -> float:
    if den == 0:
        warnings.warn(
            f"{name} is undefined (division by zero); returning NaN", MetricWarning, stacklevel=3
        )
        return float("nan")
    return float(num / den)


def _weights(sample_weight: Sequence | None, n: int) -> np.ndarray | None:
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,) or (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("sample_weight must be 1-D, finite, non-negative and one per sample")
    return w


def confusion_matrix(
    y_true: Sequence,
    y_score: Sequence,
    *,
    threshold: float = 0.5,
    sample_weight: Sequence | None = None,
) -> np.ndarray:
    """``[[TN, FP], [FN, TP]]`` (scikit-learn's layout) of the decision ``score >= threshold``."""
    y_true, y_score = check_scores(y_true, y_score)
    w = _weights(sample_weight, len(y_true))
    index = 2 * y_true + (y_score >= threshold)
    counts = np.bincount(index, weights=w, minlength=4)
    return counts.reshape(2, 2) if w is not None else counts.astype(np.int64).reshape(2, 2)


def precision(y_true: Sequence, y_score: Sequence, *, threshold: float = 0.5) -> float:
    """TP / (TP + FP) of the fake class; NaN with a :class:`MetricWarning` if none is called fake."""
    (_, fp), (_, tp) = confusion_matrix(y_true, y_score, threshold=threshold)
    return _safe_div(tp, tp + fp, "precision")


def recall(y_true: Sequence, y_score: Sequence, *, threshold: float = 0.5) -> float:
    """TP / (TP + FN), the true positive rate; NaN with a :class:`MetricWarning` without fakes."""
    _, (fn, tp) = confusion_matrix(y_true, y_score, threshold=threshold)
    return _safe_div(tp, tp + fn, "recall")


def f1(y_true: Sequence, y_score: Sequence, *, threshold: float = 0.5) -> float:
    """2 TP / (2 TP + FP + FN); NaN with a :class:`MetricWarning` if no fake exists or is called."""
    (_, fp), (fn, tp) = confusion_matrix(y_true, y_score, threshold=threshold)
    return _safe_div(2 * tp, 2 * tp + fp + fn, "F1")


@dataclass(frozen=True)
class _Ranked:
    """Scores sorted once (highest first) with their tie blocks, reused by many weightings."""

    order: np.ndarray  # argsort(y_score)[::-1]; ties in any order
    thr: np.ndarray  # distinct scores, highest first
    pos: np.ndarray  # labels (float) in sorted order
    last: np.ndarray  # last sorted position of each distinct score
    cm_index: np.ndarray  # 2 * y + (score >= threshold), in the original order


def _rank(y_true: np.ndarray, y_score: np.ndarray, threshold: float = 0.5) -> _Ranked:
    order = np.argsort(y_score)[::-1]
    s = y_score[order]
    last = np.r_[np.flatnonzero(s[1:] != s[:-1]), len(s) - 1]
    cm_index = 2 * y_true + (y_score >= threshold)
    return _Ranked(order, s[last], y_true[order].astype(np.float64), last, cm_index)


def _curve(
    y_true: np.ndarray,
    y_score: np.ndarray,
    weight: np.ndarray | None = None,
    ranked: _Ranked | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cumulative (weighted) TP and FP counts at each distinct score, highest score first.

    Thresholds whose samples all have weight 0 are dropped, so a weighting by multiplicity gives
    exactly the curve of the repeated samples (the bootstrap relies on this).
    """
    r = ranked if ranked is not None else _rank(y_true, y_score)
    if weight is None:
        pos_w, neg_w = r.pos, 1.0 - r.pos
    else:
        w = weight[r.order]
        pos_w = r.pos * w
        neg_w = w - pos_w
    thr, tps, fps = r.thr, np.cumsum(pos_w)[r.last], np.cumsum(neg_w)[r.last]
    if weight is not None:
        keep = np.diff(np.r_[0.0, tps + fps]) > 0
        thr, tps, fps = thr[keep], tps[keep], fps[keep]
    return thr, tps, fps


def _rates(tps: np.ndarray, fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """FPR and TPR with the (0, 0) point prepended."""
    return np.r_[0.0, fps] / fps[-1], np.r_[0.0, tps] / tps[-1]


def _eer_from_curve(
    thr: np.ndarray, fpr: np.ndarray, tpr: np.ndarray, top: float
) -> tuple[float, float]:
    """Same interpolation as :func:`eer`; ``thr`` excludes the prepended +inf point."""
    thr = np.r_[np.inf, thr]
    diff = (1.0 - tpr) - fpr
    i = int(np.argmax(diff <= 0))
    if diff[i] == 0 or i == 0:
        return float(fpr[i]), float(min(thr[i], top))
    d0, d1 = diff[i - 1], diff[i]
    w = d0 / (d0 - d1)
    t0 = min(thr[i - 1], top)
    return float(fpr[i - 1] + w * (fpr[i] - fpr[i - 1])), float(t0 + w * (thr[i] - t0))


def _tpr_at(fpr: np.ndarray, tpr: np.ndarray, target: float) -> float:
    return float(tpr[fpr <= target + 1e-12].max())


def tpr_at_fpr(y_true: Sequence, y_score: Sequence, fpr: float = 0.01) -> float:
    """Highest TPR among the ROC's operating points whose FPR is at most ``fpr``.

    Conservative (no interpolation): the value is reached by an actual threshold. Raises
    :class:`SingleClassError` when a class is missing.
    """
    if not 0.0 <= fpr <= 1.0:
        raise ValueError(f"fpr must be in [0, 1], got {fpr}")
    y_true, y_score = check_scores(y_true, y_score)
    _need_both(y_true, "TPR@FPR")
    _, tps, fps = _curve(y_true, y_score)
    return _tpr_at(*_rates(tps, fps), fpr)


def summarize(
    y_true: Sequence,
    y_score: Sequence,
    *,
    threshold: float = 0.5,
    fpr_targets: Sequence[float] = (0.01, 0.1),
    sample_weight: Sequence | None = None,
) -> dict[str, float]:
    """Every metric from one sort: ``auc, ap, eer, eer_threshold, acc, precision, recall, f1``
    and ``tpr@fpr=<x>`` for each target.

    Equal to :func:`auc`, :func:`ap`, :func:`eer`, ... (checked in the tests) but several times
    faster on large inputs. ``sample_weight`` weights samples (a bootstrap replicate is a weighting
    by multiplicity). With one class only, the ranking metrics are NaN with a
    :class:`MetricWarning` instead of an error, so a table still gets its other cells.
    """
    y_true, y_score = check_scores(y_true, y_score)
    w = _weights(sample_weight, len(y_true))
    out = _summarize(_rank(y_true, y_score, threshold), w, fpr_targets)
    if np.isnan(out["auc"]):
        warnings.warn(
            "AUC, AP, EER and TPR@FPR need both classes; they are NaN", MetricWarning, stacklevel=2
        )
    return out


def _summarize(
    ranked: _Ranked, w: np.ndarray | None, fpr_targets: Sequence[float]
) -> dict[str, float]:
    """:func:`summarize` on prepared scores (no checks, no warnings)."""
    out = _count_summary(np.bincount(ranked.cm_index, weights=w, minlength=4))
    thr, tps, fps = _curve(None, None, w, ranked)
    if tps[-1] <= 0 or fps[-1] <= 0:
        return out | dict.fromkeys(_ranking_keys(fpr_targets), float("nan"))
    fpr, tpr = _rates(tps, fps)
    out["auc"] = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))  # trapezoid rule
    denom = tps + fps  # zero only before the first positive-weight sample, where recall is flat
    prec = np.divide(tps, denom, out=np.ones_like(tps), where=denom > 0)
    out["ap"] = float(np.sum(np.diff(tpr) * prec))
    out["eer"], out["eer_threshold"] = _eer_from_curve(thr, fpr, tpr, float(thr[0]))
    for x in fpr_targets:
        out[f"tpr@fpr={x:g}"] = _tpr_at(fpr, tpr, x)
    return out


def _ranking_keys(fpr_targets: Sequence[float]) -> list[str]:
    """The ranking metrics of :func:`summarize`, in its order."""
    return ["auc", "ap", "eer", "eer_threshold", *(f"tpr@fpr={x:g}" for x in fpr_targets)]


def _count_summary(counts: np.ndarray) -> dict[str, float]:
    """ACC, precision, recall and F1 of :func:`summarize` from the confusion counts (tn, fp,
    fn, tp); NaN where undefined, without warnings."""
    tn, fp, fn, tp = (float(c) for c in counts)
    total = tn + fp + fn + tp
    out: dict[str, float] = {"acc": (tn + tp) / total if total else float("nan")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetricWarning)
        out["precision"] = _safe_div(tp, tp + fp, "precision")
        out["recall"] = _safe_div(tp, tp + fn, "recall")
        out["f1"] = _safe_div(2 * tp, 2 * tp + fp + fn, "F1")
    return out


def choose_threshold(y_true: Sequence, y_score: Sequence, rule: str = "eer") -> float:
    """A decision threshold chosen on validation scores: ``eer`` (the EER threshold) or
    ``youden`` (maximises TPR - FPR)."""
    y_true, y_score = check_scores(y_true, y_score)
    _need_both(y_true, "choose_threshold")
    if rule == "eer":
        return eer(y_true, y_score)[1]
    if rule == "youden":
        thr, tps, fps = _curve(y_true, y_score)
        fpr, tpr = _rates(tps, fps)
        return float(thr[int(np.argmax(tpr[1:] - fpr[1:]))])
    raise ValueError(f"rule must be 'eer' or 'youden', got {rule!r}")


def factorize(keys: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of ``keys`` and the sorted unique keys (``uniq[codes] == keys``).

    Hash-based, so ten times faster than ``np.unique`` on a million strings.
    """
    table: dict = {}
    codes = np.fromiter(
        (table.setdefault(k, len(table)) for k in keys), dtype=np.int64, count=len(keys)
    )
    firsts = np.empty(len(table), dtype=object)
    firsts[:] = list(table)
    order = np.argsort(firsts.astype(str), kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[codes], firsts[order]


def reduce_by_code(
    y_true: np.ndarray, y_score: np.ndarray, codes: np.ndarray, reduce: str = "mean"
) -> tuple[np.ndarray, np.ndarray]:
    """Per-video labels and scores for dense integer ``codes`` (0..V-1, as from :func:`factorize`).

    Same results as :func:`video_scores` on the codes; the mean needs no sort.
    """
    if reduce != "mean":
        labels, scores, _ = video_scores(y_true, y_score, codes, reduce=reduce)
        return labels, scores
    counts = np.bincount(codes)
    if (counts == 0).any():
        raise ValueError("codes must be dense (every code from 0 to max used)")
    labels_sum = np.bincount(codes, weights=y_true)
    mixed = (labels_sum != 0) & (labels_sum != counts)
    if mixed.any():
        raise ValueError(
            f"video code {int(np.flatnonzero(mixed)[0])} has frames with different labels"
        )
    return (labels_sum > 0).astype(np.int64), np.bincount(codes, weights=y_score) / counts


def group_videos(
    y_true: Sequence, y_score: Sequence, video_ids: Sequence, reduce: str = "mean"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`video_scores` computed with :func:`factorize`; also returns each frame's video code.

    Returns ``(labels, scores, ids, codes)`` with ``ids[codes[i]]`` the video of frame ``i``.
    """
    y_true, y_score = check_scores(y_true, y_score)
    if len(video_ids) != len(y_true):
        raise ValueError("video_ids must have one entry per frame")
    codes, uniq = factorize(video_ids)
    labels, scores = reduce_by_code(y_true, y_score, codes, reduce)
    return labels, scores, uniq, codes
