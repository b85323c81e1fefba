"""Can the label be predicted from the file alone? A small classifier on the audit's features.

A random forest (scikit-learn) learns the label from the features of
:mod:`evaluation.audit.features`, cross-validated with the groups kept apart (identities where the
index records them, else videos: a person's real and fake videos are never split between the
training and the scored folds, ``StratifiedGroupKFold``); each video is scored by the model that
did not see its group. The out-of-fold scores' AUC says how far the dataset can be solved
without looking at a face: 0.5 is no shortcut, 1 a perfect one. The same is done for each
feature alone, and the AUCs are broken down per manipulation method (its fakes against all
reals) and per split.

The evidence is a **permutation test** that refits the whole cross-fitting
(:func:`permutation_p`). Its null, in words: the file metadata carries no information about
which of a person's videos are fake; the labels are then exchangeable among the videos of each
identity (among all videos when the index records no identities), so the out-of-fold AUC of the
data is one draw from the AUCs of the same cross-fitting refitted on labels permuted within
identities. ``p = (1 + #{permuted AUC >= AUC}) / (1 + n_perm)``; its level holds for any
number of permutations (measured: tests/test_audit.py). **No interval** is given: a bootstrap
of the out-of-fold scores treats them as a fixed model's, but each score depends on the other
videos' labels through the forests, so that interval was too narrow (under the null it lay above
0.5 in 6-7 % of data sets, not 2.5 %); an interval that accounts for the refitting (nested
cross-validation, Bates, Hastie & Tibshirani 2023) costs tens of refits of the whole
cross-fitting per data set for an answer the audit does not need: whether the files carry the
label, which the permutation p answers at its stated level.

Small data says so (:func:`too_small`): with fewer than 5 videos of a class or fewer than
:data:`MIN_GROUPS` groups the audit cannot tell, computes no p and says so in one line (an
out-of-fold AUC below 0.5 there is a sign of the cross-fitting, not a finding). The warnings are
the issue's fixed rule, an AUC above :data:`WARN_AUC`, for AUCs on at least 5 videos of each
class.
"""

from __future__ import annotations

import logging
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fairforensics.evaluation.audit.features import CATEGORICAL, FeatureTable
from fairforensics.evaluation.confidence import few_units_note
from fairforensics.evaluation.metrics import auc

log = logging.getLogger(__name__)

#: an AUC above this (overall or of one feature) is a warning: the labels can be learnt from it
WARN_AUC = 0.7
#: fewest groups (identities, or videos) for the audit to tell anything: with fewer, each fold's
#: forest is trained on a handful of groups and the out-of-fold AUC swings far to either side
MIN_GROUPS = 10
#: the level at which the verdict reads the permutation p
LEVEL = 0.05
NO_PERMUTATIONS = "no permutations asked for (n_perm 0)"


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


def n_folds(y: np.ndarray, groups: Sequence[str], n_splits: int) -> int:
    """The folds used: at most ``n_splits``, the groups and the larger class's videos (the
    stratified split needs a class with a video in every fold)."""
    return int(min(n_splits, len(set(groups)), np.bincount(np.asarray(y)).max()))


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

    Missing values are imputed with the training folds' median (and flagged); :func:`n_folds`
    folds. Features with one value for every
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
    k = n_folds(y, groups, n_splits)
    folds = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
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


