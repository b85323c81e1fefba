"""Which detectors of a leaderboard column are distinguishable from its best (issues 38 and 45).

Every detector of a column (one test set, one level) is compared with the column's best (highest
AUC) on the items they scored (frames, clips or videos) with the paired DeLong test (DeLong,
DeLong & Clarke-Pearson, Biometrics 1988). Frames of one video are correlated, so at frame level
the test uses the clustered form (Obuchowski, Biometrics 1997): each class's placement values are
summed per video before their covariance is taken, the form
:func:`evaluation.confidence.clustered_auc_covariance` uses; with one item per cluster (video
level) it is DeLong's test. Its reference distribution is Student's t with ``(real videos - 1) +
(fake videos - 1)`` degrees of freedom (the placement sums' variance is estimated from that many
independent video deviations): at 5 videos a class the normal reference rejected a true null
in 7.0-9.8 % of data sets, the t reference in 4.2-7.4 % (0/1 scores the highest;
docs/evaluation.md, "Significance: level, coverage and scale"). With fewer than
:data:`evaluation.confidence.MIN_INTERVAL_UNITS` videos of a class no p-value is given (the
project's small-group rule), and the note says why.

The tie mark is family-wise, the choice of the best included: the AUC differences of *every pair*
of the column's detectors are studentized, and a detector is "not tied" with the best only when
its |z| against the best exceeds the ``1 - alpha`` quantile of the maximum of all pairs' |z|
under the joint (clustered) covariance of the detectors' AUCs (a Tukey-type max-|z| critical
value, simulated from that covariance with the same t degrees of freedom). Null in words: no two
detectors of the column differ in AUC on the population the test videos are drawn from. Whatever
the true AUCs, and whichever detector the data make the best, the chance that some detector is
marked "not tied" although its true AUC is not below the chosen best's is at most ``alpha``
(simultaneous intervals of all pairwise differences). A detector is *tied* when it cannot be told
from the best at the column's level: "not shown to be worse", never "as good". Hsu's multiple
comparisons with the best are sharper by one-sided quantiles but need one critical value per
candidate best; the max-|z| over all pairs needs one, uses the covariance the AUC intervals
already compute and holds without conditioning on which detector won.

With several training seeds a detector's score of an item is its mean over the seeds (one
"seed-averaged" detector per row), and the test compares those averaged scores given the trained
models; :func:`seed_mean_intervals` gives the seed mean's two intervals.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from fairforensics.evaluation.confidence import (
    MIN_INTERVAL_UNITS,
    DeLongResult,
    Interval,
    _need_both,
    _placements,
    bootstrap_interval,
    clustered_auc_covariance,
    few_units_note,
    holm,
)
from fairforensics.evaluation.metrics import (
    _rank,
    _summarize,
    check_scores,
    factorize,
    reduce_by_code,
)
from fairforensics.evaluation.predictions import Predictions

__all__ = [
    "GIVEN_MODELS",
    "OVER_SEEDS",
    "ClusteredDeLongResult",
    "Comparison",
    "Items",
    "align",
    "clustered_delong_test",
    "compare_with_best",
    "holm",
    "logit_interval",
    "seed_average",
    "seed_mean_ci",
    "seed_mean_intervals",
    "seed_rows",
]

#: Name of the seed mean's interval that holds the trained models fixed (test-set noise only).
GIVEN_MODELS = "given these trained models"
#: Name of the seed mean's interval of "the value this detector gets when trained again".
OVER_SEEDS = "over training seeds"


@dataclass(frozen=True)
class ClusteredDeLongResult(DeLongResult):
    """:class:`DeLongResult` with the t reference's degrees of freedom and, when no p-value is
    given (NaN), the reason."""

    df: float = float("inf")
    note: str = ""


def _auc(y: np.ndarray, s: np.ndarray) -> float:
    """AUC by DeLong's placement values (the value :func:`clustered_auc_covariance` gives)."""
    _need_both(check_scores(y, s)[0], "AUC")
    return float(_placements(np.asarray(y), np.asarray(s, dtype=np.float64))[0].mean())


def _class_note(counts: Sequence[int], min_units: int) -> str:
    """The small-group rule's note for videos per class ``counts`` (real, fake), or ``""``."""
    classes = zip(counts, ("real", "fake"), strict=True)
    notes = (few_units_note(int(n), f"{what} videos", min_units) for n, what in classes)
    return "; ".join(filter(None, notes))


