"""Which detectors of a leaderboard column are distinguishable from its best (issue 38, item 1).

Every detector of a column (one test set, one level) is compared with the column's best (highest
AUC) on the items both scored (frames, clips or videos) with the paired DeLong test (DeLong, DeLong & Clarke-Pearson, Biometrics
1988). Frames of one video are correlated, so at frame level the test uses the clustered form
(Obuchowski, Biometrics 1997): each class's placement values are summed per video before their
covariance is taken, the form :func:`evaluation.confidence.clustered_auc_variance` uses for one
AUC; with one item per cluster (video level) it is exactly DeLong's test
(:func:`evaluation.confidence.delong_test`). The p-values of a column's comparisons are
Holm-adjusted (Holm, Scand. J. Statist. 1979) over its detectors, so "tied with the best" is a
family-wise statement at level ``alpha``.

Null hypothesis of each comparison, in words: the detector and the column's best have the same
AUC on the population the test videos are drawn from (their difference on these items is
sampling noise). A detector is *tied* with the best when its adjusted p-value is at least
``alpha``. The best is chosen after looking at the data, so a tie says "not shown to be worse",
never "as good".

With several training seeds a detector's score of an item is its mean over the seeds (one
"seed-averaged" detector per row), and the test compares those averaged scores: it answers
whether the detectors differ on the test items, given their training variability averaged out;
the spread across seeds is reported beside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from fairforensics.evaluation.confidence import (
    MIN_INTERVAL_UNITS,
    DeLongResult,
    Interval,
    bootstrap_interval,
    clustered_auc_covariance,
    clustered_auc_variance,
    few_units_note,
    holm,
)
from fairforensics.evaluation.metrics import (
    _rank,
    _summarize,
    factorize,
    reduce_by_code,
)
from fairforensics.evaluation.predictions import Predictions


def clustered_delong_test(
    y_true: Sequence,
    score_a: Sequence,
    score_b: Sequence,
    clusters: Sequence | None = None,
) -> DeLongResult:
    """Paired DeLong test of ``AUC_a == AUC_b`` on the same items, clustered by ``clusters``
    (each item's video; None: every item its own cluster, DeLong's original test).

    Clusters must be class-pure (a video is real or fake). Needs two clusters of each class.
    The variance of the difference is zero when both rankings agree everywhere: then ``z`` is
    0 and ``p`` 1 for equal AUCs, ``p`` 0 otherwise.
    """
    aucs, cov = clustered_auc_covariance(y_true, [score_a, score_b], clusters)
    var = float(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1])
    diff = float(aucs[0] - aucs[1])
    if var <= 1e-300:
        z = 0.0 if abs(diff) < 1e-15 else float(np.sign(diff) * np.inf)
    else:
        z = diff / np.sqrt(var)
    p = float(2.0 * stats.norm.sf(abs(z)))
    return DeLongResult(
        float(aucs[0]), float(aucs[1]), diff, float(np.sqrt(max(var, 0.0))), float(z), p
    )


def logit_interval(value: float, var: float, confidence: float = 0.95) -> tuple[float, float]:
    """Normal interval of an AUC on the logit scale, mapped back (delta method: the standard
    error of logit(AUC) is ``sqrt(var) / (AUC (1 - AUC))``); it stays inside (0, 1) and, with
    10-20 videos of a class, covers better than the plain normal one (measured: 0.93-0.95
    against 0.88, tests/test_leaderboard_intervals.py). An AUC of 0 or 1, or an undefined
    variance, gives NaN."""
    if not (0.0 < value < 1.0) or not np.isfinite(var):
        return float("nan"), float("nan")
    z = stats.norm.ppf(0.5 + confidence / 2)
    centre = np.log(value / (1.0 - value))
    half = z * np.sqrt(max(var, 0.0)) / (value * (1.0 - value))
    return float(1 / (1 + np.exp(-(centre - half)))), float(1 / (1 + np.exp(-(centre + half))))


@dataclass(frozen=True)
class Comparison:
    """One detector of a column against the column's best."""

    auc: float
    p_value: float  # paired (clustered) DeLong p against the best; NaN for the best itself
    p_holm: float  # Holm-adjusted over the column's detectors
    tied: bool  # the best itself, or not distinguishable from it at ``alpha``
    best: bool
    note: str = ""


