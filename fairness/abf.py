"""FDR and ABF fairness curves with operational decision thresholds (paper 001, Sec. IV-B, VI).

For a decision threshold ``tau`` and attribute groups ``D = {d_1, ..., d_n}`` (eqs. 1-6)::

    A_FDR(tau) = max_{i,j} |APCER_di(tau) - APCER_dj(tau)|
    B_FDR(tau) = max_{i,j} |BPCER_di(tau) - BPCER_dj(tau)|
    FDR(tau)   = 1 - (alpha A_FDR(tau) + (1 - alpha) B_FDR(tau))
    A_ABF(tau) = A_FDR(tau) / (1 - max_D APCER(tau))
    B_ABF(tau) = B_FDR(tau) / (1 - max_D BPCER(tau))
    ABF(tau)   = 1 - (alpha A_ABF(tau) + (1 - alpha) B_ABF(tau))

``tau = APCER_x``: the threshold where APCER = x (:func:`fairness.iso.threshold_at_apcer`) on
the attack scores of every group pooled (``threshold_group=None``) or of one named group
(ODTA: "threshold from fused / male / female"). ``x`` runs over :data:`DEFAULT_XS`
(0.005 to 0.2) and :func:`curve_auc` gives the normalised area (FDR-AUC, ABF-AUC).

Edge cases (documented choices, not in the paper):

* rows whose group is empty (``""``/``None``/NaN: the attribute is unknown) are left out and
  the number left out is logged;
* a group without attack presentations has no APCER and does not take part in ``A``; a group
  without bona fide presentations has no BPCER and does not take part in ``B``. A term with
  fewer than two groups taking part is 0 (no measurable discrepancy) and a warning is logged;
* ABF's denominator ``1 - max_D(rate)`` is 0 when the worst group's error rate is 1; it is
  floored at ``min_denominator`` (default 1e-3), the continuous extension: the term grows to
  ``numerator / min_denominator`` and ABF becomes strongly negative, as the limit suggests.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evaluation.metrics import SingleClassError
from fairness.iso import check_scores, threshold_at_apcer

log = logging.getLogger(__name__)

#: tau = APCER_x for x = 0.5 %, 1 %, ..., 20 % (paper 001: "x varies from 0.005 to 0.2").
DEFAULT_XS: np.ndarray = np.round(np.arange(1, 41) * 0.005, 4)
#: Name under which the pooled threshold of all groups is reported (the paper's "fused").
POOLED = "fused"


def clean_groups(
    y_true: Sequence, y_score: Sequence, groups: Sequence
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate inputs; drop rows with an unknown group; groups become strings."""
    y_true, y_score = check_scores(y_true, y_score)
    groups = np.asarray(groups, dtype=object)
    if groups.shape != y_true.shape:
        raise ValueError(
            f"groups must have one entry per sample ({len(y_true)}), got {groups.shape}"
        )
    known = np.array([not is_missing(g) for g in groups], dtype=bool)
    if not known.all():
        log.warning(
            "%d of %d rows have no group value and are left out", (~known).sum(), len(known)
        )
    groups = np.array([str(g) for g in groups[known]], dtype=object)
    if len(groups) == 0:
        raise ValueError("no row has a group value")
    return y_true[known], y_score[known], groups


def is_missing(value: object) -> bool:
    """True for an unknown group value: None, NaN or an empty string."""
    if value is None:
        return True
    if isinstance(value, float) and np.isnan(value):
        return True
    return isinstance(value, str) and value.strip() == ""


def decision_threshold(
    y_true: np.ndarray,
    y_score: np.ndarray,
    groups: np.ndarray,
    x: float,
    threshold_group: str | None,
) -> float:
    """tau = APCER_x on the attacks of all groups pooled, or of ``threshold_group``."""
    attacks = y_true == 1
    if threshold_group is None or threshold_group == POOLED:
        scores = y_score[attacks]
        if scores.size == 0:
            raise SingleClassError(
                "no attack presentation in any group: tau = APCER_x is undefined"
            )
        return threshold_at_apcer(scores, x)
    names = sorted(set(groups))
    if threshold_group not in names:
        raise ValueError(f"threshold_group {threshold_group!r} is not a group; groups: {names}")
    scores = y_score[attacks & (groups == threshold_group)]
    if scores.size == 0:
        raise SingleClassError(
            f"threshold group {threshold_group!r} has no attack presentations: tau = APCER_x is undefined"
        )
    return threshold_at_apcer(scores, x)


@dataclass
class FairnessCurves:
    """Every term of eqs. 1-6 at each operating point ``xs`` (arrays of len(xs))."""

    xs: np.ndarray
    tau: np.ndarray
    apcer: dict[str, np.ndarray]  # per group; NaN where the group has no attacks
    bpcer: dict[str, np.ndarray]  # per group; NaN where the group has no bona fide
    a_fdr: np.ndarray
    b_fdr: np.ndarray
    a_abf: np.ndarray
    b_abf: np.ndarray
    fdr: np.ndarray
    abf: np.ndarray
    threshold_group: str


def _gap_and_worst(rates: np.ndarray) -> tuple[float, float]:
    """Max-min gap and maximum of the defined (non-NaN) group rates; (0, 0) with < 2 groups."""
    defined = rates[~np.isnan(rates)]
    if defined.size < 2:
        return 0.0, 0.0
    return float(defined.max() - defined.min()), float(defined.max())