def _cluster_counts(y: np.ndarray, clusters: np.ndarray) -> tuple[int, int]:
    """Videos (clusters) of each class: (real, fake)."""
    y = np.asarray(y)
    return tuple(len(np.unique(clusters[y == k])) for k in (0, 1))  # type: ignore[return-value]


def clustered_delong_test(
    y_true: Sequence,
    score_a: Sequence,
    score_b: Sequence,
    clusters: Sequence | None = None,
) -> ClusteredDeLongResult:
    """Paired DeLong test of ``AUC_a == AUC_b`` on the same items, clustered by ``clusters``
    (each item's video; None: every item its own cluster, DeLong's original test).

    Null in words: both scorings have the same AUC on the population the videos are drawn from.
    Two-sided p from Student's t with ``(real videos - 1) + (fake videos - 1)`` degrees of
    freedom; NaN, with the reason in ``note``, with fewer than 5 videos (clusters) of a class.
    Clusters must be class-pure (a video is real or fake); needs two clusters of each class.
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
    y = np.asarray(y_true)
    groups = np.arange(len(y)) if clusters is None else np.asarray(clusters)
    counts = _cluster_counts(y, groups)
    df = float(sum(counts) - 2)
    note = _class_note(counts, MIN_INTERVAL_UNITS)
    p = float("nan") if note else float(2.0 * stats.t.sf(abs(z), df))
    se = float(np.sqrt(max(var, 0.0)))
    return ClusteredDeLongResult(float(aucs[0]), float(aucs[1]), diff, se, float(z), p, df, note)


def logit_interval(
    value: float, var: float, confidence: float = 0.95, *, df: float = np.inf
) -> tuple[float, float]:
    """Normal interval of an AUC on the logit scale, mapped back (delta method: the standard
    error of logit(AUC) is ``sqrt(var) / (AUC (1 - AUC))``); it stays inside (0, 1) and, with
    10-20 videos of a class, covers better than the plain normal one (measured: 0.93-0.95
    against 0.88, tests/test_leaderboard_intervals.py). ``df``: a Student t quantile with that
    many degrees of freedom instead of the normal one. An AUC of 0 or 1, or an undefined
    variance, gives NaN."""
    if not (0.0 < value < 1.0) or not np.isfinite(var):
        return float("nan"), float("nan")
    z = (
        stats.norm.ppf(0.5 + confidence / 2)
        if np.isinf(df)
        else stats.t.ppf(0.5 + confidence / 2, df)
    )
    centre = np.log(value / (1.0 - value))
    half = z * np.sqrt(max(var, 0.0)) / (value * (1.0 - value))
    return float(1 / (1 + np.exp(-(centre - half)))), float(1 / (1 + np.exp(-(centre + half))))


@dataclass(frozen=True)
class Comparison:
    """One detector of a column against the column's best."""

    auc: float
    p_value: float  # paired (clustered) DeLong p against the best, unadjusted; NaN for the best
    p_adjusted: float  # family-wise (max-|z| over all pairs of the column's detectors)
    tied: bool  # the best itself, or not distinguishable from it at ``alpha``
    best: bool
    note: str = ""
    baseline: bool = False  # a baseline: compared for information, never tied or best


@dataclass(frozen=True)
class Items:
    """Items (frames or videos) shared by several detectors, aligned: labels, one score row per
    detector, and the video of each item (integer codes)."""

    y: np.ndarray
    scores: dict[str, np.ndarray]
    clusters: np.ndarray


@dataclass(frozen=True)
class _Keyed:
    """One predictions file's items sorted by their integer key, with labels, scores and the
    integer code of each item's video."""

    keys: np.ndarray
    y: np.ndarray
    s: np.ndarray
    video: np.ndarray


