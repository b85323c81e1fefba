"""Calibration of the paired change of a gap (:func:`fairness.paired.paired_change`) by
simulation.

Clustered videos as in :mod:`benchmarks.fairness_calibration`: a video's frames share a video
effect on the logit scale; every group has the same number of real and fake videos and the
same score distribution on the clean scoring. The *changed* scoring (a perturbation) lowers every
fake's logit by ``shift`` (all groups alike) and group ``b``'s fakes by ``extra`` more, and adds
frame noise; with ``independent`` it is drawn anew (new video effects and frame noise),
independent of the clean one. The null "the metric changes by the same amount in every group"
holds when ``extra`` is 0.

Per scenario and metric it measures, with exact (Clopper-Pearson) binomial intervals:

* ``true_change``: the population change of the pair (a, b) (:func:`true_change`);
* ``reject``: share of data sets with p < ``level`` (under the null the target is ``level``,
  otherwise it is the power);
* ``cover``: share of data sets whose interval contains the true change (0 under the null);
* with more than two groups, ``naive_reject`` / ``naive_cover``: the same for the pair chosen
  after looking (the largest clean gap) tested as if it were fixed (no correction), which is
  what issue 36 found wrong;
* with ``n_old`` > 0, ``old_reject`` / ``old_cover``: the statistics used before issue 36 (a
  permutation test swapping each unit's clean and perturbed rows; a percentile bootstrap of the
  cells stratified by group x class), re-implemented here for comparison only.

Used by ``scripts/bench_paired_calibration.py`` (JSON) and, small, by the tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
from scipy import optimize, stats

from fairforensics.benchmarks.fairness_calibration import _rate
from fairforensics.evaluation.confidence import percentile_interval, stratified_multiplicities
from fairforensics.evaluation.metrics import factorize
from fairforensics.fairness.gaps import group_gaps
from fairforensics.fairness.paired import _metric, pair_of, paired_change

#: Metrics whose calibration is measured by default.
METRICS: tuple[str, ...] = ("fpr", "fnr", "acc", "error_rate", "auc")
_GROUPS = "abcdefgh"


@dataclass(frozen=True)
class PairedScenario:
    """Groups, videos and the perturbation of the simulated data sets."""

    name: str
    n_groups: int = 2
    videos: int = 20  # per group and class
    frames: tuple[int, int] = (4, 8)  # frames per video, uniform
    separation: float = 1.2  # class means of the video logits: -separation, +separation
    video_sd: float = 1.0
    frame_sd: float = 0.6
    shift: float = 1.0  # every fake's logit lowered by this in the changed scoring
    extra: float = 0.0  # group b's fakes lowered by this more: a true change of the gaps
    noise_sd: float = 0.3  # frame noise the perturbation adds
    independent: bool = False  # the changed scoring drawn anew, independent of the clean one


def simulate(
    sc: PairedScenario, rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """One data set: the clean and the changed arrays (``y, s, g, u`` frame rows, as
    :func:`fairness.paired.side_arrays` gives them)."""
    names = list(_GROUPS[: sc.n_groups])
    vg = np.repeat(names, 2 * sc.videos)
    vy = np.tile(np.repeat([0, 1], sc.videos), sc.n_groups)
    sign = 2 * vy - 1
    n_frames = rng.integers(sc.frames[0], sc.frames[1] + 1, len(vy))
    vid = np.repeat(np.arange(len(vy)), n_frames)

    def logits() -> np.ndarray:
        video = sign * sc.separation + rng.normal(0, sc.video_sd, len(vy))
        return video[vid] + rng.normal(0, sc.frame_sd, len(vid))

    clean = logits()
    base = logits() if sc.independent else clean
    drop = sc.shift + np.where(vg == "b", sc.extra, 0.0)
    changed = base - (vy * drop)[vid] + rng.normal(0, sc.noise_sd, len(vid))
    rows = {"y": vy[vid], "g": vg[vid].astype(object), "u": vid.astype(str).astype(object)}
    sigmoid = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    return rows | {"s": sigmoid(clean)}, rows | {"s": sigmoid(changed)}


def true_change(sc: PairedScenario, pair: tuple[str, str]) -> dict[str, float]:
    """Population value of ``delta_a - delta_b`` per metric (frame level; 0 for every metric
    and pair without ``b``, or when ``extra`` is 0)."""
    sd = np.hypot(sc.video_sd, sc.frame_sd)
    sd_c = np.hypot(sd, sc.noise_sd)  # the changed scoring's spread (fresh or not)

    def fnr(drop: float) -> float:
        return float(stats.norm.cdf((-sc.separation + drop) / sd_c))

    def auc(drop: float) -> float:
        return float(stats.norm.cdf((2 * sc.separation - drop) / (np.sqrt(2) * sd_c)))

    d_fnr = fnr(sc.shift) - fnr(sc.shift + sc.extra)  # change of FNR_others - FNR_b
    d_auc = auc(sc.shift) - auc(sc.shift + sc.extra)
    sign = 1.0 if pair[1] == "b" else -1.0 if pair[0] == "b" else 0.0
    return {
        "fpr": 0.0,
        "fnr": sign * d_fnr,
        "error_rate": sign * d_fnr / 2,
        "acc": -sign * d_fnr / 2,  # equal real and fake videos: half the frames are fakes
        "auc": sign * d_auc,
        "eer": float("nan") if sign and sc.extra else 0.0,
    }


def extra_for(change: float, sc: PairedScenario, metric: str = "fnr") -> float:
    """The ``extra`` drop of group b's fakes that makes the true change of ``metric`` (pair
    ``(a, b)``, :func:`true_change`) equal ``change``."""
    return float(
        optimize.brentq(
            lambda x: true_change(replace(sc, extra=x), ("a", "b"))[metric] - change, 0.0, 10.0
        )
    )


def _old_change(
    clean: dict[str, np.ndarray],
    changed: dict[str, np.ndarray],
    metric: str,
    pair: tuple[str, str],
    n: int,
    rng: np.random.Generator,
) -> tuple[float, float, float]:
    """Pre-issue-36 statistics of the change: (p of the clean/perturbed swap test, low, high of
    the percentile bootstrap of cells stratified by group x class)."""
    y, s, g, u = (np.concatenate([clean[k], changed[k]]) for k in ("y", "s", "g", "u"))
    side = np.r_[np.zeros(len(clean["y"]), bool), np.ones(len(changed["y"]), bool)]
    codes, _ = factorize(u.astype(str))
    strata = np.zeros(codes.max() + 1, dtype=object)
    strata[codes] = [f"{a}{b}" for a, b in zip(g, y, strict=True)]

    def change(w_clean: np.ndarray, w_changed: np.ndarray) -> np.ndarray:
        out = 0.0
        for grp, sign in ((pair[0], 1.0), (pair[1], -1.0)):
            rows = g == grp
            for w, sgn in ((w_changed, 1.0), (w_clean, -1.0)):
                out = out + sign * sgn * _metric(metric, y[rows], s[rows], w[:, rows], 0.5)
        return out

    ones = np.ones((1, len(y)))
    observed = float(change(ones * ~side, ones * side)[0])
    boot = np.concatenate(
        [change(b[:, codes] * ~side, b[:, codes] * side) for b in
         stratified_multiplicities(rng, strata, n)]
    )  # fmt: skip
    moved = rng.integers(0, 2, size=(n, len(strata))).astype(bool)[:, codes] ^ side
    perm = change((~moved).astype(float), moved.astype(float))
    perm = perm[np.isfinite(perm)]
    p = float((1 + np.sum(np.abs(perm) >= abs(observed) - 1e-12)) / (1 + perm.size))
    return (p, *percentile_interval(boot[np.isfinite(boot)]))


def calibrate(
    sc: PairedScenario,
    n_sets: int,
    *,
    level: float = 0.05,
    seed: int = 0,
    metrics: Sequence[str] = METRICS,
    n_old: int = 0,
) -> dict[str, object]:
    """Rejection rate and coverage of every metric's paired change over ``n_sets`` data sets
    (module docstring); rates with binomial intervals. ``n_old``: replicates of the old
    statistics (0: not measured)."""
    keys = ("reject", "cover", "naive_reject", "naive_cover", "old_reject", "old_cover")
    tally = {m: dict.fromkeys(keys, 0) for m in metrics}
    defined = {m: 0 for m in metrics}
    for k in range(n_sets):
        rng = np.random.default_rng([seed, k])
        clean, changed = simulate(sc, rng)
        gaps = group_gaps(
            clean["y"], clean["s"], clean["g"], clean["u"], metrics=metrics, n_boot=0, n_perm=0
        )
        for m in metrics:
            a, b, n_pairs = pair_of(gaps, m, None)
            truth = true_change(sc, (a, b))[m]
            for prefix, n in (("", n_pairs), ("naive_", 1)):
                if prefix and n_pairs == 1:
                    continue
                res = paired_change(clean, changed, metric=m, pair=(a, b), n_pairs=n)
                tally[m][f"{prefix}reject"] += int(res["change_p"] < level)
                if np.isfinite(res["change_low"]) and not prefix:
                    defined[m] += 1
                tally[m][f"{prefix}cover"] += int(res["change_low"] <= truth <= res["change_high"])
            if n_old:
                p, low, high = _old_change(clean, changed, m, (a, b), n_old, rng)
                tally[m]["old_reject"] += int(p < level)
                tally[m]["old_cover"] += int(low <= truth <= high)
    out: dict[str, object] = {"scenario": sc.name, "settings": asdict(sc), "sets": n_sets}
    truth = true_change(sc, ("a", "b"))
    for m in metrics:
        row = {
            "true_change": truth[m],  # of the pair (a, b): change of group a's minus b's
            "reject": _rate(tally[m]["reject"], n_sets),
            "cover": _rate(tally[m]["cover"], defined[m]),
        }
        if sc.n_groups > 2:
            row["naive_reject"] = _rate(tally[m]["naive_reject"], n_sets)
            row["naive_cover"] = _rate(tally[m]["naive_cover"], defined[m])
        if n_old:
            row["old_reject"] = _rate(tally[m]["old_reject"], n_sets)
            row["old_cover"] = _rate(tally[m]["old_cover"], n_sets)
        out[m] = row
    return out


#: The scenarios of docs/evaluation.md ("Calibration of the paired change"), after issue 36.
SCENARIOS: tuple[PairedScenario, ...] = (
    PairedScenario("common shift (null), 20 videos per group and class"),
    PairedScenario("common shift + gap change, 20 videos", extra=1.0),
    PairedScenario("common shift (null), 6 videos", videos=6),
    PairedScenario("common shift + gap change, 6 videos", videos=6, extra=1.0),
    PairedScenario("independent draws (null), 4 groups of 10 videos", n_groups=4, videos=10,
                   shift=0.0, independent=True),
    PairedScenario("common shift + FNR gap change of -0.2, 20 videos",
                   extra=extra_for(-0.2, PairedScenario(""))),
    PairedScenario("common shift + FNR gap change of -0.2, 6 videos", videos=6,
                   extra=extra_for(-0.2, PairedScenario(""))),
)  # fmt: skip