def fairness_curves(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    xs: Sequence[float] = DEFAULT_XS,
    alpha: float = 0.5,
    threshold_group: str | None = None,
    min_denominator: float = 1e-3,
) -> FairnessCurves:
    """Compute A, B, FDR and ABF (eqs. 1-6) at tau = APCER_x for every x in ``xs``."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if min_denominator <= 0:
        raise ValueError(f"min_denominator must be > 0, got {min_denominator}")
    y_true, y_score, groups = clean_groups(y_true, y_score, groups)
    names = sorted(set(groups))
    if len(names) < 2:
        raise ValueError(f"FDR/ABF need at least two groups, got {names}")
    xs = np.asarray(xs, dtype=np.float64)
    if xs.ndim != 1 or xs.size == 0:
        raise ValueError("xs must be a non-empty 1-D sequence of APCER operating points")
    atk = {g: y_score[(groups == g) & (y_true == 1)] for g in names}
    bon = {g: y_score[(groups == g) & (y_true == 0)] for g in names}
    for term, per in (("A (APCER)", atk), ("B (BPCER)", bon)):
        empty = [g for g, s in per.items() if s.size == 0]
        if empty:
            log.warning("groups %s have no samples for %s and do not take part in it", empty, term)
    n = xs.size
    tau = np.array([decision_threshold(y_true, y_score, groups, x, threshold_group) for x in xs])
    apcer = {
        g: np.array([np.mean(atk[g] < t) if atk[g].size else np.nan for t in tau]) for g in names
    }
    bpcer = {
        g: np.array([np.mean(bon[g] >= t) if bon[g].size else np.nan for t in tau]) for g in names
    }
    a_fdr, b_fdr, a_abf, b_abf = (np.zeros(n) for _ in range(4))
    for k in range(n):
        gap_a, worst_a = _gap_and_worst(np.array([apcer[g][k] for g in names]))
        gap_b, worst_b = _gap_and_worst(np.array([bpcer[g][k] for g in names]))
        a_fdr[k], b_fdr[k] = gap_a, gap_b
        a_abf[k] = gap_a / max(1.0 - worst_a, min_denominator)
        b_abf[k] = gap_b / max(1.0 - worst_b, min_denominator)
    return FairnessCurves(
        xs=xs,
        tau=tau,
        apcer=apcer,
        bpcer=bpcer,
        a_fdr=a_fdr,
        b_fdr=b_fdr,
        a_abf=a_abf,
        b_abf=b_abf,
        fdr=1.0 - (alpha * a_fdr + (1.0 - alpha) * b_fdr),
        abf=1.0 - (alpha * a_abf + (1.0 - alpha) * b_abf),
        threshold_group=POOLED if threshold_group is None else threshold_group,
    )


def fdr_curve(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    xs: Sequence[float] = DEFAULT_XS,
    alpha: float = 0.5,
    threshold_group: str | None = None,
) -> np.ndarray:
    """FDR(tau) at tau = APCER_x for each x (paper 001 eqs. 1-3; Pereira & Marcel)."""
    return fairness_curves(y_true, y_score, groups, xs, alpha, threshold_group).fdr


def abf_curve(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    xs: Sequence[float] = DEFAULT_XS,
    alpha: float = 0.5,
    threshold_group: str | None = None,
    min_denominator: float = 1e-3,
) -> np.ndarray:
    """ABF(tau) at tau = APCER_x for each x (paper 001 eqs. 4-6)."""
    return fairness_curves(y_true, y_score, groups, xs, alpha, threshold_group, min_denominator).abf


def curve_auc(xs: Sequence[float], values: Sequence[float]) -> float:
    """Trapezoidal area under ``values(xs)`` divided by the x range: a constant curve c gives c."""
    xs = np.asarray(xs, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if xs.ndim != 1 or xs.shape != values.shape:
        raise ValueError(
            f"xs and values must be 1-D of equal length, got {xs.shape} and {values.shape}"
        )
    if xs.size < 2:
        raise ValueError("curve_auc needs at least two points")
    if not np.all(np.diff(xs) > 0):
        raise ValueError("xs must be strictly increasing")
    if not np.isfinite(values).all():
        raise ValueError("values contain NaN or infinite entries")
    area = float(np.sum((values[1:] + values[:-1]) * np.diff(xs)) / 2.0)
    return area / float(xs[-1] - xs[0])


def odta_curves(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    xs: Sequence[float] = (0.005, 0.01, 0.05, 0.10, 0.15, 0.20),
    threshold_groups: Sequence[str | None] | None = None,
) -> dict[str, dict[str, np.ndarray]]:
    """1 - BPCER of each test group at tau = APCER_x from each threshold group (Figs. 6, 8, 10, 11).

    Returns ``{threshold_group: {test_group: array over xs}}``; ``threshold_groups`` defaults
    to the pooled threshold (``"fused"``) and every group that has attacks. A test group
    without bona fide samples gets NaN.
    """
    y_true, y_score, groups = clean_groups(y_true, y_score, groups)
    names = sorted(set(groups))
    if threshold_groups is None:
        threshold_groups = [POOLED] + [g for g in names if np.any((groups == g) & (y_true == 1))]
    out: dict[str, dict[str, np.ndarray]] = {}
    for tg in threshold_groups:
        key = POOLED if tg is None else tg
        taus = [decision_threshold(y_true, y_score, groups, x, tg) for x in xs]
        out[key] = {}
        for g in names:
            bon = y_score[(groups == g) & (y_true == 0)]
            out[key][g] = np.array([1.0 - np.mean(bon >= t) if bon.size else np.nan for t in taus])
    return out
