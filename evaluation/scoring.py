"""Metrics of a predictions file at frame and video level, with optional bootstrap intervals.

DeepfakeBench (paper 002, Sec. 3.2) reports frame-level metrics; video-level ones are added here
with the video key ``dataset/method/video_id`` (FF++ fake ids repeat across methods).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from fairforensics.evaluation.confidence import DeLongResult, bootstrap_ci, delong_test
from fairforensics.evaluation.metrics import MetricWarning, factorize, reduce_by_code, summarize
from fairforensics.evaluation.predictions import Predictions

LEVELS = ("frame", "video")

log = logging.getLogger(__name__)


def video_codes(pred: Predictions) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame integer video codes and the sorted video keys (:attr:`Predictions.video_key`)."""
    return pred.video_codes()


def evaluate_predictions(
    pred: Predictions,
    *,
    level: str = "frame",
    reduce: str = "mean",
    threshold: float = 0.5,
    fpr_targets: Sequence[float] = (0.01, 0.1),
    n_boot: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
    codes: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, Any]:
    """``{"level", "unit", "n_frames", "n_videos", "n_real", "n_fake", "metrics", "ci"}``.

    ``level="frame"`` scores the rows as they are: frames, or clips for a video detector's
    predictions (``unit`` says which); ``n_frames`` counts the rows.

    ``metrics`` holds every :func:`evaluation.metrics.summarize` value; ``ci`` (only when
    ``n_boot > 0``) maps each metric to ``[low, high]`` from a bootstrap over videos, and
    ``ci_notes`` says why an interval is undefined (NaN) or how many replicates were left out.
    ``n_real``/``n_fake`` count the scored units (frames or videos). ``codes``: the result of
    :func:`video_codes`, to compute it once for several calls.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    if len(pred) == 0:
        raise ValueError("no predictions to evaluate")
    codes, keys = video_codes(pred) if codes is None else codes
    y, s = pred.label, pred.score
    if level == "video":
        y, s = reduce_by_code(y, s, codes, reduce)
    result: dict[str, Any] = {
        "level": level,
        "unit": pred.row_unit if level == "frame" else "video",  # frame, clip or video
        "reduce": reduce if level == "video" else None,
        "threshold": threshold,
        "n_frames": len(pred),
        "n_videos": len(keys),
        "n_real": int((y == 0).sum()),
        "n_fake": int((y == 1).sum()),
        "metrics": summarize(y, s, threshold=threshold, fpr_targets=fpr_targets),
    }
    if n_boot > 0:
        ci = bootstrap_ci(
            pred.label,
            pred.score,
            codes,
            level=level,
            reduce=reduce,
            threshold=threshold,
            fpr_targets=fpr_targets,
            n_boot=n_boot,
            confidence=confidence,
            seed=seed,
        )
        result["ci"] = {name: [iv.low, iv.high] for name, iv in ci.items()}
        result["ci_notes"] = {name: iv.note for name, iv in ci.items() if iv.note}
        result["confidence"] = confidence
        result["n_boot"] = n_boot
    return result


def level_label(level: str, units: Sequence[str]) -> str:
    """How to name ``level`` in tables: ``video``, or what the rows of the files scored
    (``frame``, ``clip``, or ``frame/clip`` when image and video detectors are mixed)."""
    if level == "video":
        return level
    found = {u for unit in units for u in unit.split("+")}
    return "/".join(u for u in ("frame", "clip") if u in found) or "frame"


def evaluate_levels(
    pred: Predictions, levels: Sequence[str] = LEVELS, **kwargs: Any
) -> dict[str, dict[str, Any]]:
    """:func:`evaluate_predictions` at each level, grouping the videos once."""
    codes = video_codes(pred)
    return {
        level: evaluate_predictions(pred, level=level, codes=codes, **kwargs) for level in levels
    }


def compare_auc(
    pred_a: Predictions, pred_b: Predictions, level: str = "frame", reduce: str = "mean"
) -> DeLongResult:
    """DeLong's test of two detectors' AUCs on the frames (or videos) both predictions files
    share, matched by video key and frame; a label mismatch between the files is an error."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    keys = []
    for pred in (pred_a, pred_b):
        vk = pred.video_key
        keys.append(
            vk
            if level == "video"
            else np.array([f"{k}#{f}" for k, f in zip(vk, pred.frame, strict=True)])
        )
    frames = []
    for pred, k in zip((pred_a, pred_b), keys, strict=True):
        if level == "video":
            codes, uniq = factorize(k)
            y, s = reduce_by_code(pred.label, pred.score, codes, reduce)
        else:
            uniq, first = np.unique(k, return_index=True)
            if len(uniq) != len(k):
                raise ValueError("a predictions file has the same video and frame twice")
            y, s = pred.label[first], pred.score[first]
        frames.append((uniq.astype(str), y, s))
    (ka, ya, sa), (kb, yb, sb) = frames
    common, ia, ib = np.intersect1d(ka, kb, return_indices=True)
    if len(common) == 0:
        raise ValueError("the two predictions files share no frames/videos")
    if (ya[ia] != yb[ib]).any():
        raise ValueError("the two predictions files disagree on labels of the same frames/videos")
    return delong_test(ya[ia], sa[ia], sb[ib])


#: The metrics the trainer logs and selects checkpoints on, per level.
TRAINING_METRICS: tuple[str, ...] = ("auc", "ap", "eer", "acc")


def detection_metrics(pred: Predictions, threshold: float = 0.5) -> dict[str, float]:
    """``{"frame/auc", "frame/ap", "frame/eer", "frame/acc", "video/..."}`` plus row counts.

    :func:`evaluate_levels` (videos scored by the mean of their frames) flattened for the
    trainer. The one single-class rule of :func:`evaluation.metrics.summarize` applies: AUC, AP
    and EER are NaN when a set holds one class; its :class:`MetricWarning` is logged here.
    """
    out: dict[str, float] = {"n_frames": float(len(pred))}
    if len(pred) == 0:
        return out
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MetricWarning)
        levels = evaluate_levels(pred, threshold=threshold, fpr_targets=())
    counts = ", ".join(f"{k}: {v['n_real']} real, {v['n_fake']} fake" for k, v in levels.items())
    for message in dict.fromkeys(str(w.message) for w in caught):  # once per distinct warning
        log.warning("%s (%s)", message, counts)
    out["n_videos"] = float(levels["video"]["n_videos"])
    for level, res in levels.items():
        out.update({f"{level}/{k}": res["metrics"][k] for k in TRAINING_METRICS})
    return out
