"""FDR and ABF fairness curves with operational decision thresholds (paper 001, Sec. IV-B, VI).

For a decision threshold ``tau`` and attribute groups ``D = {d_1, ..., d_n}`` (eqs. 1-6)::

    A_FDR(tau) = max_{i,j} |APCER_di(tau) - APCER_dj(tau)|
    B_FDR(tau) = max_{i,j} |BPCER_di(tau) - BPCER_dj(tau)|
    FDR(tau)   = 1 - (alpha A_FDR(tau) + (1 - alpha) B_FDR(tau))
    A_ABF(tau) = A_FDR(tau) / (1 - max_D APCER(tau))
    B_ABF(tau) = B_FDR(tau) / (1 - max_D BPCER(tau))
    ABF(tau)   = 1 - (alpha A_ABF(tau) + (1 - alpha) B_ABF(tau))

``tau = APCER_x``: the largest threshold whose APCER is <= x
(:func:`fairness.iso.threshold_at_apcer_species`) on the attack scores of every group pooled
(``threshold_group=None``) or of one named group (ODTA: "threshold from fused / male /
female"). ``x`` runs over :data:`DEFAULT_XS` (0.005 to 0.2) and :func:`curve_auc` gives the
normalised area (FDR-AUC, ABF-AUC).

Attack species follow one rule, the same as :mod:`fairness.iso` (``species_rule``):
``"pooled"`` (default, the paper's plain proportion) or ``"worst"`` (ISO/IEC 30107-3: a
group's APCER is the maximum over the species it holds, and tau the largest threshold at
which every species of the threshold group has APCER <= x).

Edge cases (documented choices, not in the paper):

* rows whose group is empty (``""``/``None``/NaN: the attribute is unknown) are left out and
  the number left out is logged;
* a group without attack presentations has no APCER and does not take part in ``A``; a group
  without bona fide presentations has no BPCER and does not take part in ``B``. A term with
  fewer than two groups taking part is **undefined** (NaN), and so are FDR and ABF unless the
  term's weight (``alpha`` or ``1 - alpha``) is 0: "no measurable discrepancy" is not
  "no discrepancy" (e.g. each group holds one class only);
* ABF's denominator ``1 - max_D(rate)`` is 0 when the worst group's error rate is 1. With a
  positive gap it is floored at ``min_denominator`` (default 1e-3), the continuous extension:
  the term grows to ``numerator / min_denominator`` and ABF becomes strongly negative, as the
  limit suggests. With a zero gap (every group's rate is 1, e.g. every bona fide face flagged)
  the term is 0/0: undefined (NaN), never a perfect score;
* :attr:`FairnessCurves.undefined` says why FDR or ABF is undefined, and :func:`curve_areas`
  gives FDR-AUC / ABF-AUC as NaN with that reason when the curve is undefined at any point.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from fairforensics.evaluation.metrics import SingleClassError, check_scores, factorize
from fairforensics.fairness.iso import check_species_rule

log = logging.getLogger(__name__)

#: tau = APCER_x for x = 0.5 %, 1 %, ..., 20 % (paper 001: "x varies from 0.005 to 0.2").
DEFAULT_XS: np.ndarray = np.round(np.arange(1, 41) * 0.005, 4)
#: Name under which the pooled threshold of all groups is reported (the paper's "fused").
POOLED = "fused"


def clean_groups(
    y_true: Sequence, y_score: Sequence, groups: Sequence
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate inputs; drop rows with an unknown group; groups become strings."""
    _, y_true, y_score, group, names = group_codes(y_true, y_score, groups)
    strings = np.empty(len(names), dtype=object)
    strings[:] = names
    return y_true, y_score, strings[group]