@dataclass(frozen=True)
class Items:
    """Items (frames or videos) shared by several detectors, aligned: labels, one score row per
    detector, and the video of each item."""

    y: np.ndarray
    scores: dict[str, np.ndarray]
    clusters: np.ndarray


def _keyed(pred: Predictions, level: str, reduce: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if level == "video":
        codes, uniq = factorize(pred.video_key)
        y, s = reduce_by_code(pred.label, pred.score, codes, reduce)
        return np.asarray(uniq, dtype=str), y, s
    keys = _row_keys(pred)
    order = np.argsort(keys, kind="stable")
    return keys[order], pred.label[order], pred.score[order]


def align(
    preds: Mapping[str, Sequence[Predictions]], level: str = "frame", reduce: str = "mean"
) -> Items:
    """The items every detector scored (frame level: video key, unit and frame; video level:
    the video key, frame scores reduced with ``reduce``), with each detector's score averaged
    over its predictions files (its seeds). Labels that disagree between files are an error."""
    keyed = {
        name: [_keyed(p, level, reduce) for p in files] for name, files in preds.items() if files
    }
    if not keyed:
        raise ValueError("no predictions to align")
    common = None
    for files in keyed.values():
        for keys, _, _ in files:
            common = keys if common is None else np.intersect1d(common, keys)
    if common is None or len(common) == 0:
        raise ValueError("the predictions files share no items")
    y_ref = None
    scores = {}
    for name, files in keyed.items():
        rows = []
        for keys, y, s in files:
            idx = np.searchsorted(keys, common)
            if y_ref is None:
                y_ref = y[idx]
            elif (y[idx] != y_ref).any():
                raise ValueError(f"{name}: labels disagree with the other files on the same items")
            rows.append(s[idx])
        scores[name] = np.mean(rows, axis=0)
    clusters = common if level == "video" else np.array([k.rsplit("#", 2)[0] for k in common])
    return Items(np.asarray(y_ref), scores, clusters)


def compare_with_best(
    preds: Mapping[str, Predictions],
    *,
    level: str = "frame",
    reduce: str = "mean",
    alpha: float = 0.05,
    shown: Mapping[str, float] | None = None,
) -> dict[str, Comparison]:
    """Each detector of ``preds`` (one predictions file each: seed-averaged, see
    :func:`seed_average`) against the one with the best AUC (module docstring). ``shown``: the
    AUCs the table prints (with seeds, the mean of the seeds' AUCs, which can rank otherwise
    than the AUC of the averaged scores); the best is the highest of them (default: of the
    AUCs of ``preds``).

    Each pair is compared on the items both scored (:func:`align`): image and video detectors
    share videos but not frames, so at frame level such a pair cannot be compared. A detector
    whose comparison cannot be made (no shared items, fewer than two videos of a class) is not
    marked tied and says why in ``note``; the others' p-values are Holm-adjusted together."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    names = list(preds)
    aucs = {}
    for n in names:
        _, y, s = _keyed(preds[n], level, reduce)
        aucs[n] = clustered_auc_variance(y, s, np.arange(len(y)))[0]
    ranked = {n: (aucs if shown is None else shown)[n] for n in names}
    ranked = {n: v if np.isfinite(v) else -np.inf for n, v in ranked.items()}  # NaN ranks last
    best = max(names, key=lambda n: (ranked[n], -names.index(n)))
    others = [n for n in names if n != best]
    raw, notes = [], {}
    for n in others:
        try:
            items = align({best: [preds[best]], n: [preds[n]]}, level, reduce)
            pair = [items.scores[best], items.scores[n]]
            a, b = (clustered_auc_variance(items.y, s, items.clusters)[0] for s in pair)
            # a difference of exactly zero has z = 0 whatever its variance (even one that
            # cannot be estimated)
            p = 1.0 if a == b else clustered_delong_test(items.y, *pair, items.clusters).p_value
        except ValueError as exc:
            p = float("nan")
            notes[n] = str(exc)
        raw.append(p)
    adjusted = dict(zip(others, holm(raw), strict=True))
    out = {best: Comparison(aucs[best], float("nan"), float("nan"), True, True)}
    for n, p in zip(others, raw, strict=True):
        q = float(adjusted[n])
        out[n] = Comparison(aucs[n], float(p), q, bool(q >= alpha), False, notes.get(n, ""))
    return out


def seed_rows(preds: Sequence[Predictions]) -> tuple[Predictions, list[np.ndarray]]:
    """The rows of the first of a detector's predictions files (one per seed) that every file
    scored, and each file's scores of those rows (frames matched by video key, unit and
    frame). Labels that disagree are an error."""
    if not preds:
        raise ValueError("no predictions to align")
    keys = [_row_keys(p) for p in preds]
    common = keys[0]
    for k in keys[1:]:
        common = np.intersect1d(common, k)
    rows = np.flatnonzero(np.isin(keys[0], common))
    first = preds[0].subset(rows)
    scores = []
    for pred, k in zip(preds, keys, strict=True):
        order = np.argsort(k, kind="stable")
        idx = order[np.searchsorted(k[order], keys[0][rows])]
        if (pred.label[idx] != first.label).any():
            raise ValueError("the seeds' predictions files disagree on labels of the same frames")
        scores.append(pred.score[idx])
    return first, scores


def seed_average(preds: Sequence[Predictions]) -> Predictions:
    """One predictions file of a detector trained with several seeds: :func:`seed_rows` with
    each row's score averaged over the seeds. One file is returned as it is."""
    if len(preds) == 1:
        return preds[0]
    first, scores = seed_rows(preds)
    first.score = np.mean(scores, axis=0)
    return first


