"""ISO/IEC 30107-3 presentation-attack-detection metrics (paper 001, Sec. IV-B).

Labels: 0 = bona fide, 1 = attack; a score is the probability of attack and a presentation is
classified as an attack when ``score >= threshold``. Hence

* APCER(t) = share of attack presentations scored below ``t`` (accepted as bona fide);
* BPCER(t) = share of bona fide presentations scored at or above ``t`` (rejected as attacks);
* ACER(t) = (APCER(t) + BPCER(t)) / 2;
* EER: the error rate where APCER = BPCER;
* BPCER@APCER=x: BPCER at the largest threshold whose APCER is <= x.

**Species rule** (one rule for every figure here and in :mod:`fairness.abf`): how attack
species (presentation-attack instruments; the ``method`` column) enter APCER.

* ``"pooled"`` (default): APCER is the plain proportion of all attacks, as paper 001's
  equations and definitions use ("the proportion of attack presentations incorrectly
  classified"); its FDR/ABF values are reproduced only with it;
* ``"worst"``: ISO/IEC 30107-3 computes APCER per species and reports the maximum; the
  threshold at APCER = x is then the smallest of the species' own thresholds and the EER is
  where the worst species' APCER equals BPCER.

Per-species APCERs are reported under either rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fairforensics.evaluation.metrics import SingleClassError, check_scores, eer

#: How attack species enter APCER: a plain proportion (paper 001) or the worst species (ISO).
SPECIES_RULES: tuple[str, ...] = ("pooled", "worst")

#: The operating points the paper reports (1-BPCER at APCER = 0.5, 1, 5, 10, 15, 20 %).
ISO_APCER_POINTS: tuple[float, ...] = (0.005, 0.01, 0.05, 0.10, 0.15, 0.20)


def apcer(attack_scores: Sequence, threshold: float) -> float:
    """Share of attack scores below ``threshold`` (attacks classified as bona fide)."""
    scores = np.asarray(attack_scores, dtype=np.float64)
    if scores.size == 0:
        raise SingleClassError("APCER needs at least one attack presentation")
    return float(np.mean(scores < threshold))


def bpcer(bona_fide_scores: Sequence, threshold: float) -> float:
    """Share of bona fide scores at or above ``threshold`` (bona fide classified as attacks)."""
    scores = np.asarray(bona_fide_scores, dtype=np.float64)
    if scores.size == 0:
        raise SingleClassError("BPCER needs at least one bona fide presentation")
    return float(np.mean(scores >= threshold))


def threshold_at_apcer(attack_scores: Sequence, x: float) -> float:
    """The largest threshold ``t`` with APCER(t) <= ``x`` on these attack scores.

    With the ``n`` attack scores sorted, ``t`` is the ``(floor(x n) + 1)``-th smallest: at most
    ``floor(x n)`` attacks lie strictly below it, and any larger threshold would accept more.
    Taking the largest such threshold minimises BPCER at that APCER.
    """
    if not 0.0 <= x < 1.0:
        raise ValueError(f"APCER operating point must be in [0, 1), got {x}")
    scores = np.sort(np.asarray(attack_scores, dtype=np.float64))
    if scores.size == 0:
        raise SingleClassError("a threshold at APCER = x needs at least one attack presentation")
    k = math.floor(x * scores.size + 1e-9)
    return float(scores[k])


def _species_scores(
    y_true: np.ndarray, y_score: np.ndarray, species: Sequence | None
) -> dict[str, np.ndarray]:
    attacks = y_true == 1
    if species is None:
        return {"attack": y_score[attacks]}
    species = np.asarray(species, dtype=object)
    if species.shape != y_true.shape:
        raise ValueError("species must have one entry per sample")
    return {
        str(s): y_score[attacks & (species == s)]
        for s in sorted({str(v) for v in species[attacks]})
    }


def apcer_per_species(
    y_true: Sequence, y_score: Sequence, threshold: float, species: Sequence | None = None
) -> dict[str, float]:
    """APCER of each attack species (``species`` is e.g. the ``method`` column)."""
    y_true, y_score = check_scores(y_true, y_score)
    per = _species_scores(y_true, y_score, species)
    if not any(len(s) for s in per.values()):
        raise SingleClassError("APCER needs at least one attack presentation")
    return {name: apcer(scores, threshold) for name, scores in per.items()}


def check_species_rule(rule: str) -> str:
    """``rule`` if it is one of :data:`SPECIES_RULES`, else a ValueError naming the choices."""
    if rule not in SPECIES_RULES:
        raise ValueError(f"species rule must be one of {list(SPECIES_RULES)}, got {rule!r}")
    return rule


def threshold_at_apcer_species(
    y_true: Sequence,
    y_score: Sequence,
    x: float,
    species: Sequence | None = None,
    rule: str = "worst",
) -> float:
    """Largest threshold whose APCER under ``rule`` is <= ``x``.

    ``"worst"``: APCER_max(t) <= x holds exactly when every species' APCER(t) <= x, so the
    answer is the smallest of the species' own thresholds. ``"pooled"``: the threshold of all
    attack scores together (:func:`threshold_at_apcer`).
    """
    y_true, y_score = check_scores(y_true, y_score)
    if check_species_rule(rule) == "pooled":
        return threshold_at_apcer(y_score[y_true == 1], x)
    per = _species_scores(y_true, y_score, species)
    if not any(len(s) for s in per.values()):
        raise SingleClassError("a threshold at APCER = x needs at least one attack presentation")
    return min(threshold_at_apcer(s, x) for s in per.values() if len(s))


def apcer_rule(
    y_true: Sequence,
    y_score: Sequence,
    threshold: float,
    species: Sequence | None = None,
    rule: str = "pooled",
) -> float:
    """APCER at ``threshold``: all attacks pooled, or the worst species (``rule``)."""
    y_true, y_score = check_scores(y_true, y_score)
    if check_species_rule(rule) == "pooled":
        return apcer(y_score[y_true == 1], threshold)
    return max(apcer_per_species(y_true, y_score, threshold, species).values())


def eer_species(
    y_true: Sequence, y_score: Sequence, species: Sequence | None = None, rule: str = "pooled"
) -> tuple[float, float]:
    """EER and its threshold under ``rule``.

    ``"pooled"`` is :func:`evaluation.metrics.eer`. ``"worst"``: APCER_max(t) rises and BPCER(t)
    falls with t, so their difference changes sign once; between the two candidate thresholds
    (distinct scores) around the change both curves are interpolated linearly, as
    :func:`evaluation.metrics.eer` does for the pooled curves.
    """
    y_true, y_score = check_scores(y_true, y_score)
    if y_true.min() == y_true.max():
        raise SingleClassError("the EER needs both bona fide and attack presentations")
    if check_species_rule(rule) == "pooled":
        return eer(y_true, y_score)
    per = [s for s in _species_scores(y_true, y_score, species).values() if len(s)]
    bona = np.sort(y_score[y_true == 0])
    cand = np.r_[np.unique(y_score), np.inf]  # a sample is an attack when score >= t
    apcer_max = np.max([np.searchsorted(np.sort(s), cand, "left") / len(s) for s in per], axis=0)
    bpcer_t = 1.0 - np.searchsorted(bona, cand, "left") / len(bona)
    diff = apcer_max - bpcer_t  # non-decreasing in t, from <= 0 to >= 0
    i = int(np.argmax(diff >= 0))
    if diff[i] == 0 or i == 0:
        return float((apcer_max[i] + bpcer_t[i]) / 2.0), float(cand[i])
    w = -diff[i - 1] / (diff[i] - diff[i - 1])
    rate = apcer_max[i - 1] + w * (apcer_max[i] - apcer_max[i - 1])
    t_hi = cand[i] if np.isfinite(cand[i]) else cand[i - 1]
    return float(rate), float(cand[i - 1] + w * (t_hi - cand[i - 1]))


def iso_metrics(
    y_true: Sequence,
    y_score: Sequence,
    threshold: float = 0.5,
    species: Sequence | None = None,
    apcer_points: Sequence[float] = ISO_APCER_POINTS,
    species_rule: str = "pooled",
) -> dict[str, object]:
    """Every ISO/IEC 30107-3 figure of one score set as a JSON-able dict.

    Keys: ``species_rule``, ``apcer_per_species``, ``apcer`` (under ``species_rule``),
    ``bpcer``, ``acer`` (at ``threshold``), ``eer``, ``eer_threshold`` and ``bpcer_at_apcer``
    (``{"0.5%": ...}``) with the thresholds used in ``threshold_at_apcer``.
    """
    y_true, y_score = check_scores(y_true, y_score)
    check_species_rule(species_rule)
    if y_true.min() == y_true.max():
        raise SingleClassError("ISO PAD metrics need both bona fide and attack presentations")
    per_species = apcer_per_species(y_true, y_score, threshold, species)
    apcer_max = apcer_rule(y_true, y_score, threshold, species, species_rule)
    bp = bpcer(y_score[y_true == 0], threshold)
    rate, thr = eer_species(y_true, y_score, species, species_rule)
    at: dict[str, float] = {}
    thresholds: dict[str, float] = {}
    for x in apcer_points:
        t = threshold_at_apcer_species(y_true, y_score, x, species, species_rule)
        key = f"{100 * x:g}%"
        thresholds[key] = t
        at[key] = bpcer(y_score[y_true == 0], t)
    return {
        "threshold": float(threshold),
        "species_rule": species_rule,
        "apcer_per_species": per_species,
        "apcer": apcer_max,
        "bpcer": bp,
        "acer": (apcer_max + bp) / 2.0,
        "eer": rate,
        "eer_threshold": thr,
        "bpcer_at_apcer": at,
        "threshold_at_apcer": thresholds,
    }
