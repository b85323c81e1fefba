"""Group fairness metrics computed from labels, scores and one group value per sample.

* per-group detection metrics (AUC, ACC, EER, precision, recall, F1, FPR, FNR, confusion
  matrix) and the bias factor of paper 000 (|ACC_female - ACC_male|; with more than two
  groups the largest pairwise difference, reported with its pair);
* the deepfake fairness metrics of Lin et al. (CVPR 2024, "Preserving Fairness Generalization in
  Deepfake Detection", Sec. 5.1, following Ju et al.): F_FPR, F_OAE, F_DP, F_MEO at a threshold
  and the max-min gaps of AUC, FPR and error rate;
* FDR / ABF curves and their normalised areas (paper 001, re-exported from :mod:`fairness.abf`);
* signed gaps with clustered bootstrap intervals and permutation tests
  (:func:`fairness.gaps.group_gaps`, re-exported here).

Labels: 0 real / bona fide, 1 fake / attack; ``y_score`` is the probability of class 1 and the
decision is ``score >= threshold``. Rows with an empty group value are left out (logged).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from fairforensics.evaluation.metrics import auc as _auc
from fairforensics.evaluation.metrics import eer as _eer
from fairforensics.fairness.abf import (
    DEFAULT_XS,
    POOLED,
    FairnessCurves,
    abf_curve,
    clean_groups,
    curve_auc,
    fairness_curves,
    fdr_curve,
    odta_curves,
)
from fairforensics.fairness.gaps import GAP_METRICS, Gap, GapAnalysis, group_gaps

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_XS",
    "POOLED",
    "FairnessCurves",
    "GAP_METRICS",
    "Gap",
    "GapAnalysis",
    "abf_curve",
    "bias_factor",
    "bias_factor_pair",
    "binary_rates",
    "curve_auc",
    "fairness_curves",
    "fdr_curve",
    "group_gaps",
    "group_metrics",
    "lin_metrics",
    "odta_curves",
]


def _check_binary(values: Sequence, name: str) -> np.ndarray:
    """1-D array of 0/1 values (bools accepted); anything else is a ValueError naming ``name``."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.dtype == bool:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iuf" or not np.isin(arr, (0, 1)).all():
        bad = np.unique(arr[~np.isin(arr, (0, 1))])[:5].tolist() if arr.dtype.kind in "iuf" else []
        scores = arr.dtype.kind == "f" and bool(np.any(arr != np.round(arr)))
        raise ValueError(
            f"{name} must hold 0 and 1 only (0 real/bona fide, 1 fake/attack), got "
            f"{bad or arr.dtype}" + ("; scores? threshold them first" if scores else "")
        )
    return arr.astype(np.int64)


def binary_rates(y_true: Sequence, y_pred: Sequence) -> dict[str, float]:
    """Confusion matrix counts and rates of hard decisions (NaN where a rate is undefined).

    ``y_true`` and ``y_pred`` must hold 0/1 only and be of equal length (ValueError otherwise).
    """
    y_true, y_pred = _check_binary(y_true, "y_true"), _check_binary(y_pred, "y_pred")
    if y_true.shape != y_pred.shape:
        raise ValueError(
            f"y_true and y_pred must have equal length, got {len(y_true)} and {len(y_pred)}"
        )
    tn, fp, fn, tp = (
        int(np.sum((y_true == t) & (y_pred == p))) for t, p in ((0, 0), (0, 1), (1, 0), (1, 1))
    )
    n_neg, n_pos = tn + fp, fn + tp

    def ratio(a: float, b: float) -> float:
        return float(a / b) if b else float("nan")

    precision = ratio(tp, tp + fp)
    recall = ratio(tp, n_pos)
    if np.isnan(precision) or np.isnan(recall) or precision + recall == 0:
        f1 = 0.0 if (tp + fp + n_pos) else float("nan")
    else:
        f1 = 2 * precision * recall / (precision + recall)
    fpr, tpr = ratio(fp, n_neg), ratio(tp, n_pos)
    return {
        "tn": tn,
        "fp": fp,
        "fn": fn,
        "tp": tp,
        "acc": ratio(tn + tp, n_neg + n_pos),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "fpr": fpr,
        "fnr": ratio(fn, n_pos),
        "tpr": tpr,
        "tnr": ratio(tn, n_neg),
        "positive_rate": ratio(tp + fp, n_neg + n_pos),
        # Lin et al.'s "error rate": 1 - (TPR + TNR) / 2 (balanced error rate)
        "error_rate": float("nan") if not (n_pos and n_neg) else 1.0 - (tpr + (1.0 - fpr)) / 2.0,
    }


def _scores_metrics(y_true: np.ndarray, y_score: np.ndarray) -> dict[str, float]:
    if y_true.min() == y_true.max():
        return {"auc": float("nan"), "eer": float("nan"), "eer_threshold": float("nan")}
    rate, thr = _eer(y_true, y_score)
    return {"auc": _auc(y_true, y_score), "eer": rate, "eer_threshold": thr}