def group_codes(
    y_true: Sequence, y_score: Sequence, groups: Sequence
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """:func:`clean_groups` as integer codes: ``(known, y_true, y_score, group, names)`` with
    ``known`` the rows kept, ``group`` each kept row's index into ``names`` (the group strings,
    sorted). One pass over the rows; each distinct value is tested and converted once."""
    y_true, y_score = check_scores(y_true, y_score)
    groups = np.asarray(groups, dtype=object)
    if groups.shape != y_true.shape:
        raise ValueError(
            f"groups must have one entry per sample ({len(y_true)}), got {groups.shape}"
        )
    codes, uniq = factorize(groups)
    missing = np.array([is_missing(g) for g in uniq], dtype=bool)
    known = ~missing[codes]
    if not known.all():
        log.warning(
            "%d of %d rows have no group value and are left out", (~known).sum(), len(known)
        )
    strings = [str(g) for g in uniq]
    names = sorted({s for s, m in zip(strings, missing, strict=True) if not m})
    index = {name: i for i, name in enumerate(names)}
    remap = np.array([-1 if m else index[s] for s, m in zip(strings, missing, strict=True)])
    group = remap[codes[known]] if len(remap) else np.zeros(0, dtype=np.int64)
    if len(group) == 0:
        raise ValueError("no row has a group value")
    return known, y_true[known], y_score[known], group, names


def is_missing(value: object) -> bool:
    """True for an unknown group value: None, NaN or an empty string."""
    if value is None:
        return True
    if isinstance(value, float) and np.isnan(value):
        return True
    return isinstance(value, str) and value.strip() == ""


def _rate_below(sorted_scores: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Share of the (sorted) scores below each tau; NaN for no scores."""
    if sorted_scores.size == 0:
        return np.full(len(tau), np.nan)
    return np.searchsorted(sorted_scores, tau, side="left") / sorted_scores.size


def decision_thresholds(
    y_true: np.ndarray,
    y_score: np.ndarray,
    groups: np.ndarray,
    xs: np.ndarray,
    threshold_group: str | None,
    species: np.ndarray | None = None,
    species_rule: str = "pooled",
) -> np.ndarray:
    """tau = APCER_x for each x on the attacks of all groups pooled, or of ``threshold_group``.

    Equal to :func:`fairness.iso.threshold_at_apcer_species` per x (one sort for all x).
    ``threshold_group`` is compared as a string, as the group values are (so ``0`` names the
    group ``"0"`` of integer labels).
    """
    attacks = y_true == 1
    if threshold_group is None or str(threshold_group) == POOLED:
        rows = attacks
        if not rows.any():
            raise SingleClassError(
                "no attack presentation in any group: tau = APCER_x is undefined"
            )
    else:
        names = sorted(set(groups))
        if str(threshold_group) not in names:
            raise ValueError(f"threshold_group {threshold_group!r} is not a group; groups: {names}")
        rows = attacks & (groups == str(threshold_group))
        if not rows.any():
            raise SingleClassError(
                f"threshold group {threshold_group!r} has no attack presentations: "
                "tau = APCER_x is undefined"
            )
    xs = np.asarray(xs, dtype=np.float64)
    if np.any(xs < 0) or np.any(xs >= 1):
        raise ValueError(f"APCER operating points must be in [0, 1), got {xs.tolist()}")
    if species_rule == "pooled" or species is None:
        parts = [y_score[rows]]
    else:
        spc = species[rows]
        parts = [y_score[rows][spc == sp] for sp in sorted(set(spc.tolist()))]
    taus = []
    for scores in parts:  # threshold_at_apcer: the (floor(x n) + 1)-th smallest score
        ordered = np.sort(scores)
        taus.append(ordered[np.floor(xs * ordered.size + 1e-9).astype(np.int64)])
    return np.min(taus, axis=0)


def _group_apcer(
    scores: np.ndarray, species: np.ndarray | None, tau: np.ndarray, rule: str
) -> np.ndarray:
    """APCER of one group's attack scores at each tau; the worst species under ``"worst"``."""
    if rule == "pooled" or species is None or scores.size == 0:
        return _rate_below(np.sort(scores), tau)
    per = [np.sort(scores[species == sp]) for sp in sorted(set(species.tolist()))]
    return np.max([_rate_below(p, tau) for p in per], axis=0)


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
    undefined: dict[str, str] = field(default_factory=dict)  # "fdr"/"abf" -> why NaN somewhere


def _gap_and_worst(rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``[groups, xs]`` rates: max-min gap and maximum of the defined (non-NaN)
    group rates; NaN where fewer than two groups are defined."""
    defined = ~np.isnan(rates)
    enough = defined.sum(axis=0) >= 2
    hi = np.where(defined, rates, -np.inf).max(axis=0)
    lo = np.where(defined, rates, np.inf).min(axis=0)
    return np.where(enough, hi - lo, np.nan), np.where(enough, hi, np.nan)


def _relative(gap: np.ndarray, worst: np.ndarray, floor: float) -> np.ndarray:
    """``gap / (1 - worst)`` with the denominator floored at ``floor``; NaN for 0/0 (every
    group's rate is 1, so the gap is 0) and where the gap is undefined."""
    denominator = 1.0 - worst
    out = gap / np.maximum(denominator, floor)
    return np.where((gap == 0) & (denominator <= 0), np.nan, out)


def _weighted(weight: float, term: np.ndarray) -> np.ndarray:
    """``weight * term``, with a term of weight 0 left out even where it is undefined."""
    return np.zeros_like(term) if weight == 0 else weight * term


def _why_undefined(
    term: str, values: np.ndarray, taking_part: list[str], rate: str, all_fail: str
) -> str:
    """Why ``values`` (one term over the x grid) is NaN somewhere; "" when it is not."""
    bad = int(np.isnan(values).sum())
    if not bad:
        return ""
    if len(taking_part) < 2:
        return (
            f"{term} undefined: fewer than two groups have {rate} (groups that have: "
            f"{taking_part or 'none'})"
        )
    return f"{term} is 0/0 at {bad} of {values.size} operating points: {all_fail}"


def fairness_curves(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    xs: Sequence[float] = DEFAULT_XS,
    alpha: float = 0.5,
    threshold_group: str | None = None,
    min_denominator: float = 1e-3,
    *,
    species: Sequence | None = None,
    species_rule: str = "pooled",
) -> FairnessCurves:
    """Compute A, B, FDR and ABF (eqs. 1-6) at tau = APCER_x for every x in ``xs``.

    ``species``: the attack species of each row (e.g. the ``method`` column), used when
    ``species_rule="worst"``; ignored under ``"pooled"``.
    """
    check_species_rule(species_rule)
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if min_denominator <= 0:
        raise ValueError(f"min_denominator must be > 0, got {min_denominator}")
    known, y_true, y_score, groups, names = _known_rows(y_true, y_score, groups)
    spc = _species_of_known(species, known)
    if len(names) < 2:
        raise ValueError(f"FDR/ABF need at least two groups, got {names}")
    xs = np.asarray(xs, dtype=np.float64)
    if xs.ndim != 1 or xs.size == 0:
        raise ValueError("xs must be a non-empty 1-D sequence of APCER operating points")
    return curves_of_clean(
        y_true, y_score, groups, xs, alpha, threshold_group, min_denominator, spc, species_rule
    )


def curves_of_clean(
    y_true: np.ndarray,
    y_score: np.ndarray,
    groups: np.ndarray,
    xs: np.ndarray,
    alpha: float,
    threshold_group: str | None,
    min_denominator: float,
    species: np.ndarray | None,
    species_rule: str,
    warn: bool = True,
) -> FairnessCurves:
    """:func:`fairness_curves` on validated arrays (string groups, none missing); the bootstrap
    calls it per replicate with ``warn=False``."""
    names = sorted(set(groups))
    if len(names) < 2:
        raise ValueError(f"FDR/ABF need at least two groups, got {names}")
    atk = {g: (groups == g) & (y_true == 1) for g in names}
    bon = {g: np.sort(y_score[(groups == g) & (y_true == 0)]) for g in names}
    for term, per in (("A (APCER)", atk), ("B (BPCER)", bon)):
        empty = [g for g, s in per.items() if not s.any()]
        if empty and warn:
            log.warning("groups %s have no samples for %s and do not take part in it", empty, term)
    tau = decision_thresholds(y_true, y_score, groups, xs, threshold_group, species, species_rule)
    apcer = {
        g: _group_apcer(
            y_score[atk[g]], None if species is None else species[atk[g]], tau, species_rule
        )
        for g in names
    }
    bpcer = {g: 1.0 - _rate_below(bon[g], tau) for g in names}
    with_atk = [g for g in names if atk[g].any()]
    with_bon = [g for g in names if bon[g].size]
    return curves_of_rates(
        xs, tau, apcer, bpcer, alpha, threshold_group, min_denominator, with_atk, with_bon
    )


def curves_of_rates(
    xs: np.ndarray,
    tau: np.ndarray,
    apcer: dict[str, np.ndarray],
    bpcer: dict[str, np.ndarray],
    alpha: float,
    threshold_group: str | None,
    min_denominator: float,
    with_atk: list[str],
    with_bon: list[str],
) -> FairnessCurves:
    """A, B, FDR and ABF (eqs. 1-6) from every group's APCER and BPCER at each tau (groups in
    sorted order; ``with_atk`` / ``with_bon``: the groups that have attacks / bona fide)."""
    names = list(apcer)
    gap_a, worst_a = _gap_and_worst(np.stack([apcer[g] for g in names]))
    gap_b, worst_b = _gap_and_worst(np.stack([bpcer[g] for g in names]))
    a_fdr, b_fdr = gap_a, gap_b
    a_abf = _relative(gap_a, worst_a, min_denominator)
    b_abf = _relative(gap_b, worst_b, min_denominator)
    fdr = 1.0 - (_weighted(alpha, a_fdr) + _weighted(1.0 - alpha, b_fdr))
    abf = 1.0 - (_weighted(alpha, a_abf) + _weighted(1.0 - alpha, b_abf))
    undefined = {}
    for name, curve, terms in (
        ("fdr", fdr, (("A", a_fdr, alpha), ("B", b_fdr, 1.0 - alpha))),
        ("abf", abf, (("A", a_abf, alpha), ("B", b_abf, 1.0 - alpha))),
    ):
        if not np.isnan(curve).any():
            continue
        reasons = [
            _why_undefined(
                f"{name.upper()}'s {t}",
                v,
                with_atk if t == "A" else with_bon,
                "attack presentations" if t == "A" else "bona fide presentations",
                "every group's APCER is 1"
                if t == "A"
                else "every group's BPCER is 1 (every bona fide presentation flagged)",
            )
            for t, v, w in terms
            if w != 0
        ]
        undefined[name] = "; ".join(r for r in reasons if r)
    return FairnessCurves(
        xs=xs,
        tau=tau,
        apcer=apcer,
        bpcer=bpcer,
        a_fdr=a_fdr,
        b_fdr=b_fdr,
        a_abf=a_abf,
        b_abf=b_abf,
        fdr=fdr,
        abf=abf,
        threshold_group=POOLED if threshold_group is None else str(threshold_group),
        undefined=undefined,
    )


def _known_rows(
    y_true: Sequence, y_score: Sequence, groups: Sequence
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """:func:`group_codes` with the groups as strings: (known, y, scores, groups, names)."""
    known, y_true, y_score, group, names = group_codes(y_true, y_score, groups)
    strings = np.empty(len(names), dtype=object)
    strings[:] = names
    return known, y_true, y_score, strings[group], names


def _species_of_known(species: Sequence | None, known: np.ndarray) -> np.ndarray | None:
    """Species of the ``known`` rows (as strings), or None."""
    if species is None:
        return None
    spc = np.asarray(species, dtype=object)
    if spc.shape != known.shape:
        raise ValueError(f"species must have one entry per sample ({len(known)}), got {spc.shape}")
    codes, uniq = factorize(spc[known])
    names = np.empty(len(uniq), dtype=object)
    names[:] = [str(v) for v in uniq]
    return names[codes]


def fdr_curve(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    xs: Sequence[float] = DEFAULT_XS,
    alpha: float = 0.5,
    threshold_group: str | None = None,
    *,
    species: Sequence | None = None,
    species_rule: str = "pooled",
) -> np.ndarray:
    """FDR(tau) at tau = APCER_x for each x (paper 001 eqs. 1-3; Pereira & Marcel)."""
    return fairness_curves(
        y_true,
        y_score,
        groups,
        xs,
        alpha,
        threshold_group,
        species=species,
        species_rule=species_rule,
    ).fdr


def abf_curve(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    xs: Sequence[float] = DEFAULT_XS,
    alpha: float = 0.5,
    threshold_group: str | None = None,
    min_denominator: float = 1e-3,
    *,
    species: Sequence | None = None,
    species_rule: str = "pooled",
) -> np.ndarray:
    """ABF(tau) at tau = APCER_x for each x (paper 001 eqs. 4-6)."""
    return fairness_curves(
        y_true,
        y_score,
        groups,
        xs,
        alpha,
        threshold_group,
        min_denominator,
        species=species,
        species_rule=species_rule,
    ).abf


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


def curve_areas(curves: FairnessCurves) -> tuple[dict[str, float], dict[str, str]]:
    """``({"fdr_auc": .., "abf_auc": ..}, {key: reason})``: :func:`curve_auc` of FDR and ABF,
    NaN with the reason (:attr:`FairnessCurves.undefined`) where the curve is undefined."""
    areas: dict[str, float] = {}
    notes: dict[str, str] = {}
    for name, values in (("fdr", curves.fdr), ("abf", curves.abf)):
        if np.isnan(values).any():
            areas[f"{name}_auc"] = float("nan")
            notes[f"{name}_auc"] = curves.undefined.get(name) or f"{name.upper()} undefined"
        else:
            areas[f"{name}_auc"] = curve_auc(curves.xs, values)
    return areas, notes


def odta_curves(
    y_true: Sequence,
    y_score: Sequence,
    groups: Sequence,
    xs: Sequence[float] = (0.005, 0.01, 0.05, 0.10, 0.15, 0.20),
    threshold_groups: Sequence[str | None] | None = None,
    *,
    species: Sequence | None = None,
    species_rule: str = "pooled",
) -> dict[str, dict[str, np.ndarray]]:
    """1 - BPCER of each test group at tau = APCER_x from each threshold group (Figs. 6, 8, 10, 11).

    Returns ``{threshold_group: {test_group: array over xs}}``; ``threshold_groups`` defaults
    to the pooled threshold (``"fused"``) and every group that has attacks. A test group
    without bona fide samples gets NaN. tau follows ``species_rule`` as in
    :func:`fairness_curves`.
    """
    check_species_rule(species_rule)
    known, y_true, y_score, groups, names = _known_rows(y_true, y_score, groups)
    spc = _species_of_known(species, known)
    if threshold_groups is None:
        threshold_groups = [POOLED] + [g for g in names if np.any((groups == g) & (y_true == 1))]
    out: dict[str, dict[str, np.ndarray]] = {}
    for tg in threshold_groups:
        key = POOLED if tg is None else str(tg)
        taus = decision_thresholds(
            y_true, y_score, groups, np.asarray(xs, dtype=np.float64), tg, spc, species_rule
        )
        out[key] = {}
        for g in names:
            bon = np.sort(y_score[(groups == g) & (y_true == 0)])
            out[key][g] = _rate_below(bon, taus)  # 1 - BPCER = share of bona fide below tau
    return out
