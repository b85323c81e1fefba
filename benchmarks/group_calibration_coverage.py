"""Coverage of the ECE-gap interval of :func:`fairness.group_calibration.group_calibration` by
simulation (issue 48, item 3).

Clustered videos: a frame's logit is ``z = +/-mu + u + e`` (fakes +, reals -) with a video
effect ``u ~ N(0, video_sd^2)`` and frame noise ``e ~ N(0, frame_sd^2)``, so ``z`` given the
class is ``N(+/-mu, v)``, ``v = video_sd^2 + frame_sd^2``. The calibrated P(fake) of a frame
with fake share ``pi`` is ``sigmoid(logit(pi) + 2 mu z / v)``; a detector scores
``sigmoid(k (logit(pi) + 2 mu z / v))``, over-confident for ``k > 1``. Two groups, a majority
``a`` and a minority ``b`` whose smaller class has 6-12 videos, with the same real/fake mix.

* **Null** (equal calibration across groups): both groups scored with the same ``k``
  (``common_scale``), so their population ECEs are equal and the true gap ``ECE_a - ECE_b`` is
  0; the minority's ECE is estimated on fewer videos, so it is biased upwards more.
* **Alternative** (one group over-confident): group ``b`` scored with ``k = alt_scale``; the
  true gap is the difference of the two population ECEs (15 equal-width bins), computed by
  numerical integration over ``z`` (:func:`population_ece`), not by simulation.

Per hypothesis it measures, with exact (Clopper-Pearson) binomial intervals on each share:
``cover`` (the gap's interval holds the true gap), ``cover_a`` / ``cover_b`` (each group's
interval holds its population ECE) and ``excludes_0`` (the gap's interval excludes 0: the
false alarm rate under the null, the power under the alternative). Used by
``scripts/bench_group_calibration.py --coverage`` (JSON) and, small, by the tests.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats
from scipy.special import expit, logit

from fairforensics.evaluation.calibration.metrics import bin_edges, bin_of
from fairforensics.fairness.group_calibration import N_BINS, group_calibration


@dataclass(frozen=True)
class Scenario:
    """Groups, class mix and score model of the simulated data sets."""

    majority_videos: int = 60
    minority_smaller_class: tuple[int, int] = (6, 12)  # videos of b's smaller class
    real_share: float = 0.5  # of both groups
    frames: tuple[int, int] = (4, 16)  # frames per video, uniform
    separation: float = 1.0  # mu: class means of the logits at -mu (real) and +mu (fake)
    video_sd: float = 1.0
    frame_sd: float = 0.6
    common_scale: float = 1.5  # k of both groups under the null (1: calibrated)
    alt_scale: float = 3.0  # k of group b under the alternative

    def scales(self, alternative: bool) -> tuple[float, float]:
        """``k`` of groups a and b."""
        return self.common_scale, self.alt_scale if alternative else self.common_scale


def _class_counts(share: float, smaller: int) -> tuple[int, int]:
    """(real, fake) videos of a group whose smaller class has ``smaller`` videos."""
    if share <= 0.5:
        return smaller, round(smaller * (1 - share) / share)
    return round(smaller * share / (1 - share)), smaller


def _score(z: np.ndarray, sc: Scenario, fake_share: float, k: float) -> np.ndarray:
    """P(fake) of logit ``z`` scaled by ``k`` (``k`` 1: calibrated at frame level)."""
    v = sc.video_sd**2 + sc.frame_sd**2
    return expit(k * (logit(fake_share) + 2 * sc.separation * z / v))


def population_ece(sc: Scenario, k: float, n_bins: int = N_BINS, points: int = 400_001) -> float:
    """The ECE of an infinite group scored with scale ``k``: ``sum_b |E[(y - s) 1{s in b}]|``,
    integrated over ``z`` on a grid (each class's density ``N(+/-mu, v)``)."""
    sd = np.hypot(sc.video_sd, sc.frame_sd)
    z = np.linspace(-sc.separation - 12 * sd, sc.separation + 12 * sd, points)
    dz = z[1] - z[0]
    fake_share = 1 - sc.real_share
    s = _score(z, sc, fake_share, k)
    bins = bin_of(s, bin_edges(s, n_bins, "uniform"))
    out = np.zeros(n_bins)
    for label, weight in ((0, sc.real_share), (1, fake_share)):
        mass = weight * stats.norm.pdf(z, (2 * label - 1) * sc.separation, sd) * dz
        out += np.bincount(bins, weights=mass * (label - s), minlength=n_bins)
    return float(np.abs(out).sum())


def simulate(
    sc: Scenario, rng: np.random.Generator, alternative: bool = False
) -> tuple[np.ndarray, ...]:
    """One data set: labels, scores, groups and video ids of its frames."""
    n_a_real = round(sc.majority_videos * sc.real_share)
    lo, hi = sc.minority_smaller_class
    plan = [
        ("a", (n_a_real, sc.majority_videos - n_a_real)),
        ("b", _class_counts(sc.real_share, int(rng.integers(lo, hi + 1)))),
    ]
    labels = np.concatenate([np.repeat([0, 1], counts) for _, counts in plan])
    groups = np.concatenate([np.full(sum(c), g) for g, c in plan])
    scale = dict(zip("ab", sc.scales(alternative), strict=True))
    n_frames = rng.integers(sc.frames[0], sc.frames[1] + 1, len(labels))
    vid = np.repeat(np.arange(len(labels)), n_frames)
    sign = 2 * labels - 1
    video_logit = sign * sc.separation + rng.normal(0, sc.video_sd, len(labels))
    z = video_logit[vid] + rng.normal(0, sc.frame_sd, len(vid))
    k = np.array([scale[g] for g in groups])[vid]
    return labels[vid], _score(z, sc, 1 - sc.real_share, k), groups[vid], vid


def _rate(hits: int, n: int) -> dict[str, float]:
    """A share with its exact 95 % binomial (Clopper-Pearson) interval."""
    ci = stats.binomtest(hits, n).proportion_ci(0.95, method="exact")
    return {"rate": hits / n, "low": float(ci.low), "high": float(ci.high), "n": n}


def coverage(sc: Scenario, n_sets: int, n_boot: int = 500, seed: int = 0) -> dict[str, object]:
    """Coverage of the gap's and the groups' intervals and the share of gap intervals that
    exclude 0, under the null and the alternative (module docstring). Seeded."""
    rng = np.random.default_rng(seed)
    out: dict[str, object] = {"scenario": asdict(sc), "n_sets": n_sets, "n_boot": n_boot}
    for hypothesis, alternative in (("null", False), ("alternative", True)):
        truth = dict(zip("ab", (population_ece(sc, k) for k in sc.scales(alternative)),
                         strict=True))  # fmt: skip
        hits = {"cover": 0, "cover_a": 0, "cover_b": 0, "excludes_0": 0}
        for _ in range(n_sets):
            y, s, g, vid = simulate(sc, rng, alternative)
            res = group_calibration(y, s, g, vid, n_boot=n_boot, seed=int(rng.integers(2**31)))
            gap = res.gap
            hits["cover"] += gap.low <= truth["a"] - truth["b"] <= gap.high
            hits["excludes_0"] += not gap.low <= 0 <= gap.high
            for name in "ab":
                low, high = res.ci[name]
                hits[f"cover_{name}"] += low <= truth[name] <= high
        out[hypothesis] = {
            "true_ece": truth,
            "true_gap": truth["a"] - truth["b"],
            **{k: _rate(v, n_sets) for k, v in hits.items()},
        }
    return out
