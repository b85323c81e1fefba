"""Calibration of the fairness statistics (:func:`fairness.gaps.group_gaps`) by simulation.

Clustered videos: a video's frames share a video effect on the logit scale. One majority group
and one or two minority groups whose smaller class has 6-12 videos, with different real/fake
mixes. Under the null the scores do not depend on the group (given the class); under the
alternative the minority group ``b`` is harder (its real videos score higher, its fakes lower).

Per scenario it measures, with exact (Clopper-Pearson) binomial intervals on each rate:

* ``null_reject``: share of null data sets with p < ``level`` (the target is ``level``);
* ``null_cover``: share of null data sets whose interval of the gap contains 0;
* ``alt_cover``: share of alternative data sets whose interval contains the true gap;
* ``power``: share of alternative data sets with p < ``level``;
* ``old_null_reject`` / ``old_null_cover`` (FPR, FNR): the tests and intervals used before
  issue 23 (group labels permuted over all videos; percentile bootstrap of videos within each
  group), re-implemented here for comparison only.

Used by ``scripts/bench_fairness_calibration.py`` (JSON) and, small, by the tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from fairforensics.evaluation.confidence import bootstrap_multiplicities, percentile_interval
from fairforensics.fairness.gaps import group_gaps

#: Metrics whose calibration is measured by default; ``"eer"`` (bootstrap intervals) on request.
METRICS: tuple[str, ...] = ("fpr", "fnr", "acc", "error_rate", "auc")
ALL_METRICS: tuple[str, ...] = (*METRICS, "eer")
_OLD = ("fpr", "fnr")


@dataclass(frozen=True)
class Scenario:
    """Groups and class mixes of the simulated data sets."""

    n_groups: int = 2  # "a" majority; "b" minority; "c" a second minority with a's mix
    real_share: tuple[float, float] = (0.5, 0.3)  # of the majority, of minority b
    majority_videos: int = 60
    minority_smaller_class: tuple[int, int] = (6, 12)  # videos of a minority's smaller class
    frames: tuple[int, int] = (4, 16)  # frames per video, uniform
    separation: float = 1.2  # class means of the video logits: -separation (real), +separation
    video_sd: float = 1.0  # video effect
    frame_sd: float = 0.6  # frame noise around its video
    gap: float = 1.0  # alternative: logit shift of b's videos towards the wrong side

    @property
    def name(self) -> str:
        share = "/".join(f"{p:g}" for p in self.real_share)
        return f"{self.n_groups} groups, real share {share}"


def _class_counts(share: float, smaller: int) -> tuple[int, int]:
    """(real, fake) videos of a group whose smaller class has ``smaller`` videos."""
    if share <= 0.5:
        return smaller, round(smaller * (1 - share) / share)
    return round(smaller * share / (1 - share)), smaller


def simulate(
    sc: Scenario, rng: np.random.Generator, alternative: bool = False
) -> tuple[np.ndarray, ...]:
    """One data set: labels, scores, groups, video ids (frame rows) and the true gaps of
    ``b - a`` per metric (0 under the null; ACC's from the realised class shares)."""
    lo, hi = sc.minority_smaller_class
    plan = [("a", round(sc.majority_videos * sc.real_share[0]))]
    plan[0] = ("a", (plan[0][1], sc.majority_videos - plan[0][1]))
    plan.append(("b", _class_counts(sc.real_share[1], int(rng.integers(lo, hi + 1)))))
    if sc.n_groups == 3:
        plan.append(("c", _class_counts(sc.real_share[0], int(rng.integers(lo, hi + 1)))))
    labels, groups = [], []
    for g, (n_real, n_fake) in plan:
        labels += [0] * n_real + [1] * n_fake
        groups += [g] * (n_real + n_fake)
    vy, vg = np.array(labels), np.array(groups)
    sign = 2 * vy - 1
    shift = np.where((vg == "b") & alternative, -sign * sc.gap, 0.0)
    logit = sign * sc.separation + shift + rng.normal(0, sc.video_sd, len(vy))
    n_frames = rng.integers(sc.frames[0], sc.frames[1] + 1, len(vy))
    vid = np.repeat(np.arange(len(vy)), n_frames)
    s = 1 / (1 + np.exp(-(logit[vid] + rng.normal(0, sc.frame_sd, len(vid)))))
    return vy[vid], s, vg[vid], vid, _true_gaps(sc, alternative)


def _true_gaps(sc: Scenario, alternative: bool) -> dict[str, float]:
    """Population value of ``metric_b - metric_a`` at frame level (FPR = FNR in each group by
    symmetry, so ACC = 1 - that rate whatever the class mix)."""
    sd = np.hypot(sc.video_sd, sc.frame_sd)
    shift = sc.gap if alternative else 0.0
    err_a = stats.norm.cdf(-sc.separation / sd)
    err_b = stats.norm.cdf((-sc.separation + shift) / sd)
    auc = [stats.norm.cdf(2 * (sc.separation - s) / (np.sqrt(2) * sd)) for s in (0.0, shift)]
    return {
        "fpr": err_b - err_a,
        "fnr": err_b - err_a,
        "error_rate": err_b - err_a,
        "eer": err_b - err_a,  # symmetric classes: the EER is the error rate at logit 0
        "acc": err_a - err_b,
        "auc": auc[1] - auc[0],
    }


def _old_tests(
    y: np.ndarray, s: np.ndarray, g: np.ndarray, vid: np.ndarray, n: int, rng: np.random.Generator
) -> dict[str, tuple[float, float, float]]:
    """Pre-issue-23 FPR/FNR statistics of ``b - a``: (p of the all-video permutation test,
    low, high of the percentile bootstrap of videos within each group)."""
    wrong = (s >= 0.5).astype(np.int64) != y
    n_vid = int(vid.max()) + 1
    counts = np.stack(
        [np.bincount(vid, (y == k) * 1.0, n_vid) for k in (0, 1)]
        + [np.bincount(vid, (y == k) & wrong, n_vid) for k in (0, 1)],
        axis=1,
    )  # n_real, n_fake, false positives, false negatives per video
    vg = np.empty(n_vid, dtype=object)
    vg[vid] = g

    def rates(member: np.ndarray) -> np.ndarray:  # [reps, videos] -> [reps, (fpr, fnr)]
        c = member @ counts
        with np.errstate(invalid="ignore", divide="ignore"):
            return c[:, 2:] / c[:, :2]

    obs = rates(np.stack([vg == "b", vg == "a"]).astype(float))
    diff = obs[0] - obs[1]
    perm = np.stack([rng.permutation(vg) for _ in range(n)])
    null = rates((perm == "b").astype(float)) - rates((perm == "a").astype(float))
    boot = {}
    for name in ("a", "b"):
        members = np.flatnonzero(vg == name)
        mult = np.zeros((n, n_vid))
        mult[:, members] = np.concatenate(list(bootstrap_multiplicities(rng, len(members), n)))
        boot[name] = rates(mult)
    d_boot = boot["b"] - boot["a"]
    out = {}
    for k, m in enumerate(_OLD):
        valid = np.abs(null[:, k])[np.isfinite(null[:, k])]
        p = (1 + np.sum(valid >= abs(diff[k]) - 1e-12)) / (1 + valid.size)
        out[m] = (float(p), *percentile_interval(d_boot[:, k]))
    return out


def _rate(hits: int, n: int) -> dict[str, float]:
    """A share with its exact 95 % binomial (Clopper-Pearson) interval."""
    if n == 0:
        return {"rate": float("nan"), "low": float("nan"), "high": float("nan"), "n": 0}
    ci = stats.binomtest(hits, n).proportion_ci(0.95, method="exact")
    return {"rate": hits / n, "low": float(ci.low), "high": float(ci.high), "n": n}


def calibrate(
    sc: Scenario,
    n_sets: int,
    n_boot: int = 500,
    n_perm: int = 500,
    level: float = 0.05,
    seed: int = 0,
    metrics: Sequence[str] = METRICS,
) -> dict[str, object]:
    """Null rejection, coverage and power of every metric's gap over ``n_sets`` data sets each
    under the null and the alternative (module docstring); rates with binomial intervals."""
    tally = {
        m: dict.fromkeys(("null_reject", "null_cover", "alt_cover", "power"), 0) for m in metrics
    }
    defined = {m: {"null": 0, "alt": 0} for m in metrics}
    old = {m: {"old_null_reject": 0, "old_null_cover": 0, "n": 0} for m in _OLD}
    for k in range(n_sets):
        for alternative in (False, True):
            rng = np.random.default_rng([seed, k, alternative])
            y, s, g, vid, truth = simulate(sc, rng, alternative)
            res = group_gaps(
                y,
                s,
                g,
                vid,
                metrics=metrics,
                n_boot=n_boot,
                n_perm=n_perm,
                seed=int(rng.integers(2**31)),
            )
            for m in metrics:
                gap = res.gaps[m]
                # true gap of the reported pair (a - b in sorted order); 0 for pairs without b
                target = 0.0
                if alternative and "b" in (gap.group_a, gap.group_b):
                    target = truth[m] if gap.group_a == "b" else -truth[m]
                covered = gap.low <= target <= gap.high
                rejected = gap.p_value < level
                if np.isfinite(gap.low):
                    defined[m]["alt" if alternative else "null"] += 1
                    tally[m]["alt_cover" if alternative else "null_cover"] += int(covered)
                tally[m]["power" if alternative else "null_reject"] += int(rejected)
            if not alternative and sc.n_groups == 2:
                for m, (p, low, high) in _old_tests(y, s, g, vid, n_perm, rng).items():
                    old[m]["old_null_reject"] += int(p < level)
                    old[m]["old_null_cover"] += int(low <= 0.0 <= high)
                    old[m]["n"] += 1
    out: dict[str, object] = {"scenario": sc.name, "settings": asdict(sc), "sets": n_sets}
    for m in metrics:
        row = {
            "null_reject": _rate(tally[m]["null_reject"], n_sets),
            "null_cover": _rate(tally[m]["null_cover"], defined[m]["null"]),
            "alt_cover": _rate(tally[m]["alt_cover"], defined[m]["alt"]),
            "power": _rate(tally[m]["power"], n_sets),
        }
        if m in _OLD and old[m]["n"]:
            row["old_null_reject"] = _rate(old[m]["old_null_reject"], old[m]["n"])
            row["old_null_cover"] = _rate(old[m]["old_null_cover"], old[m]["n"])
        out[m] = row
    return out


#: The scenarios of docs/fairness.md: 2 and 3 groups, real shares 0.5/0.3 and 0.6/0.2.
SCENARIOS: tuple[Scenario, ...] = tuple(
    Scenario(n_groups=k, real_share=share) for k in (2, 3) for share in ((0.5, 0.3), (0.6, 0.2))
)