def permuted_labels(rng: np.random.Generator, y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``y`` with its labels shuffled among the rows of each group (integer codes): each group
    keeps its count of each class."""
    by_group = np.argsort(groups, kind="stable")
    shuffled = np.lexsort((rng.random(len(y)), groups))  # same blocks, random order inside
    out = np.empty_like(y)
    out[by_group] = y[shuffled]
    return out


def permutation_p(
    x: np.ndarray,
    y: np.ndarray,
    groups: Sequence[str],
    within: Sequence[str],
    *,
    observed: float,
    n_perm: int,
    n_splits: int,
    n_estimators: int,
    seed: int,
) -> float:
    """The permutation p of the out-of-fold AUC ``observed`` (module docstring): the whole
    cross-fitting (:func:`out_of_fold_scores`, ``groups`` kept apart) refitted ``n_perm`` times
    on the labels permuted within ``within`` (identities, or one value for all videos).

    Null, in words: the features carry no information about the label within each ``within``
    group (its labels are exchangeable); then ``P(p <= a) <= a`` for every ``a``."""
    codes = np.unique(np.asarray(within, dtype=object).astype(str), return_inverse=True)[1]
    rng = np.random.default_rng(seed)
    as_large = 0
    for _ in range(n_perm):
        y_perm = permuted_labels(rng, y, codes)
        s = out_of_fold_scores(
            x, y_perm, groups, n_splits=n_splits, n_estimators=n_estimators, seed=seed
        )
        as_large += auc(y_perm, s) >= observed - 1e-12  # rounding must not count against H0
    return (1 + as_large) / (1 + n_perm)


def auc_entry(y: np.ndarray, scores: np.ndarray) -> dict[str, object]:
    """``{"auc", "n_real", "n_fake", "note"}``: the out-of-fold AUC of ``scores`` and the video
    counts it rests on; the note says when it rests on fewer than 5 videos of a class (it is
    then shown but not warned of)."""
    n_fake = int((y == 1).sum())
    n_real = int((y == 0).sum())
    if not n_fake or not n_real:
        return {
            "auc": None,
            "n_real": n_real,
            "n_fake": n_fake,
            "note": "needs real and fake videos",
        }
    note = "; ".join(
        filter(None, (few_units_note(n_real, "real videos"), few_units_note(n_fake, "fake videos")))
    )
    return {"auc": auc(y, scores), "n_real": n_real, "n_fake": n_fake, "note": note}


def too_small(n_real: int, n_fake: int, n_groups: int, kind: str) -> str:
    """Why an audit of these counts cannot tell (``""`` when it can): fewer than 5 videos of a
    class or fewer than :data:`MIN_GROUPS` groups (``kind``: identities or videos)."""
    why = [
        few_units_note(n_real, "real videos"),
        few_units_note(n_fake, "fake videos"),
        few_units_note(n_groups, kind, MIN_GROUPS),
    ]
    return "; ".join(w for w in why if w)


def _mixed_groups(y: np.ndarray, groups: Sequence[str]) -> int:
    """How many groups hold both classes."""
    classes: dict[str, set[int]] = {}
    for label, group in zip(y.tolist(), groups, strict=True):
        classes.setdefault(group, set()).add(label)
    return sum(len(c) == 2 for c in classes.values())


@dataclass
class AuditResult:
    """Out-of-fold scores (all features, and each alone) and their AUC summary."""

    table: FeatureTable
    scores: np.ndarray  # per video of ``table.videos``, all features
    feature_scores: dict[str, np.ndarray]  # per feature: the scores of that feature alone
    summary: dict[str, object]  # what audit.json holds


def _breakdown(
    y: np.ndarray, scores: np.ndarray, feature_scores: dict[str, np.ndarray], rows: np.ndarray
) -> dict[str, object]:
    return {
        "overall": auc_entry(y[rows], scores[rows]),
        "features": {name: auc_entry(y[rows], s[rows]) for name, s in feature_scores.items()},
    }


def _warnings(part: dict[str, object], where: str) -> list[str]:
    """An AUC above :data:`WARN_AUC` on at least 5 videos of each class (the small-group rule of
    :mod:`evaluation.confidence`: an AUC on fewer is shown, marked, and not warned of)."""
    found = []
    for name, entry in [("all features", part["overall"]), *part["features"].items()]:
        if entry["auc"] is not None and not entry["note"] and entry["auc"] > WARN_AUC:
            found.append(
                f"{where}: the label is predictable from {name} alone"
                if name != "all features"
                else f"{where}: the label is predictable from the file metadata"
            )
            found[-1] += f" (AUC {entry['auc']:.3f} > {WARN_AUC})"
    return found


def verdict(summary: dict[str, object]) -> str:
    """The audit's conclusion in one line, from the overall AUC, the permutation p and whether
    the data are enough to tell."""
    overall, perm = summary["overall"], summary["permutation"]
    read = ", ".join(summary["features"])
    if perm["note"] == NO_PERMUTATIONS:
        return (
            f"No permutation test (n_perm 0): out-of-fold AUC {overall['auc']:.2f}, which alone "
            "does not say whether the files carry the label beyond chance."
        )
    if perm["p_value"] is None:
        return (
            f"Cannot tell: {perm['note']}; the out-of-fold AUC {overall['auc']:.2f} on so little "
            "says nothing either way (below 0.5 it is a sign of the cross-fitting, not a finding)."
        )
    p = perm["p_value"]
    text = (
        f"out-of-fold AUC {overall['auc']:.2f}, permutation p = {p:.3g} ({perm['n_perm']} refits)"
    )
    if p <= LEVEL:
        return f"The label is predictable from the features read ({read}): {text}."
    below = (
        "; an out-of-fold AUC below 0.5 is a sign of the cross-fitting, not a finding"
        if overall["auc"] < 0.5
        else ""
    )
    return (
        f"No evidence at the {LEVEL:g} level that the features read ({read}) carry the label: "
        f"{text}{below}."
    )


def run_audit(
    table: FeatureTable,
    *,
    n_splits: int = 5,
    n_estimators: int = 100,
    n_perm: int = 99,
    seed: int = 0,
) -> AuditResult:
    """Cross-validated scores and AUCs of ``table`` (module docstring): overall and per feature,
    for all videos, per method (its fakes and every real) and per split, and the permutation p
    of the overall AUC (``n_perm`` refits of the cross-fitting; 0: none). Each kind of
    scikit-learn warning is logged once, with its count (``fit_warnings``)."""
    if not table.names:
        raise AuditError("no feature could be read for any video")
    videos = table.videos
    y = np.array([v.label for v in videos])
    by_identity = all(v.identity for v in videos)
    groups = [v.identity if by_identity else f"{v.method}/{v.id}" for v in videos]
    n_groups = len(set(groups))
    x_all = encode(table, table.names)

    def fit(x: np.ndarray) -> np.ndarray:
        return out_of_fold_scores(
            x, y, groups, n_splits=n_splits, n_estimators=n_estimators, seed=seed
        )

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        feature_scores = {name: fit(encode(table, [name])) for name in table.names}
        scores = feature_scores[table.names[0]] if len(table.names) == 1 else fit(x_all)
        kind = "identities" if by_identity else "videos"
        small = too_small(int((y == 0).sum()), int((y == 1).sum()), n_groups, kind)
        if by_identity and not small and not _mixed_groups(y, groups):
            small = (
                "no identity holds both real and fake videos (permuting within them does nothing)"
            )
        permutation: dict[str, object] = {
            "p_value": None,
            "n_perm": n_perm,
            "within": "identity" if by_identity else "all videos",
            "null": (
                "the file metadata carries no information about which of a person's videos are "
                "fake (the labels are exchangeable within each identity)"
                if by_identity
                else "the file metadata carries no information about the label (the labels are "
                "exchangeable among all videos; the index records no identities)"
            ),
            "note": small or (NO_PERMUTATIONS if n_perm == 0 else ""),
        }
        if not permutation["note"]:
            permutation["p_value"] = permutation_p(
                x_all, y, groups, groups if by_identity else [""] * len(y),
                observed=auc(y, scores), n_perm=n_perm, n_splits=n_splits,
                n_estimators=n_estimators, seed=seed,
            )  # fmt: skip
    fit_warnings = Counter(f"{w.category.__name__}: {w.message}" for w in caught)
    for text, count in fit_warnings.items():
        log.warning("audit: %s (%d time(s))", text, count)
    done: dict[bytes, dict[str, object]] = {}  # rows -> breakdown (a method or split of all)

    def breakdown(rows: np.ndarray) -> dict[str, object]:
        key = rows.tobytes()
        if key not in done:
            done[key] = _breakdown(y, scores, feature_scores, rows)
        return done[key]

    summary: dict[str, object] = dict(breakdown(np.ones(len(videos), dtype=bool)))
    reals = np.array([v.label == 0 for v in videos])
    summary["by_method"] = {
        m: breakdown(reals | np.array([v.method == m for v in videos]))
        for m in sorted({v.method for v in videos if v.label == 1})
    }
    splits = [s for s in ("train", "val", "test") if any(v.split == s for v in videos)]
    summary["by_split"] = {s: breakdown(np.array([v.split == s for v in videos])) for s in splits}
    found = _warnings(summary, "all videos")
    for m, part in summary["by_method"].items():
        found += _warnings(part, f"method {m}")
    for s, part in summary["by_split"].items():
        found += _warnings(part, f"split {s}")
    summary["warnings"] = found
    summary["permutation"] = permutation
    summary["fit_warnings"] = [f"{t} ({c} time(s))" for t, c in fit_warnings.items()]
    summary["cv"] = {
        "classifier": f"random forest ({n_estimators} trees, min_samples_leaf=2)",
        "folds": n_folds(y, groups, n_splits),
        "groups": "identity" if by_identity else "video",
        "n_groups": n_groups,
        "seed": seed,
    }
    summary["files_read"] = table.files_read
    summary["verdict"] = verdict(summary)
    return AuditResult(table, scores, feature_scores, summary)