def _global_codes(columns: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Integer codes of the values of several string columns, comparable across them (equal
    values, equal codes): each column factorized once, its distinct values mapped through one
    shared vocabulary."""
    vocab: dict = {}
    out = []
    for col in columns:
        codes, uniq = factorize(col)
        mapping = np.fromiter((vocab.setdefault(u, len(vocab)) for u in uniq), np.int64, len(uniq))
        out.append(mapping[codes] if len(codes) else codes)
    return out


def _item_codes(preds: Sequence[Predictions]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per file: (video code, item code) int64 arrays comparable across ``preds``. The video is
    (dataset, method, video id), the item (video, unit, frame). Built from per-column integer
    codes, no per-row strings."""
    if not preds:
        return []
    cols = {
        name: _global_codes([np.asarray(getattr(p, name)) for p in preds])
        for name in ("dataset", "method", "video_id", "unit")
    }
    sizes = {
        name: 1 + max((int(c.max()) for c in codes if len(c)), default=0)
        for name, codes in cols.items()
    }
    raw = [
        (cols["dataset"][i] * sizes["method"] + cols["method"][i]) * sizes["video_id"]
        + cols["video_id"][i]
        for i in range(len(preds))
    ]
    _, inverse = np.unique(np.concatenate(raw), return_inverse=True)
    bounds = np.cumsum([0, *(len(r) for r in raw)])
    n_videos = 1 + int(inverse.max()) if len(inverse) else 1
    frames = [np.asarray(p.frame, dtype=np.int64) for p in preds]
    low = min((int(f.min()) for f in frames if len(f)), default=0)
    span = 1 + max((int(f.max()) for f in frames if len(f)), default=0) - low
    if n_videos * sizes["unit"] * span >= 2**62:
        raise ValueError("too many videos and frame numbers for one integer key")
    out = []
    for i, f in enumerate(frames):
        video = inverse[bounds[i] : bounds[i + 1]].astype(np.int64)
        out.append((video, (video * sizes["unit"] + cols["unit"][i]) * span + (f - low)))
    return out


def _keyed(
    pred: Predictions, codes: tuple[np.ndarray, np.ndarray], level: str, reduce: str
) -> _Keyed:
    """``pred``'s items at ``level`` sorted by key (video level: frame scores reduced with
    ``reduce`` per video)."""
    video, item = codes
    if level == "video":
        uniq, inv = np.unique(video, return_inverse=True)
        y, s = reduce_by_code(pred.label, pred.score, inv.ravel(), reduce)
        return _Keyed(uniq, y, s, uniq)
    order = np.argsort(item, kind="stable")
    keys = item[order]
    if len(keys) > 1 and (keys[1:] == keys[:-1]).any():
        raise ValueError("a predictions file holds the same video and frame twice")
    return _Keyed(keys, pred.label[order], pred.score[order], video[order])


def _keyed_all(
    preds: Mapping[str, Sequence[Predictions]], level: str, reduce: str
) -> dict[str, list[_Keyed]]:
    """:func:`_keyed` of every file of ``preds`` with keys comparable across all of them."""
    flat = [(name, p) for name, files in preds.items() for p in files]
    codes = _item_codes([p for _, p in flat])
    out: dict[str, list[_Keyed]] = {}
    for (name, p), c in zip(flat, codes, strict=True):
        out.setdefault(name, []).append(_keyed(p, c, level, reduce))
    return out


def _align_keyed(keyed: Mapping[str, Sequence[_Keyed]]) -> Items:
    """The items every file of ``keyed`` holds, each detector's score its mean over its files."""
    if not keyed:
        raise ValueError("no predictions to align")
    common = None
    for files in keyed.values():
        for k in files:
            common = (
                k.keys if common is None else np.intersect1d(common, k.keys, assume_unique=True)
            )
    if common is None or len(common) == 0:
        raise ValueError("the predictions files share no items")
    y_ref = clusters = None
    scores = {}
    for name, files in keyed.items():
        rows = []
        for k in files:
            idx = np.searchsorted(k.keys, common)
            if y_ref is None:
                y_ref, clusters = k.y[idx], k.video[idx]
            elif (k.y[idx] != y_ref).any():
                raise ValueError(f"{name}: labels disagree with the other files on the same items")
            rows.append(k.s[idx])
        scores[name] = np.mean(rows, axis=0)
    return Items(np.asarray(y_ref), scores, np.asarray(clusters))


def align(
    preds: Mapping[str, Sequence[Predictions]], level: str = "frame", reduce: str = "mean"
) -> Items:
    """The items every detector scored (frame level: video key, unit and frame; video level:
    the video key, frame scores reduced with ``reduce``), with each detector's score averaged
    over its predictions files (its seeds). Labels that disagree between files are an error."""
    return _align_keyed(_keyed_all({n: f for n, f in preds.items() if f}, level, reduce))


def _max_abs_z_p(
    cov: np.ndarray, z: np.ndarray, df: float, n_sim: int, rng: np.random.Generator
) -> np.ndarray:
    """P(max over all pairs i < j of |(X_i - X_j) / se_ij| >= |z|) for X ~ N(0, ``cov``) (a
    multivariate t with ``df`` degrees of freedom when finite), by ``n_sim`` draws."""
    k = len(cov)
    evals, evecs = np.linalg.eigh(cov)
    draws = rng.standard_normal((n_sim, k)) @ (evecs * np.sqrt(np.clip(evals, 0, None))).T
    if np.isfinite(df):
        draws /= np.sqrt(rng.chisquare(df, n_sim) / df)[:, None]
    i, j = np.triu_indices(k, 1)
    se = np.sqrt(np.clip(cov[i, i] + cov[j, j] - 2 * cov[i, j], 0, None))
    ok = se > 1e-150
    if not ok.any():
        return np.where(np.abs(z) > 0, 0.0, 1.0)
    peak = np.max((np.abs(draws[:, i[ok]] - draws[:, j[ok]]) / se[ok]), axis=1)
    peak.sort()
    return 1.0 - np.searchsorted(peak, np.abs(z), side="left") / n_sim


def compare_with_best(
    preds: Mapping[str, Predictions],
    *,
    level: str = "frame",
    reduce: str = "mean",
    alpha: float = 0.05,
    shown: Mapping[str, float] | None = None,
    baselines: Collection[str] = (),
    n_sim: int = 20000,
    seed: int = 0,
) -> dict[str, Comparison]:
    """Each detector of ``preds`` (one predictions file each: seed-averaged, see
    :func:`seed_average`) against the one with the best AUC, family-wise at ``alpha`` (module
    docstring: max-|z| over all pairs, t reference, small-group rule). ``shown``: the AUCs the
    table prints (with seeds, the mean of the seeds' AUCs, which can rank otherwise than the AUC
    of the averaged scores); the best is the highest of them (default: of the AUCs of ``preds``).

    ``baselines``: detectors that are never the column's best, never in the family of the tie
    test and never marked tied; each is compared with the best for information only (its
    unadjusted ``p_value``; ``p_adjusted`` NaN).

    ``p_value`` is the pair's DeLong p on the items both scored (:func:`align`; image and video
    detectors share videos but not frames, so at frame level such a pair cannot be compared);
    ``p_adjusted`` is family-wise, from the joint covariance of all the column's (non-baseline)
    detectors on the items all of them scored, by ``n_sim`` draws (seeded by ``seed``). When those
    items are too few (no shared items, fewer than 5 videos of a class), ``p_adjusted`` is the
    pair's p times the number of pairs of the family (Bonferroni, also family-wise) and the note
    says so. A detector whose comparison cannot be made is not marked tied and says why."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    names = list(preds)
    keyed = {n: k[0] for n, k in _keyed_all({n: [preds[n]] for n in names}, level, reduce).items()}
    aucs = {n: _auc(k.y, k.s) for n, k in keyed.items()}
    ranked = {n: (aucs if shown is None else shown)[n] for n in names}
    ranked = {n: v if np.isfinite(v) else -np.inf for n, v in ranked.items()}  # NaN ranks last
    candidates = [n for n in names if n not in baselines]
    out: dict[str, Comparison] = {}
    if not candidates:
        note = "only baselines in the column: no best"
        return {n: Comparison(aucs[n], np.nan, np.nan, False, False, note, True) for n in names}
    best = max(candidates, key=lambda n: (ranked[n], -names.index(n)))
    raw, notes = {}, {}
    for n in names:
        if n == best:
            continue
        try:
            items = _align_keyed({best: [keyed[best]], n: [keyed[n]]})
            pair = [items.scores[best], items.scores[n]]
            try:
                res = clustered_delong_test(items.y, *pair, items.clusters)
                diff = res.diff
            except ValueError:  # fewer than two videos of a class: only equal AUCs tie
                diff = _auc(items.y, pair[0]) - _auc(items.y, pair[1])
                if diff != 0:
                    raise
            # a difference of exactly zero has z = 0 whatever its variance (even one that
            # cannot be estimated, or on fewer videos than a p-value needs)
            raw[n] = 1.0 if diff == 0 else res.p_value
            if diff != 0 and res.note:
                notes[n] = f"no p-value: {res.note}"
        except ValueError as exc:
            raw[n], notes[n] = float("nan"), str(exc)
    family = [n for n in candidates if n != best and np.isfinite(raw[n])]
    adjusted = _family_p(keyed, best, family, raw, n_sim, seed, notes)
    out[best] = Comparison(aucs[best], float("nan"), float("nan"), True, True)
    for n in names:
        if n == best:
            continue
        q = adjusted.get(n, float("nan"))
        tied = bool(np.isfinite(q) and q >= alpha)
        out[n] = Comparison(
            aucs[n], float(raw[n]), float(q), tied, False, notes.get(n, ""), n in baselines
        )
    return out


def _family_p(
    keyed: Mapping[str, _Keyed],
    best: str,
    family: Sequence[str],
    raw: Mapping[str, float],
    n_sim: int,
    seed: int,
    notes: dict[str, str],
) -> dict[str, float]:
    """Family-wise p of each of ``family`` against ``best``: max-|z| over all pairs of
    ``[best, *family]`` from their joint clustered covariance on the items all of them scored;
    Bonferroni over those pairs when the joint items are too few (a note says so)."""
    if not family:
        return {}
    members = [best, *family]
    n_pairs = len(members) * (len(members) - 1) // 2
    why = ""
    try:
        items = _align_keyed({n: [keyed[n]] for n in members})
        why = _class_note(_cluster_counts(items.y, items.clusters), MIN_INTERVAL_UNITS)
    except ValueError as exc:
        why = str(exc)
    if why:
        for n in family:
            why_n = f"Bonferroni over {n_pairs} pairs: the items every detector scored ({why})"
            notes[n] = "; ".join(filter(None, (notes.get(n), why_n)))
        return {n: float(min(1.0, raw[n] * n_pairs)) for n in family}
    aucs, cov = clustered_auc_covariance(
        items.y, [items.scores[n] for n in members], items.clusters
    )
    df = float(sum(_cluster_counts(items.y, items.clusters)) - 2)
    var = cov[0, 0] + np.diag(cov)[1:] - 2 * cov[0, 1:]
    diff = aucs[0] - aucs[1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(
            var > 1e-300,
            diff / np.sqrt(np.clip(var, 1e-300, None)),
            np.where(np.abs(diff) < 1e-15, 0.0, np.inf),
        )
    p = _max_abs_z_p(cov, z, df, n_sim, np.random.default_rng(seed))
    return dict(zip(family, p.tolist(), strict=True))


def seed_rows(preds: Sequence[Predictions]) -> tuple[Predictions, list[np.ndarray]]:
    """The rows of the first of a detector's predictions files (one per seed) that every file
    scored, and each file's scores of those rows (frames matched by video key, unit and
    frame). Labels that disagree are an error."""
    if not preds:
        raise ValueError("no predictions to align")
    items = [c[1] for c in _item_codes(preds)]
    sorted_keys = []
    for k in items:
        order = np.argsort(k, kind="stable")
        ks = k[order]
        if len(ks) > 1 and (ks[1:] == ks[:-1]).any():
            raise ValueError("a predictions file holds the same video and frame twice")
        sorted_keys.append((order, ks))
    common = sorted_keys[0][1]
    for _, ks in sorted_keys[1:]:
        common = np.intersect1d(common, ks, assume_unique=True)
    rows = np.flatnonzero(np.isin(items[0], common, assume_unique=True))
    first = preds[0].subset(rows)
    scores = []
    for pred, (order, ks) in zip(preds, sorted_keys, strict=True):
        idx = order[np.searchsorted(ks, items[0][rows])]
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


def seed_mean_intervals(
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
) -> dict[str, dict[str, Interval]]:
    """Two intervals of the mean over seeds of every :func:`evaluation.metrics.summarize`
    metric (the value a seeded leaderboard cell shows), ``{GIVEN_MODELS: ..., OVER_SEEDS: ...}``.

    :data:`GIVEN_MODELS` holds the trained models fixed (the test-set sampling uncertainty of the
    mean; target: the mean over these seeds' models of each one's population value): for AUC a
    logit-normal interval with the variance of the mean of the seeds' AUCs, from their covariance
    clustered by video (:func:`clustered_auc_covariance`, :func:`logit_interval`); for the others a
    percentile bootstrap over videos in which each replicate draws the videos once and scores
    every seed's run on the same draw, then averages.

    :data:`OVER_SEEDS` is the interval of "the value this detector gets when trained again"
    (target: the mean over training seeds of the population value): variance = the test-set
    variance above + the between-seed variance of the seeds' values / S, Student t with S - 1
    degrees of freedom (AUC on the logit scale; the others on their own scale, clipped to
    [0, 1]). With 2 seeds its t quantile is 12.7 (95 %): wide by construction, since one
    difference of two seeds is all there is to estimate the between-seed variance from. One seed:
    NaN, with the reason.

    Both NaN, with the reason, with fewer than ``min_units`` videos of a class."""
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
    per_seed = [_summarize(r, None, fpr_targets) for r in ranked]
    point = {k: float(np.mean([v[k] for v in per_seed])) for k in per_seed[0]}
    note = _class_note(per_class, min_units)
    if note:
        empty = {k: Interval(v, float("nan"), float("nan"), 0, note) for k, v in point.items()}
        return {GIVEN_MODELS: empty, OVER_SEEDS: dict(empty)}
    rng = np.random.default_rng(seed)
    reps = np.empty((n_boot, len(point)))
    for b in range(n_boot):
        weights = np.bincount(rng.integers(0, len(uniq), len(uniq)), minlength=len(uniq))
        w = weights[codes].astype(np.float64)
        reps[b] = np.mean([list(_summarize(r, w, fpr_targets).values()) for r in ranked], axis=0)
    n_seeds = len(scores)
    t = stats.t.ppf(0.5 + confidence / 2, n_seeds - 1) if n_seeds > 1 else np.nan
    seeds_note = "" if n_seeds > 1 else "one seed: no between-seed variance"
    given, over = {}, {}
    for j, (k, v) in enumerate(point.items()):
        low, high, why = bootstrap_interval(reps[:, j], confidence, "bootstrap replicates")
        given[k] = Interval(v, low, high, int(n_boot - np.isfinite(reps[:, j]).sum()), why)
        values = np.array([s[k] for s in per_seed])
        defined = reps[np.isfinite(reps[:, j]), j]
        var = (np.var(defined, ddof=1) if len(defined) > 1 else np.nan) + (
            np.var(values, ddof=1) / n_seeds if n_seeds > 1 else np.nan
        )
        half = t * np.sqrt(var)
        ok = np.isfinite(half) and np.isfinite(v)
        lo, hi = (max(0.0, v - half), min(1.0, v + half)) if ok else (np.nan, np.nan)
        over[k] = Interval(
            v, float(lo), float(hi), 0, seeds_note or ("" if ok else why or "undefined")
        )
    # AUC: the variance of the mean of the seeds' AUCs from their clustered covariance
    aucs, cov = clustered_auc_covariance(y, scores, codes)
    var_test = float(cov.sum()) / n_seeds**2
    low, high = logit_interval(float(aucs.mean()), var_test, confidence)
    given["auc"] = Interval(float(aucs.mean()), low, high)
    if n_seeds > 1:
        var_over = var_test + float(np.var(aucs, ddof=1)) / n_seeds
        low, high = logit_interval(float(aucs.mean()), var_over, confidence, df=n_seeds - 1)
        over["auc"] = Interval(float(aucs.mean()), low, high)
    else:
        over["auc"] = Interval(float(aucs.mean()), float("nan"), float("nan"), 0, seeds_note)
    return {GIVEN_MODELS: given, OVER_SEEDS: over}


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
    """The :data:`GIVEN_MODELS` intervals of :func:`seed_mean_intervals`: the mean over seeds
    with the trained models held fixed (test-set sampling only). NaN, with the reason, with
    fewer than ``min_units`` videos of a class."""
    return seed_mean_intervals(
        preds, level=level, reduce=reduce, threshold=threshold, fpr_targets=fpr_targets,
        n_boot=n_boot, confidence=confidence, seed=seed, min_units=min_units,
    )[GIVEN_MODELS]  # fmt: skip
