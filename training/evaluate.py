"""Frame- and video-level AUC, AP, EER and ACC of a predictions table (``evaluation.metrics``)."""

from __future__ import annotations

import logging

from evaluation import metrics as M
from evaluation.predictions import Predictions

log = logging.getLogger(__name__)


def detection_metrics(preds: Predictions, threshold: float = 0.5) -> dict[str, float]:
    """``{"frame/auc", "frame/ap", "frame/eer", "frame/acc", "video/..."}`` plus row counts.

    Videos are keyed by dataset/method/id (``Predictions.video_key``) and scored by the mean of
    their frames. AUC, AP and EER are left out (and logged) when a set holds one class only.
    """
    out: dict[str, float] = {"n_frames": float(len(preds))}
    if len(preds) == 0:
        return out
    y_v, s_v, ids = M.video_scores(preds.label, preds.score, preds.video_key)
    out["n_videos"] = float(len(ids))
    for level, (y, s) in {"frame": (preds.label, preds.score), "video": (y_v, s_v)}.items():
        out[f"{level}/acc"] = M.acc(y, s, threshold)
        try:
            out[f"{level}/auc"] = M.auc(y, s)
            out[f"{level}/ap"] = M.ap(y, s)
            out[f"{level}/eer"] = M.eer(y, s)[0]
        except M.SingleClassError as exc:
            log.info("%s-level AUC/AP/EER skipped: %s", level, exc)
    return out