def group_metrics(
    y_true: Sequence, y_score: Sequence, groups: Sequence, threshold: float = 0.5
) -> dict[str, dict[str, float]]:
    """Per group: n, n_real, n_fake, AUC, EER, and ACC/precision/recall/F1/FPR/FNR/confusion at
    ``threshold``. AUC and EER are NaN for a group holding one class only (logged)."""
    y_true, y_score, groups = clean_groups(y_true, y_score, groups)
    out: dict[str, dict[str, float]] = {}
    for g in sorted(set(groups)):
        rows = groups == g
        t, s = y_true[rows], y_score[rows]
        if t.min() == t.max():
            log.warning("group %r holds only class %d: its AUC and EER are undefined", g, t[0])
        out[g] = {
            "n": int(rows.sum()),
            "n_real": int((t == 0).sum()),
            "n_fake": int((t == 1).sum()),
            **_scores_metrics(t, s),
            **binary_rates(t, (s >= threshold).astype(np.int64)),
        }
    return out


def _check_pred(y_true: Sequence, y_pred: Sequence, groups: Sequence):
    y_pred = np.asarray(y_pred)
    if not np.isin(y_pred, (0, 1)).all():
        raise ValueError("y_pred must hold hard decisions 0/1 (threshold the scores first)")
    return clean_groups(y_true, y_pred.astype(np.float64), groups)


def bias_factor_pair(
    y_true: Sequence, y_pred: Sequence, groups: Sequence
) -> tuple[float, str, str]:
    """Bias factor and its pair: ``(max_ij |ACC_i - ACC_j|, lowest-ACC group, highest-ACC group)``."""
    y_true, y_pred, groups = _check_pred(y_true, y_pred, groups)
    names = sorted(set(groups))
    if len(names) < 2:
        raise ValueError(f"the bias factor needs at least two groups, got {names}")
    accs = {g: float(np.mean(y_pred[groups == g] == y_true[groups == g])) for g in names}
    low = min(names, key=lambda g: (accs[g], g))
    high = max(names, key=lambda g: (accs[g], g))
    return accs[high] - accs[low], low, high


def bias_factor(y_true: Sequence, y_pred: Sequence, groups: Sequence) -> float:
    """Paper 000's bias factor |ACC_female - ACC_male| (largest pairwise gap for > 2 groups).

    ``y_pred`` are hard 0/1 decisions; the result is a fraction (the paper prints percent).
    """
    return bias_factor_pair(y_true, y_pred, groups)[0]


def _gap(values: Sequence[float]) -> float:
    vals = np.asarray([v for v in values if not np.isnan(v)], dtype=np.float64)
    return float(vals.max() - vals.min()) if vals.size >= 2 else float("nan")


def lin_metrics(
    y_true: Sequence, y_score: Sequence, groups: Sequence, threshold: float = 0.5
) -> dict[str, float]:
    """Lin et al. (CVPR 2024) fairness metrics at ``threshold`` (fractions, not percent).

    * ``F_FPR`` = sum_g |FPR_g - FPR_all| (equal false positive rate);
    * ``F_OAE`` = max_g ACC_g - min_g ACC_g (overall accuracy equality);
    * ``F_DP``  = max_g P(yhat=1 | g) - min_g P(yhat=1 | g) (demographic parity);
    * ``F_MEO`` = max over FPR, FNR, TPR, TNR of their max-min gap (max equalized odds);
    * ``gap_auc``, ``gap_fpr``, ``gap_error_rate``: max-min over groups, error rate being
      1 - (TPR + TNR) / 2 as in the authors' code.

    Groups missing a class do not take part in the terms that need that class (NaN if fewer
    than two groups are left).
    """
    y_true, y_score, groups = clean_groups(y_true, y_score, groups)
    names = sorted(set(groups))
    if len(names) < 2:
        raise ValueError(f"fairness metrics need at least two groups, got {names}")
    y_pred = (y_score >= threshold).astype(np.int64)
    per = {g: binary_rates(y_true[groups == g], y_pred[groups == g]) for g in names}
    overall_fpr = binary_rates(y_true, y_pred)["fpr"]
    fprs = [per[g]["fpr"] for g in names if not np.isnan(per[g]["fpr"])]
    f_fpr = float(sum(abs(f - overall_fpr) for f in fprs)) if fprs else float("nan")
    meo = [_gap([per[g][k] for g in names]) for k in ("fpr", "fnr", "tpr", "tnr")]
    meo = [m for m in meo if not np.isnan(m)]
    aucs = [_scores_metrics(y_true[groups == g], y_score[groups == g])["auc"] for g in names]
    return {
        "F_FPR": f_fpr,
        "F_OAE": _gap([per[g]["acc"] for g in names]),
        "F_DP": _gap([per[g]["positive_rate"] for g in names]),
        "F_MEO": max(meo) if meo else float("nan"),
        "gap_auc": _gap(aucs),
        "gap_fpr": _gap([per[g]["fpr"] for g in names]),
        "gap_error_rate": _gap([per[g]["error_rate"] for g in names]),
    }
