"""Can the label be predicted from the file alone? A small classifier on the audit's features.

A random forest (scikit-learn) learns the label from the features of
:mod:`evaluation.audit.features`, cross-validated with the groups kept apart (identities where the
index records them, else videos: a person's real and fake videos are never split between the
training and the scored folds, ``StratifiedGroupKFold``); each video is scored by the model that
did not see its group. The out-of-fold scores' AUC, with its bootstrap interval over videos
(:func:`evaluation.confidence.bootstrap_ci` at video level), says how far the dataset can be
solved without looking at a face: 0.5 is no shortcut, 1 a perfect one. The same is done for each
feature alone, and the AUCs are broken down per manipulation method (its fakes against all
reals) and per split. The null: the features carry no information about the label, and the
out-of-fold AUC is then 0.5 up to noise. The interval treats the out-of-fold scores as a fixed
detector's (the project's interval for any predictions file, so that the ``metadata`` baseline
is scored like every detector); it leaves out how the forests vary with their training folds,
so under the null it lies above 0.5 more often than the nominal 2.5 % (6-7 % measured on 40
videos, tests/test_audit.py). The warning is the issue's fixed rule, an AUC above
:data:`WARN_AUC`, for AUCs whose interval the small-group rule lets be shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fairforensics.evaluation.audit.features import CATEGORICAL, FeatureTable
from fairforensics.evaluation.confidence import bootstrap_ci

#: an AUC above this (overall or of one feature) is a warning: the labels can be learnt from it
WARN_AUC = 0.7


class AuditError(ValueError):
    """The audit cannot be run on these videos (too few, one class, one group)."""


def encode(table: FeatureTable, names: Sequence[str]) -> np.ndarray:
    """The feature matrix of ``names``: numbers as they are (NaN when missing), categories as
    codes of their sorted values (the codes are label-free, so no fold leaks into another)."""
    cols = []
    for name in names:
        values = table.columns[name]
        if name in CATEGORICAL:
            _, codes = np.unique(values.astype(str), return_inverse=True)
            cols.append(codes.astype(float))
        else:
            cols.append(values.astype(float))
    return np.column_stack(cols) if cols else np.empty((len(table.videos), 0))


def out_of_fold_scores(
    x: np.ndarray,
    y: np.ndarray,
    groups: Sequence[str],
    *,
    n_splits: int = 5,
    n_estimators: int = 100,
    seed: int = 0,
) -> np.ndarray:
    """Probability of class 1 of each row, from a forest trained on the folds without its group.

    Missing values are imputed with the training folds' median (and flagged); at most
    ``n_splits`` folds, fewer when there are fewer groups. Features with one value for every
    row cannot separate anything: every row then scores 0.5 (AUC 0.5) without a fit.
    """
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.model_selection import StratifiedGroupKFold
    from sklearn.pipeline import make_pipeline

    y = np.asarray(y)
    groups = np.asarray(groups, dtype=object)
    n_groups = len(set(groups))
    if n_groups < 2 or len(set(y)) < 2:
        raise AuditError(
            f"the audit needs real and fake videos in at least two groups; got {n_groups} "
            f"group(s) and classes {sorted(set(y.tolist()))}"
        )
    if all(len(set(col[~np.isnan(col)].tolist())) <= 1 for col in x.T):
        return np.full(len(y), 0.5)
    folds = StratifiedGroupKFold(n_splits=min(n_splits, n_groups), shuffle=True, random_state=seed)
    scores = np.full(len(y), np.nan)
    for train, test in folds.split(x, y, groups):
        if len(set(y[train])) < 2:
            raise AuditError(
                "a training fold holds one class only (the groups are too few or class-pure)"
            )
        model = make_pipeline(
            SimpleImputer(strategy="median", add_indicator=True, keep_empty_features=True),
            RandomForestClassifier(
                n_estimators=n_estimators, min_samples_leaf=2, random_state=seed, n_jobs=1
            ),
        )
        model.fit(x[train], y[train])
        scores[test] = model.predict_proba(x[test])[:, 1]
    return scores


def auc_entry(
    y: np.ndarray, scores: np.ndarray, video_keys: np.ndarray, *, n_boot: int, seed: int
) -> dict[str, object]:
    """``{"auc", "ci": [low, high], "n_real", "n_fake", "note"}``: the AUC of ``scores`` and its
    percentile bootstrap interval over videos (NaN with a note under the small-group rule)."""
    n_fake = int((y == 1).sum())
    n_real = int((y == 0).sum())
    if not n_fake or not n_real:
        return {
            "auc": None,
            "ci": [None, None],
            "n_real": n_real,
            "n_fake": n_fake,
            "note": "needs real and fake videos",
        }
    iv = bootstrap_ci(y, scores, video_keys, level="video", n_boot=n_boot, seed=seed)["auc"]
    return {
        "auc": iv.value,
        "ci": [iv.low, iv.high],
        "n_real": n_real,
        "n_fake": n_fake,
        "note": iv.note,
    }


@dataclass
class AuditResult:
    """Out-of-fold scores (all features, and each alone) and their AUC summary."""

    table: FeatureTable
    scores: np.ndarray  # per video of ``table.videos``, all features
    feature_scores: dict[str, np.ndarray]  # per feature: the scores of that feature alone
    summary: dict[str, object]  # what audit.json holds


def _breakdown(
    y: np.ndarray,
    keys: np.ndarray,
    scores: np.ndarray,
    feature_scores: dict[str, np.ndarray],
    rows: np.ndarray,
    *,
    n_boot: int,
    seed: int,
) -> dict[str, object]:
    def entry(s: np.ndarray) -> dict[str, object]:
        return auc_entry(y[rows], s[rows], keys[rows], n_boot=n_boot, seed=seed)

    return {
        "overall": entry(scores),
        "features": {name: entry(s) for name, s in feature_scores.items()},
    }


def _warnings(part: dict[str, object], where: str) -> list[str]:
    """An AUC above :data:`WARN_AUC` with a defined interval (the small-group rule of
    :mod:`evaluation.confidence`: an AUC on fewer than 5 videos of a class is not warned of)."""
    found = []
    for name, entry in [("all features", part["overall"]), *part["features"].items()]:
        defined = entry["auc"] is not None and np.isfinite(entry["ci"][0])
        if defined and entry["auc"] > WARN_AUC:
            found.append(
                f"{where}: the label is predictable from {name} alone"
                if name != "all features"
                else f"{where}: the label is predictable from the file metadata"
            )
            found[-1] += f" (AUC {entry['auc']:.3f} > {WARN_AUC})"
    return found


def run_audit(
    table: FeatureTable,
    *,
    n_splits: int = 5,
    n_estimators: int = 100,
    n_boot: int = 1000,
    seed: int = 0,
) -> AuditResult:
    """Cross-validated scores and AUCs of ``table`` (module docstring): overall and per feature,
    for all videos, per method (its fakes and every real) and per split."""
    if not table.names:
        raise AuditError("no feature could be read for any video")
    videos = table.videos
    y = np.array([v.label for v in videos])
    keys = np.array([f"{v.method}/{v.id}" for v in videos], dtype=object)
    by_identity = all(v.identity for v in videos)
    groups = [v.identity if by_identity else f"{v.method}/{v.id}" for v in videos]

    def fit(names: Sequence[str]) -> np.ndarray:
        return out_of_fold_scores(
            encode(table, names), y, groups, n_splits=n_splits, n_estimators=n_estimators, seed=seed
        )

    feature_scores = {name: fit([name]) for name in table.names}
    scores = feature_scores[table.names[0]] if len(table.names) == 1 else fit(table.names)
    done: dict[bytes, dict[str, object]] = {}  # rows -> breakdown (a method or split of all)

    def breakdown(rows: np.ndarray) -> dict[str, object]:
        key = rows.tobytes()
        if key not in done:
            done[key] = _breakdown(y, keys, scores, feature_scores, rows, n_boot=n_boot, seed=seed)
        return done[key]

    summary: dict[str, object] = dict(breakdown(np.ones(len(videos), dtype=bool)))
    reals = np.array([v.label == 0 for v in videos])
    summary["by_method"] = {
        m: breakdown(reals | np.array([v.method == m for v in videos]))
        for m in sorted({v.method for v in videos if v.label == 1})
    }
    splits = [s for s in ("train", "val", "test") if any(v.split == s for v in videos)]
    summary["by_split"] = {s: breakdown(np.array([v.split == s for v in videos])) for s in splits}
    warnings = _warnings(summary, "all videos")
    for m, part in summary["by_method"].items():
        warnings += _warnings(part, f"method {m}")
    for s, part in summary["by_split"].items():
        warnings += _warnings(part, f"split {s}")
    summary["warnings"] = warnings
    summary["cv"] = {
        "classifier": f"random forest ({n_estimators} trees, min_samples_leaf=2)",
        "folds": int(min(n_splits, len(set(groups)))),
        "groups": "identity" if by_identity else "video",
        "n_groups": len(set(groups)),
        "seed": seed,
        "n_boot": n_boot,
    }
    return AuditResult(table, scores, feature_scores, summary)
