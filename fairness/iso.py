"""ISO/IEC 30107-3 presentation-attack-detection metrics (paper 001, Sec. IV-B).

Labels: 0 = bona fide, 1 = attack; a score is the probability of attack and a presentation is
classified as an attack when ``score >= threshold``. Hence

* APCER(t) = share of attack presentations scored below ``t`` (accepted as bona fide), computed
  per presentation-attack instrument species; the system APCER is the maximum over species;
* BPCER(t) = share of bona fide presentations scored at or above ``t`` (rejected as attacks);
* ACER(t) = (APCER_max(t) + BPCER(t)) / 2;
* EER: the error rate where APCER = BPCER (:func:`evaluation.metrics.eer`);
* BPCER@APCER=x: BPCER at the largest threshold whose APCER (maximum over species) is <= x.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from evaluation.metrics import SingleClassError, eer

#: The operating points the paper reports (1-BPCER at APCER = 0.5, 1, 5, 10, 15, 20 %).
ISO_APCER_POINTS: tuple[float, ...] = (0.005, 0.01, 0.05, 0.10, 0.15, 0.20)


def check_scores(y_true: Sequence, y_score: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """1-D labels in {0, 1} and finite scores of equal length (errors say what is wrong)."""
    y_true = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=np.float64)
    if y_true.ndim != 1 or y_true.shape != y_score.shape:
        raise ValueError(
            f"y_true and y_score must be 1-D of equal length, got {y_true.shape} and {y_score.shape}"
        )
    if len(y_true) == 0:
        raise ValueError("no samples")
    if not np.isin(y_true, (0, 1)).all():
        raise ValueError("y_true must hold 0 (bona fide/real) and 1 (attack/fake) only")
    if not np.isfinite(y_score).all():
        raise ValueError("y_score contains NaN or infinite values")
    return y_true.astype(np.int64), y_score


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


def threshold_at_apcer_species(
    y_true: Sequence, y_score: Sequence, x: float, species: Sequence | None = None
) -> float:
    """Largest threshold whose APCER (maximum over species) is <= ``x``.

    APCER_max(t) <= x holds exactly when every species' APCER(t) <= x, so the answer is the
    smallest of the species' own thresholds.
    """
    y_true, y_score = check_scores(y_true, y_score)
    per = _species_scores(y_true, y_score, species)
    if not any(len(s) for s in per.values()):
        raise SingleClassError("a threshold at APCER = x needs at least one attack presentation")
    return min(threshold_at_apcer(s, x) for s in per.values() if len(s))


def iso_metrics(
    y_true: Sequence,
    y_score: Sequence,
    threshold: float = 0.5,
    species: Sequence | None = None,
    apcer_points: Sequence[float] = ISO_APCER_POINTS,
) -> dict[str, object]:
    """Every ISO/IEC 30107-3 figure of one score set as a JSON-able dict.

    Keys: ``apcer_per_species``, ``apcer`` (max over species), ``bpcer``, ``acer`` (at
    ``threshold``), ``eer``, ``eer_threshold`` and ``bpcer_at_apcer`` (``{"0.5%": ...}``) with
    the thresholds used in ``threshold_at_apcer``.
    """
    y_true, y_score = check_scores(y_true, y_score)
    if y_true.min() == y_true.max():
        raise SingleClassError("ISO PAD metrics need both bona fide and attack presentations")
    per_species = apcer_per_species(y_true, y_score, threshold, species)
    apcer_max = max(per_species.values())
    bp = bpcer(y_score[y_true == 0], threshold)
    rate, thr = eer(y_true, y_score)
    at: dict[str, float] = {}
    thresholds: dict[str, float] = {}
    for x in apcer_points:
        t = threshold_at_apcer_species(y_true, y_score, x, species)
        key = f"{100 * x:g}%"
        thresholds[key] = t
        at[key] = bpcer(y_score[y_true == 0], t)
    return {
        "threshold": float(threshold),
        "apcer_per_species": per_species,
        "apcer": apcer_max,
        "bpcer": bp,
        "acer": (apcer_max + bp) / 2.0,
        "eer": rate,
        "eer_threshold": thr,
        "bpcer_at_apcer": at,
        "threshold_at_apcer": thresholds,
    }