def seed_mean_ci(
    preds: Sequence[Predictions],
    *,
    level: str = "frame",
    reduce: str = "mean",
    threshold: float = 0.5,
    fpr_targets: Sequence[float] = (0.01, 0.1),
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    min_units: int = MIN_INTERVAL_UNITS,
) -> dict[str, Interval]:
    """Intervals of the mean over seeds of every :func:`evaluation.metrics.summarize` metric
    (the value a seeded leaderboard cell shows): for AUC a logit-normal interval with the
    variance of the mean of the seeds' AUCs, from their covariance clustered by video
    (:func:`clustered_auc_covariance`, :func:`logit_interval`); for the others a percentile
    bootstrap over videos in which each replicate draws the videos once and scores every
    seed's run on the same draw, then averages. It holds the trained models fixed (the test-set sampling uncertainty of the
    mean); the spread across seeds is reported beside it. NaN, with the reason, with fewer
    than ``min_units`` videos of a class."""
    first, scores = seed_rows(preds)
    codes, uniq = factorize(first.video_key)
    y = first.label
    video_label = np.zeros(len(uniq), dtype=np.int64)
    video_label[codes] = y
    per_class = np.bincount(video_label, minlength=2)
    if level == "video":
        scores = [reduce_by_code(y, s, codes, reduce)[1] for s in scores]
        y = video_label
        codes = np.arange(len(uniq))
    ranked = [_rank(y, s, threshold) for s in scores]
    point = {
        k: float(np.mean([_summarize(r, None, fpr_targets)[k] for r in ranked]))
        for k in _summarize(ranked[0], None, fpr_targets)
    }
    note = "; ".join(
        filter(None, (few_units_note(int(per_class[k]), f"{('real', 'fake')[k]} videos", min_units)
                      for k in (0, 1)))
    )  # fmt: skip
    if note:
        return {k: Interval(v, float("nan"), float("nan"), 0, note) for k, v in point.items()}
    rng = np.random.default_rng(seed)
    reps = np.empty((n_boot, len(point)))
    for b in range(n_boot):
        weights = np.bincount(rng.integers(0, len(uniq), len(uniq)), minlength=len(uniq))
        w = weights[codes].astype(np.float64)
        reps[b] = np.mean([list(_summarize(r, w, fpr_targets).values()) for r in ranked], axis=0)
    out = {}
    for j, (k, v) in enumerate(point.items()):
        low, high, why = bootstrap_interval(reps[:, j], confidence, "bootstrap replicates")
        out[k] = Interval(v, low, high, int(n_boot - np.isfinite(reps[:, j]).sum()), why)
    # AUC: the variance of the mean of the seeds' AUCs from their clustered covariance
    aucs, cov = clustered_auc_covariance(y, scores, codes)
    low, high = logit_interval(float(aucs.mean()), float(cov.sum()) / len(scores) ** 2, confidence)
    out["auc"] = Interval(float(aucs.mean()), low, high)
    return out


def _row_keys(pred: Predictions) -> np.ndarray:
    keys = np.array(
        [f"{k}#{u}#{f}" for k, u, f in zip(pred.video_key, pred.unit, pred.frame, strict=True)]
    )
    if len(np.unique(keys)) != len(keys):
        raise ValueError("a predictions file holds the same video and frame twice")
    return keys
