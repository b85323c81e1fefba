"""Fairness report of a predictions file: every group metric per attribute, tables and figures.

:func:`fairness_report` computes, for each attribute column of a predictions file, the
per-group metrics with bootstrap intervals, the bias factor (paper 000) with its direction, the
signed gap of every metric with a clustered bootstrap interval and a permutation p-value, the
class-ratio check of the accuracy gap (:mod:`fairness.gaps`), Lin et al. metrics, ISO/IEC
30107-3 metrics per group, FDR/ABF curves and areas (with intervals) with the pooled threshold
and each group's threshold (ODTA, paper 001), and 1-BPCER at APCER_x per threshold group.

An attribute ``"gender,race"`` (names joined by commas) is the intersection: its groups are
``female/Asian``, ``male/White``, ... (a row lacking any of the values is left out). Groups
with fewer than ``min_group_size`` rows are reported but take no part in anything that ranks
groups (bias factor, gaps, tests, Lin et al., FDR/ABF, ODTA).
:func:`write_report` writes tables (CSV/MD/JSON) and figures; :func:`format_summary` gives the
text that ``scripts/fairness.py`` prints.
"""

from __future__ import annotations

import dataclasses
import html
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from fairforensics.configs import load_config
from fairforensics.evaluation.confidence import holm
from fairforensics.evaluation.metrics import SingleClassError, factorize, video_scores
from fairforensics.evaluation.predictions import Predictions
from fairforensics.evaluation.table_writer import (
    UNDEFINED,
    format_number,
    html_text,
    write_table_files,
)
from fairforensics.evaluation.thresholds import DEFAULT_THRESHOLD, DecisionThreshold
from fairforensics.fairness import plots
from fairforensics.fairness.abf import (
    DEFAULT_XS,
    POOLED,
    FairnessCurves,
    curve_areas,
    fairness_curves,
    is_missing,
    odta_curves,
)
from fairforensics.fairness.gaps import (
    MIN_INTERVAL_UNITS,
    GapAnalysis,
    curve_auc_intervals,
    group_gaps,
    iso_group_intervals,
)
from fairforensics.fairness.group_calibration import GroupCalibration, group_calibration
from fairforensics.fairness.iso import ISO_APCER_POINTS, SPECIES_RULES, iso_metrics
from fairforensics.fairness.metrics import bias_factor_pair, group_metrics, lin_metrics
from fairforensics.fairness.tables import columns_of, to_csv, to_markdown, write_table
from fairforensics.preprocessing.files import atomic_write_text, jsonable, write_json

log = logging.getLogger(__name__)


@dataclass
class ReportConfig:
    """Settings of a fairness report (``configs/fairness/report.yaml``)."""

    attributes: list[str] | None = None  # None: every attribute column of the predictions
    level: Literal["frame", "video"] = "frame"
    video_reduce: Literal["mean", "median", "max"] = "mean"
    threshold: float | None = None  # None: the command's (scripts/fairness.py), else 0.5
    alpha: float = 0.5
    xs: list[float] | None = None  # FDR/ABF operating points; None: 0.005 to 0.2 step 0.005
    iso_points: list[float] = field(default_factory=lambda: list(ISO_APCER_POINTS))
    threshold_groups: list[str] | None = None  # ODTA; None: fused + every group with attacks
    min_denominator: float = 1e-3
    species_rule: Literal["pooled", "worst"] = "pooled"  # how attack species enter APCER
    bootstrap: int = 1000  # replicates of the gap and per-group intervals; 0: off
    curve_bootstrap: int = 200  # replicates of the FDR-AUC / ABF-AUC intervals; 0: off
    permutations: int = 1000  # permutation tests of the gaps; 0: off
    confidence: float = 0.95
    unit: str | None = None  # attribute naming the resampling unit (e.g. identity); None: video
    min_group_size: int = 1  # smaller groups are reported but not ranked
    min_interval_units: int = MIN_INTERVAL_UNITS  # fewer units of a class: no interval, say so
    change_pair: list[str] | None = None  # paired changes: groups fixed in advance; None: the
    # pair with the largest clean gap, interval and p corrected for the number of pairs
    seed: int = 0
    figures: bool = True
    # deepfake | pad | auto (pad when the real class's method is bona fide): the report shows
    # the ISO/IEC 30107-3 metrics and APCER/BPCER axis names for presentation attacks only
    task: Literal["auto", "deepfake", "pad"] = "auto"

    @property
    def decision_threshold(self) -> float:
        """The threshold of every decision: ``threshold``, or 0.5 when it is not set."""
        return DEFAULT_THRESHOLD if self.threshold is None else self.threshold

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        if min(self.bootstrap, self.curve_bootstrap, self.permutations) < 0:
            raise ValueError("bootstrap, curve_bootstrap and permutations must be >= 0")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence}")
        if self.min_group_size < 1:
            raise ValueError(f"min_group_size must be >= 1, got {self.min_group_size}")
        if self.min_interval_units < 2:
            raise ValueError(f"min_interval_units must be >= 2, got {self.min_interval_units}")
        if self.change_pair is not None and (
            len(self.change_pair) != 2 or self.change_pair[0] == self.change_pair[1]
        ):
            raise ValueError(f"change_pair must name two different groups, got {self.change_pair}")
        if self.species_rule not in SPECIES_RULES:
            raise ValueError(
                f"species_rule must be one of {list(SPECIES_RULES)}, got {self.species_rule!r}"
            )


def load_report_config(*paths: str | Path | None, overrides: Any = ()) -> ReportConfig:
    """Defaults < YAML files < ``key=value`` overrides."""
    return load_config(ReportConfig, *paths, overrides=overrides, kind="fairness")


@dataclass
class AttributeReport:
    """Everything computed for one attribute."""

    attribute: str
    level: str
    groups: dict[str, dict[str, Any]]
    bias_factor: float
    bias_pair: tuple[str, str]
    lin: dict[str, float]
    curves: dict[str, FairnessCurves]
    curve_aucs: dict[str, dict[str, float]]
    odta: dict[str, dict[str, np.ndarray]]
    odta_xs: list[float]
    gaps: GapAnalysis
    curve_auc_ci: dict[str, dict[str, tuple[float, float]]]
    curve_auc_notes: dict[str, dict[str, str]]  # threshold group -> key -> why undefined
    ranked: list[str]  # groups with >= min_group_size rows
    y_true: np.ndarray
    y_score: np.ndarray
    group_of: np.ndarray
    errors: list[str] = field(default_factory=list)
    threshold: float = DEFAULT_THRESHOLD  # of every decision (ACC, FPR, FNR, bias factor)
    task: str = "deepfake"  # or "pad": which metric families the report shows (task_of)
    calibration: GroupCalibration | None = None  # per-group ECE and the ECE gap

    def to_json(self) -> dict[str, Any]:
        return jsonable(
            {
                "attribute": self.attribute,
                "level": self.level,
                "threshold": self.threshold,
                "groups": self.groups,
                "bias_factor": self.bias_factor,
                "bias_pair": list(self.bias_pair),
                "ranked_groups": self.ranked,
                "gaps": {m: g.as_dict() for m, g in self.gaps.gaps.items()},
                "class_ratio": self.gaps.class_ratio,
                "confidence": self.gaps.confidence,
                "lin": self.lin,
                "fdr_abf_auc": self.curve_aucs,
                "fdr_abf_auc_ci": self.curve_auc_ci,
                "fdr_abf_auc_notes": self.curve_auc_notes,
                "interval_notes": self.gaps.notes,
                "curves": {
                    k: {
                        "xs": c.xs,
                        "tau": c.tau,
                        "fdr": c.fdr,
                        "abf": c.abf,
                        "a_fdr": c.a_fdr,
                        "b_fdr": c.b_fdr,
                        "a_abf": c.a_abf,
                        "b_abf": c.b_abf,
                        "apcer": c.apcer,
                        "bpcer": c.bpcer,
                        "undefined": c.undefined,
                    }
                    for k, c in self.curves.items()
                },
                "odta": {"xs": self.odta_xs, "one_minus_bpcer": self.odta},
                "calibration": self.calibration.as_dict() if self.calibration else None,
                "errors": self.errors,
            }
        )


def attribute_arrays(
    pred: Predictions, attribute: str, level: str = "frame", reduce: str = "mean"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(labels, scores, groups, video keys) at frame or video level for one attribute.

    ``"gender,race"`` gives the intersectional groups ``female/Asian``, ... (:func:`group_values`).
    """
    groups = group_values(pred, attribute)
    keys = pred.video_key
    if level == "frame":
        return pred.label, pred.score, groups, keys
    if level != "video":
        raise ValueError(f"level must be 'frame' or 'video', got {level!r}")
    labels, scores, ids = video_scores(pred.label, pred.score, keys, reduce=reduce)
    first: dict[str, str] = {}
    for k, g in zip(keys, groups, strict=True):
        if first.setdefault(k, g) != g:
            raise ValueError(f"video {k!r} has frames with different {attribute!r} values")
    return labels, scores, np.array([first[k] for k in ids], dtype=object), ids


def group_values(pred: Predictions, attribute: str) -> np.ndarray:
    """Per row the group of ``attribute``; several names joined by commas give their
    intersection (values joined by ``/``); '' where any of the values is missing."""
    names = [a.strip() for a in attribute.split(",")]
    missing = [a for a in names if a not in pred.attributes]
    if missing or not all(names):
        raise KeyError(
            f"attribute {attribute!r}: {missing or 'empty name'} not a column of the predictions; "
            f"columns: {sorted(pred.attributes)}"
        )
    parts = [factorize(pred.attributes[a]) for a in names]  # one string per distinct value
    combined = np.zeros(len(pred), dtype=np.int64)
    for codes, uniq in parts:
        combined = combined * len(uniq) + codes
    combos, inverse = np.unique(combined, return_inverse=True)
    values = []
    for combo in combos.tolist():
        picked = []
        for _, uniq in reversed(parts):
            combo, k = divmod(combo, len(uniq))
            picked.append(uniq[k])
        picked.reverse()
        missing = any(is_missing(v) for v in picked)
        values.append("" if missing else "/".join(str(v) for v in picked))
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out[inverse.ravel()]


def _units_of(pred: Predictions, ids: np.ndarray, unit: str | None) -> np.ndarray:
    """Resampling unit of each row (keyed by video ``ids``): the ``unit`` attribute, or the video."""
    if unit is None:
        return ids
    if unit not in pred.attributes:
        raise KeyError(
            f"unit {unit!r} is not a column of the predictions; columns: {sorted(pred.attributes)}"
        )
    of_video: dict[str, str] = {}
    for k, v in zip(pred.video_key, pred.attributes[unit], strict=True):
        if not is_missing(v):
            of_video.setdefault(k, f"{unit}={v}")
    lacking = sum(k not in of_video for k in set(ids))
    if lacking:
        log.warning("%d videos have no %r value: each is its own resampling unit", lacking, unit)
    return np.array([of_video.get(k, f"video={k}") for k in ids], dtype=object)


def _attempt(errors: list[str], what: str, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (SingleClassError, ValueError) as exc:
        errors.append(f"{what}: {exc}")
        log.warning("%s skipped: %s", what, exc)
        return None


@dataclass
class _Rows:
    """One attribute's rows (at the report's level) that have a group."""

    y_true: np.ndarray
    y_score: np.ndarray
    groups: np.ndarray
    species: np.ndarray  # attack species = method
    units: np.ndarray  # resampling unit of each row

    def subset(self, keep: np.ndarray) -> _Rows:
        return _Rows(*(getattr(self, f.name)[keep] for f in dataclasses.fields(self)))


def _attribute_rows(pred: Predictions, attribute: str, cfg: ReportConfig) -> _Rows:
    """The rows of ``attribute`` at ``cfg.level``, without those lacking a value (logged)."""
    y_true, y_score, groups, ids = attribute_arrays(pred, attribute, cfg.level, cfg.video_reduce)
    keep = groups != ""
    if (~keep).any():
        log.warning(
            "%s: %d of %d rows have no value and are left out", attribute, (~keep).sum(), len(keep)
        )
    ids = ids[keep]
    if cfg.level == "frame":  # a video key holds its method: the row's method
        species = pred.method[keep]
    else:
        key_codes, keys = factorize(pred.video_key)
        row_of = np.empty(len(keys), dtype=np.int64)
        row_of[key_codes] = np.arange(len(key_codes))  # any row: a key holds one method
        method_of = dict(zip(keys, pred.method[row_of], strict=True))
        species = np.array([method_of[k] for k in ids], dtype=object)
    units = _units_of(pred, ids, cfg.unit)
    return _Rows(y_true[keep], y_score[keep], groups[keep], species, units)


def _ranked_groups(rows: _Rows, attribute: str, min_size: int) -> list[str]:
    """The groups of at least ``min_size`` rows (fewer than two: logged)."""
    names = sorted(set(rows.groups))
    size = {g: int(np.sum(rows.groups == g)) for g in names}
    ranked = [g for g in names if size[g] >= min_size]
    if len(ranked) < 2:
        log.warning(
            "attribute %r has %d group(s) of >= %d rows (sizes %s): no fairness metrics",
            attribute,
            len(ranked),
            min_size,
            size,
        )
    return ranked


def _per_group(
    rows: _Rows, ranked: list[str], cfg: ReportConfig, errors: list[str]
) -> dict[str, dict[str, Any]]:
    """Detection metrics and ISO/IEC 30107-3 metrics (groups holding both classes) per group."""
    threshold = cfg.decision_threshold
    per_group = group_metrics(rows.y_true, rows.y_score, rows.groups, threshold)
    for g in sorted(set(rows.groups)):
        sel = rows.groups == g
        iso = None
        if len(set(rows.y_true[sel].tolist())) == 2:
            iso = _attempt(
                errors,
                f"ISO metrics of {g}",
                iso_metrics,
                rows.y_true[sel],
                rows.y_score[sel],
                threshold,
                rows.species[sel],
                cfg.iso_points,
                cfg.species_rule,
            )
        per_group[g]["iso"] = iso
        per_group[g]["ranked"] = g in ranked
    return per_group


def _attach_intervals(
    per_group: dict[str, dict[str, Any]], gaps: GapAnalysis, rows: _Rows, cfg: ReportConfig
) -> None:
    """Each group's ``ci``: the intervals of :func:`group_gaps`, and of its ISO figures under
    the species rule (``pooled``: the FNR, FPR and EER intervals)."""
    for g, metrics in per_group.items():
        ci = {m: list(v) for m, v in gaps.group_ci[g].items()}
        if metrics["iso"] is not None and cfg.bootstrap:
            if cfg.species_rule == "pooled":
                iso_ci = {"apcer": ci["fnr"], "bpcer": ci["fpr"], "eer": ci["eer"]}
            else:
                sel = rows.groups == g
                iso_ci = iso_group_intervals(
                    rows.y_true[sel],
                    rows.y_score[sel],
                    rows.species[sel],
                    rows.units[sel],
                    threshold=cfg.decision_threshold,
                    species_rule=cfg.species_rule,
                    n_boot=cfg.bootstrap,
                    confidence=cfg.confidence,
                    seed=cfg.seed,
                    min_units=cfg.min_interval_units,
                )
            ci.update({f"iso_{k}": list(v) for k, v in iso_ci.items()})
        metrics["ci"] = ci


@dataclass
class _Curves:
    """FDR/ABF curves and their areas per threshold group, with why an area is undefined."""

    curves: dict[str, FairnessCurves] = field(default_factory=dict)
    aucs: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: dict[str, dict[str, str]] = field(default_factory=dict)


def _fairness_curves(
    rows: _Rows, ranked: list[str], xs: np.ndarray, cfg: ReportConfig, errors: list[str]
) -> _Curves:
    """FDR/ABF with tau from the fused scores and from every ranked group with attacks (or the
    configured threshold groups); a threshold group that fails is an error line, not a stop."""
    threshold_groups = [str(t) for t in cfg.threshold_groups or []] or [POOLED] + [
        g for g in ranked if np.any((rows.groups == g) & (rows.y_true == 1))
    ]
    out = _Curves()
    for tg in threshold_groups:
        c = _attempt(
            errors,
            f"FDR/ABF with tau from {tg}",
            fairness_curves,
            rows.y_true,
            rows.y_score,
            rows.groups,
            xs,
            cfg.alpha,
            tg,
            cfg.min_denominator,
            species=rows.species,
            species_rule=cfg.species_rule,
        )
        if c is not None:
            out.curves[tg] = c
            out.aucs[tg], out.notes[tg] = curve_areas(c)
    return out


def _curve_intervals(
    rows: _Rows, xs: np.ndarray, curves: _Curves, cfg: ReportConfig
) -> dict[str, dict[str, tuple[float, float]]]:
    """Bootstrap intervals of FDR-AUC and ABF-AUC per threshold group; their notes go into
    ``curves.notes`` (after the point's own reason)."""
    if not (cfg.curve_bootstrap and curves.curves):
        return {}
    boot = curve_auc_intervals(
        rows.y_true,
        rows.y_score,
        rows.groups,
        rows.units,
        xs=xs,
        alpha=cfg.alpha,
        threshold_groups=list(curves.curves),
        min_denominator=cfg.min_denominator,
        species=rows.species,
        species_rule=cfg.species_rule,
        n_boot=cfg.curve_bootstrap,
        confidence=cfg.confidence,
        seed=cfg.seed,
        min_units=cfg.min_interval_units,
        unit_name=_unit_name(cfg),
    )
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for tg, per in boot.items():
        out[tg] = {k: per[k] for k in ("fdr_auc", "abf_auc")}
        for k, note in per["notes"].items():  # the point's own reason comes first
            curves.notes[tg].setdefault(k, f"interval: {note}")
    return out


def _unit_name(cfg: ReportConfig) -> str:
    return "videos" if cfg.unit is None else f"{cfg.unit} units"


def _calibration(
    rows: _Rows, per_group: dict[str, dict[str, Any]], cfg: ReportConfig, errors: list[str]
) -> GroupCalibration | None:
    """Each group's ECE with its interval (into ``per_group``) and the ECE gap
    (:mod:`fairness.group_calibration`); None (an error line) where it cannot be computed."""
    calibration = _attempt(
        errors, "calibration within groups", group_calibration, rows.y_true, rows.y_score,
        rows.groups, rows.units, n_boot=cfg.bootstrap, confidence=cfg.confidence,
        seed=cfg.seed, min_group_size=cfg.min_group_size, min_units=cfg.min_interval_units,
        unit_name=_unit_name(cfg),
    )  # fmt: skip
    if calibration is not None:
        for g, metrics in per_group.items():
            metrics["ece"], metrics["ci"]["ece"] = calibration.ece[g], list(calibration.ci[g])
    return calibration


def attribute_report(
    pred: Predictions, attribute: str, cfg: ReportConfig
) -> AttributeReport | None:
    """All fairness figures of one attribute; None (logged) when it has fewer than two groups."""
    rows = _attribute_rows(pred, attribute, cfg)
    ranked = _ranked_groups(rows, attribute, cfg.min_group_size)
    if len(ranked) < 2:
        return None
    errors: list[str] = []
    per_group = _per_group(rows, ranked, cfg, errors)
    gaps = group_gaps(
        rows.y_true,
        rows.y_score,
        rows.groups,
        rows.units,
        threshold=cfg.decision_threshold,
        n_boot=cfg.bootstrap,
        n_perm=cfg.permutations,
        confidence=cfg.confidence,
        seed=cfg.seed,
        min_group_size=cfg.min_group_size,
        min_units=cfg.min_interval_units,
        unit_name=_unit_name(cfg),
    )
    _attach_intervals(per_group, gaps, rows, cfg)
    calibration = _calibration(rows, per_group, cfg, errors)
    # everything below ranks groups: only groups of >= min_group_size rows take part
    rows = rows.subset(np.isin(rows.groups, ranked))
    y_pred = (rows.y_score >= cfg.decision_threshold).astype(np.int64)
    bias, low, high = bias_factor_pair(rows.y_true, y_pred, rows.groups)
    xs = np.asarray(cfg.xs if cfg.xs is not None else DEFAULT_XS, dtype=np.float64)
    curves = _fairness_curves(rows, ranked, xs, cfg, errors)
    odta = _attempt(
        errors,
        "ODTA",
        odta_curves,
        rows.y_true,
        rows.y_score,
        rows.groups,
        cfg.iso_points,
        list(curves.curves),
        species=rows.species,
        species_rule=cfg.species_rule,
    )
    return AttributeReport(
        attribute=attribute,
        level=pred.row_unit if cfg.level == "frame" else cfg.level,  # frame rows, or clips
        groups=per_group,
        bias_factor=bias,
        bias_pair=(low, high),
        lin=lin_metrics(rows.y_true, rows.y_score, rows.groups, cfg.decision_threshold),
        curves=curves.curves,
        curve_aucs=curves.aucs,
        odta=odta or {},
        odta_xs=list(cfg.iso_points),
        gaps=gaps,
        curve_auc_ci=_curve_intervals(rows, xs, curves, cfg),
        curve_auc_notes=curves.notes,
        ranked=ranked,
        y_true=rows.y_true,
        y_score=rows.y_score,
        group_of=rows.groups,
        errors=errors,
        threshold=cfg.decision_threshold,
        calibration=calibration,
    )


def fairness_report(
    pred: Predictions, attributes: list[str] | None = None, cfg: ReportConfig | None = None
) -> dict[str, AttributeReport]:
    """Reports of the given attributes (default: ``cfg.attributes`` or every attribute column)."""
    cfg = cfg or ReportConfig()
    names = attributes or cfg.attributes or sorted(pred.attributes)
    if not names:
        raise ValueError("the predictions have no attribute columns: nothing to group by")
    missing = sorted({p.strip() for a in names for p in a.split(",")} - set(pred.attributes))
    if missing:
        raise KeyError(
            f"unknown attribute {', '.join(missing)} (asked: {' '.join(names)}); the "
            f"predictions' attribute columns are {', '.join(sorted(pred.attributes)) or 'none'}"
        )
    task = task_of(pred) if cfg.task == "auto" else cfg.task
    reports = {}
    for a in names:
        rep = attribute_report(pred, a, cfg)
        if rep is not None:
            rep.task = task
            reports[a] = rep
    return reports


#: the method of the bona fide class in the presentation-attack indexes (preprocessing.datasets.pad)
BONA_FIDE_METHODS = frozenset({"bonafide", "bona_fide", "bona fide"})


def task_of(pred: Predictions) -> str:
    """``pad`` when the real rows' method is bona fide (a presentation-attack set), else
    ``deepfake``."""
    methods = {str(m).lower() for m in np.asarray(pred.method)[np.asarray(pred.label) == 0]}
    return "pad" if methods & BONA_FIDE_METHODS else "deepfake"


_GROUP_COLUMNS = (
    "n",
    "n_real",
    "n_fake",
    "acc",
    "auc",
    "eer",
    "precision",
    "recall",
    "f1",
    "fpr",
    "fnr",
    "tn",
    "fp",
    "fn",
    "tp",
    "ece",
)
#: What the counts of a report's level count (``n``, ``n_real``, ``n_fake``).
_COUNTED = {"frame": "frames", "clip": "clips", "video": "videos"}


def group_rows(reports: dict[str, AttributeReport]) -> list[dict[str, Any]]:
    """One row per (attribute, group) with detection and ISO metrics; every row has the same
    columns (APCER per species of every species found), ``notes`` last."""
    rows = []
    for a, rep in reports.items():
        for g, m in rep.groups.items():
            row: dict[str, Any] = {"attribute": a, "group": g, "counted": _COUNTED[rep.level]}
            row |= {k: m.get(k) for k in _GROUP_COLUMNS}
            iso = m.get("iso") or {}
            row["ranked"] = m["ranked"]
            for metric, (low, high) in m["ci"].items():
                row[f"{metric}_low"], row[f"{metric}_high"] = low, high
            row.update(
                {
                    "species_rule": iso.get("species_rule"),
                    "apcer": iso.get("apcer"),
                    "bpcer": iso.get("bpcer"),
                    "acer": iso.get("acer"),
                    "iso_eer": iso.get("eer"),
                }
            )
            for species, v in (iso.get("apcer_per_species") or {}).items():
                row[f"apcer[{species}]"] = v
            for key, v in (iso.get("bpcer_at_apcer") or {}).items():
                row[f"bpcer@apcer={key}"] = v
            notes = dict(rep.gaps.notes.get(g, {}))
            if rep.calibration and g in rep.calibration.notes:
                notes["ece"] = rep.calibration.notes[g]
            row["notes"] = notes_text(notes, "interval", g)
            rows.append(row)
    columns = [c for c in columns_of(rows) if c != "notes"] + ["notes"]
    return [{c: row.get(c) for c in columns} for row in rows]


#: The families of ``group_metrics.md``: one table each, after the attribute and group.
GROUP_FAMILIES = {
    "Detection metrics": ("counted", "n", "n_real", "n_fake", "ranked", "acc", "auc", "eer")
    + ("precision", "recall", "f1", "fpr", "fnr", "tn", "fp", "fn", "tp"),
    "Calibration (ECE of P(fake), 15 equal-width bins)": ("ece",),
    "Intervals": (),  # every [low, high] pair
    "ISO/IEC 30107-3": ("species_rule", "apcer", "bpcer", "acer", "iso_eer"),  # + per species
    "Notes": ("notes",),
}


def group_markdown(rows: list[dict[str, Any]], digits: int = 4) -> str:
    """``group_metrics.md``: the rows of :func:`group_rows` as one table per metric family
    (:data:`GROUP_FAMILIES`), intervals as ``[low, high]`` cells, the notes last."""
    if not rows:
        return ""
    key = ("attribute", "group")
    columns = list(rows[0])
    lows = [c[: -len("_low")] for c in columns if c.endswith("_low")]
    sections = []
    for title, family in GROUP_FAMILIES.items():
        if title == "Intervals":
            table = [
                {**{k: r[k] for k in key}, **{m: _interval_cell(r, m, digits) for m in lows}}
                for r in rows
            ]
        else:
            wanted = list(family)
            if title.startswith("ISO"):
                wanted += [c for c in columns if c.startswith(("apcer[", "bpcer@"))]
            table = [{k: r.get(k) for k in (*key, *wanted)} for r in rows]
        if title == "Notes":
            table = [r for r in table if r["notes"]]
        if table and len(table[0]) > len(key):
            sections.append(f"## {title}\n\n{to_markdown(table, digits=digits)}")
    return "\n".join(sections)


def _interval_cell(row: dict[str, Any], metric: str, digits: int) -> str:
    low, high = row[f"{metric}_low"], row[f"{metric}_high"]
    if is_missing(low) or is_missing(high):
        return UNDEFINED
    return f"[{format_number(low, digits)}, {format_number(high, digits)}]"


def notes_text(notes: dict[str, str], what: str = "", group: str = "") -> str:
    """``{key: reason}`` as one line, each reason once with the keys it holds for (a reason of
    several parts, joined by ``; ``, counts for each part): with ``what`` and ``group``
    ``"female: fewer than 5 real videos (3): no interval of acc, fpr"``, else
    ``"acc, fpr: fewer than 5 real videos (3)"``; "" when there is none."""
    by_reason: dict[str, list[str]] = {}
    for key, reason in notes.items():
        for part in dict.fromkeys(reason.split("; ")):
            by_reason.setdefault(part, []).append(key)
    text = "; ".join(
        f"{reason}: no {what} of {', '.join(keys)}" if what else f"{', '.join(keys)}: {reason}"
        for reason, keys in by_reason.items()
    )
    return f"{group}: {text}" if group and text else text


def _with_after(row: dict[str, Any], key: str, new: str, value: Any) -> dict[str, Any]:
    """``row`` with ``new: value`` inserted after ``key``."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        out[k] = v
        if k == key:
            out[new] = value
    return out


def gap_p_adjusted(reports: dict[str, AttributeReport]) -> dict[tuple[str, str], float]:
    """Holm-adjusted p-values of every gap test of the report (all attributes and metrics: the
    family of ``gaps.csv``), keyed by (attribute, metric)."""
    keys = [(a, m) for a, rep in reports.items() for m in rep.gaps.gaps]
    raw = [reports[a].gaps.gaps[m].p_value for a, m in keys]
    return dict(zip(keys, (float(v) for v in holm(raw)), strict=True))


def summary_rows(reports: dict[str, AttributeReport]) -> list[dict[str, Any]]:
    """One row per attribute: the bias factor with its direction, the signed ACC difference
    with its interval, p-value and Holm-adjusted p-value (over every gap test of the report,
    as ``gaps.csv``), the class-ratio verdict, Lin et al. metrics, FDR/ABF-AUC (fused
    threshold) with intervals."""
    adjusted = gap_p_adjusted(reports)
    rows = []
    for a, rep in reports.items():
        acc = rep.gaps.gaps["acc"]
        row: dict[str, Any] = {
            "attribute": a,
            "groups": " ".join(rep.groups),
            "ranked_groups": " ".join(rep.ranked),
            "bias_factor": rep.bias_factor,
            "bias_low_group": rep.bias_pair[0],
            "bias_high_group": rep.bias_pair[1],
            "favoured": acc.favoured,
            "acc_diff": acc.diff,
            "acc_diff_of": f"{acc.group_a} - {acc.group_b}",
            "acc_diff_low": acc.low,
            "acc_diff_high": acc.high,
            "acc_p_value": acc.p_value,
            "acc_p_adjusted": adjusted[(a, "acc")],
            "class_ratio": rep.gaps.class_ratio.get("verdict"),
            **rep.lin,
        }
        fused = rep.curve_aucs.get(POOLED, {})
        fused_ci = rep.curve_auc_ci.get(POOLED, {})
        for key in ("fdr_auc", "abf_auc"):
            row[key] = fused.get(key)
            row[f"{key}_low"], row[f"{key}_high"] = fused_ci.get(key, (None, None))
        gap = rep.calibration.gap if rep.calibration else None
        row["ece_gap"] = gap.diff if gap else None
        row["ece_gap_of"] = f"{gap.group_a} - {gap.group_b}" if gap else None
        row["ece_gap_low"], row["ece_gap_high"] = (gap.low, gap.high) if gap else (None, None)
        notes = {"acc_diff interval": acc.note} if acc.note else {}
        if gap and gap.note:
            notes["ece_gap interval"] = gap.note
        notes |= rep.curve_auc_notes.get(POOLED, {})
        row["notes"] = notes_text(notes)
        rows.append(row)
    return rows


def calibration_gap_rows(reports: dict[str, AttributeReport]) -> list[dict[str, Any]]:
    """``calibration_gaps``: per attribute the signed ECE gap between the groups furthest
    apart (``ece_a - ece_b``) with the interval of the difference, the level and the bins."""
    rows = []
    for a, rep in reports.items():
        cal = rep.calibration
        if cal is None:
            continue
        gap = cal.gap
        rows.append(
            {
                "attribute": a,
                "level": rep.level,
                "group_a": gap.group_a,
                "group_b": gap.group_b,
                "ece_a": gap.ece_a,
                "ece_b": gap.ece_b,
                "diff": gap.diff,
                "low": gap.low,
                "high": gap.high,
                "confidence": cal.confidence,
                "n_bins": cal.n_bins,
                "n_boot": cal.n_boot,
                "ranked_groups": " ".join(cal.ranked),
                "note": gap.note,
            }
        )
    return rows


def write_report(
    reports: dict[str, AttributeReport],
    out_dir: str | Path,
    figures: bool = True,
    threshold: DecisionThreshold | None = None,
) -> Path:
    """Write ``fairness.json``, tables (``summary``, ``group_metrics``, ``fdr_abf_auc``,
    ``curves``, ``odta``, ``gaps``, ``calibration_gaps``: CSV/MD/JSON) and figures under ``out_dir``; ``threshold``
    (the one the reports decided with) is recorded with its source in ``fairness.json``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    decided = {} if threshold is None else {"threshold_from": threshold.source}
    write_json(out / "fairness.json", {a: {**r.to_json(), **decided} for a, r in reports.items()})
    atomic_write_text(out / "section.html", f"<html><body>{html_section(reports)}</body></html>\n")
    write_table(summary_rows(reports), out / "summary")
    rows = group_rows(reports)
    write_table_files(
        out / "group_metrics", to_csv(rows), group_markdown(rows), [dict(r) for r in rows]
    )
    auc_rows, curve_rows, odta_rows, gap_rows = [], [], [], []
    for a, rep in reports.items():
        for tg, v in rep.curve_aucs.items():
            ci = rep.curve_auc_ci.get(tg, {})
            auc_rows.append({"attribute": a, "threshold_group": tg, **v})
            for key in ("fdr_auc", "abf_auc"):
                auc_rows[-1][f"{key}_low"], auc_rows[-1][f"{key}_high"] = ci.get(key, (None, None))
            auc_rows[-1]["notes"] = notes_text(rep.curve_auc_notes.get(tg, {}))
        for tg, c in rep.curves.items():
            for k, x in enumerate(c.xs):
                curve_rows.append(
                    {
                        "attribute": a,
                        "threshold_group": tg,
                        "x": float(x),
                        "tau": c.tau[k],
                        "fdr": c.fdr[k],
                        "abf": c.abf[k],
                        "a_fdr": c.a_fdr[k],
                        "b_fdr": c.b_fdr[k],
                        "a_abf": c.a_abf[k],
                        "b_abf": c.b_abf[k],
                    }
                )
        for tg, per in rep.odta.items():
            for g, values in per.items():
                for x, v in zip(rep.odta_xs, values, strict=True):
                    odta_rows.append(
                        {
                            "attribute": a,
                            "threshold_group": tg,
                            "test_group": g,
                            "apcer_x": x,
                            "one_minus_bpcer": float(v),
                        }
                    )
        for gap in rep.gaps.gaps.values():
            gap_rows.append({"attribute": a, **gap.as_dict()})
    write_table(auc_rows, out / "fdr_abf_auc")
    write_table(curve_rows, out / "curves")
    write_table(odta_rows, out / "odta")
    adjusted = gap_p_adjusted(reports)
    gap_rows = [
        _with_after(r, "p_value", "p_adjusted", adjusted[(r["attribute"], r["metric"])])
        for r in gap_rows
    ]
    write_table(gap_rows, out / "gaps")
    write_table(calibration_gap_rows(reports), out / "calibration_gaps")
    if figures:
        fig_dir = out / "figures"
        for a, rep in reports.items():
            plots.plot_group_roc(
                rep.y_true,
                rep.y_score,
                rep.group_of,
                fig_dir / f"{a}_roc.png",
                f"ROC per {a}",
                pad=rep.task == "pad",
            )
            plots.plot_group_accuracy(
                {g: m["acc"] for g, m in rep.groups.items()},
                rep.bias_factor,
                rep.bias_pair,
                fig_dir / f"{a}_accuracy.png",
                a,
                intervals={g: m["ci"]["acc"] for g, m in rep.groups.items()},
            )
            if rep.curves:
                plots.plot_fairness_curves(rep.curves, fig_dir / f"{a}_fdr_abf.png", a)
            if rep.odta:
                plots.plot_odta(rep.odta, rep.odta_xs, fig_dir / f"{a}_odta.png", a)
    return out


def format_summary(reports: dict[str, AttributeReport]) -> str:
    """Per attribute: per-group ACC, FPR, FNR, AUC, EER; the bias factor with its direction,
    signed difference, interval and p-value; the class-ratio check; the other signed gaps;
    FDR/ABF-AUC with intervals. Undefined values print as ``undefined`` with the reason."""

    def pct(v: float | None, signed: bool = False) -> str:
        if v is None or not np.isfinite(v):
            return UNDEFINED
        return f"{100 * v:+.2f}" if signed else f"{100 * v:.2f}"

    def interval(low: float, high: float, note: str = "") -> str:
        if not (np.isfinite(low) and np.isfinite(high)):
            return f" [interval {UNDEFINED}: {note}]" if note else ""
        return f" [{pct(low, True)}, {pct(high, True)}]"

    def gap_line(gap) -> str:
        p_text = f", p = {gap.p_value:.3g}" if np.isfinite(gap.p_value) else ""
        value = pct(gap.diff, True) + ("%" if np.isfinite(gap.diff) else "")
        return f"{gap.group_a} - {gap.group_b} = {value}{interval(gap.low, gap.high, gap.note)}{p_text}"

    lines = []
    for a, rep in reports.items():
        gaps = rep.gaps
        level = int(round(100 * gaps.confidence))
        lines.append(f"== {a} ({rep.level} level) ==")
        lines.append(
            f"{'group':<16}{'n':>7}{'ACC%':>10}{'FPR%':>10}{'FNR%':>10}{'AUC%':>10}{'EER%':>10}"
        )
        for g, m in rep.groups.items():
            mark = "" if m["ranked"] else "  (too small: not ranked)"
            cells = "".join(f"{pct(m[k]):>10}" for k in ("acc", "fpr", "fnr", "auc", "eer"))
            lines.append(f"{g:<16}{m['n']:>7}{cells}{mark}")
        for g in rep.groups:
            if gaps.notes.get(g):
                lines.append(f"  {notes_text(gaps.notes[g], 'interval', g)}")
        acc = gaps.gaps["acc"]
        favoured = f"{acc.favoured} favoured" if acc.favoured else "no group favoured"
        lines.append(
            f"bias factor: {pct(rep.bias_factor)}% ({rep.bias_pair[0]} vs {rep.bias_pair[1]}, "
            f"{favoured}); ACC {gap_line(acc)}"
        )
        if gaps.class_ratio.get("verdict"):
            lines.append(f"  class ratio: {gaps.class_ratio['verdict']}")
        for m, gap in gaps.gaps.items():
            if m == "acc":
                continue
            if not gap.group_a:
                lines.append(f"  {m.upper()} gap {UNDEFINED}: {gap.note}")
                continue
            lines.append(f"  {m.upper()} {gap_line(gap)} (class mix does not enter it)")
        if any(np.isfinite(g.low) for g in gaps.gaps.values()):
            lines.append(
                f"  [{level}% intervals: error rates (ACC, FPR, FNR, error rate) by Wilson score "
                "intervals on the effective number of frames (design effect of the videos), "
                "combined by MOVER; AUC by Obuchowski's clustered DeLong variance; EER by a "
                "bootstrap of videos (or the configured unit) within group x class; with more "
                "than two groups simultaneous over the pairs]"
            )
        if any(np.isfinite(g.p_value) for g in gaps.gaps.values()):
            lines.append(
                "  [p: permutation test of no difference among all groups, within class: group "
                "labels shuffled among real videos and among fake videos separately, so each "
                "group keeps its real/fake counts; for ACC it asks whether the gap exceeds what "
                "the class mixes give with equal error rates]"
            )
        if rep.calibration is not None:
            cal = rep.calibration
            eces = ", ".join(f"{g} {pct(v)}%" for g, v in cal.ece.items())
            gap = cal.gap
            value = pct(gap.diff, True) + ("%" if np.isfinite(gap.diff) else "")
            lines.append(
                f"ECE ({cal.n_bins} bins): {eces}; gap {gap.group_a} - {gap.group_b} = {value}"
                f"{interval(gap.low, gap.high, gap.note)} (basic bootstrap of videos, joint)"
            )
        if POOLED in rep.curve_aucs:
            area = {k: _area_text(rep, POOLED, k) for k in ("fdr_auc", "abf_auc")}
            lines.append(f"FDR-AUC {area['fdr_auc']}  ABF-AUC {area['abf_auc']} (tau from fused)")
        lines.append("")
    return "\n".join(lines)


def _area_text(rep: AttributeReport, tg: str, key: str) -> str:
    """FDR-AUC or ABF-AUC of threshold group ``tg`` with its interval, or why it is undefined."""
    v = rep.curve_aucs[tg][key]
    low, high = rep.curve_auc_ci.get(tg, {}).get(key, (np.nan, np.nan))
    note = rep.curve_auc_notes.get(tg, {}).get(key, "")
    if not np.isfinite(v):
        return f"{UNDEFINED} ({note})"
    if np.isfinite(low):
        return f"{v:.3f} [{low:.3f}, {high:.3f}]"
    return f"{v:.3f}" + (f" [{note}]" if note else "")


#: The families of the summary's HTML tables (each after the attribute; intervals as cells).
SUMMARY_FAMILIES = {
    "Bias factor and accuracy gap": ("groups", "ranked_groups", "bias_factor", "bias_low_group")
    + ("bias_high_group", "favoured", "acc_diff", "acc_diff_of", "acc_p_value", "acc_p_adjusted")
    + ("class_ratio",),
    "Calibration within groups (ECE gap)": ("ece_gap", "ece_gap_of"),
    "Lin et al. and FDR/ABF-AUC (fused threshold)": (),  # every other metric
}


def html_section(reports: dict[str, AttributeReport]) -> str:
    """The summary and per-group tables as an HTML fragment, narrow enough for a screen: one
    table per metric family (intervals as ``[low, high]`` cells; the ISO/IEC 30107-3 family
    only for presentation attacks) and the notes as a list under the tables."""

    def table(rows: list[dict[str, Any]], caption: str) -> str:
        cols = list(rows[0])
        cells = [[r.get(c) for c in cols] for r in rows]
        fmt = lambda i, j, v: format_number(v, 4)  # noqa: E731
        return html_text(cols, cells, fmt, caption=caption, sections=False)

    def with_intervals(row: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
        out = {}
        for k in keys:
            out[k] = row.get(k)
            if f"{k}_low" in row:
                out[f"{k} interval"] = _interval_cell(row, k, 4)
        return out

    pad = any(rep.task == "pad" for rep in reports.values())
    summary = summary_rows(reports)
    parts = []
    listed = {c for family in SUMMARY_FAMILIES.values() for c in family}
    for title, family in SUMMARY_FAMILIES.items():
        keys = list(family) or [
            c
            for c in summary[0]
            if c not in ("attribute", "notes", *listed) and not c.endswith(("_low", "_high"))
        ]
        parts.append(
            table(
                [{"attribute": r["attribute"], **with_intervals(r, keys)} for r in summary], title
            )
        )
    groups = group_rows(reports)
    lows = [c[: -len("_low")] for c in groups[0] if c.endswith("_low")]
    lows = [m for m in lows if pad or not m.startswith("iso_")]
    for title, family in GROUP_FAMILIES.items():
        if title == "Notes" or (title.startswith("ISO") and not pad):
            continue
        wanted = list(family)
        if title.startswith("ISO"):
            wanted += [c for c in groups[0] if c.startswith(("apcer[", "bpcer@"))]
        key = ("attribute", "group")
        rows = [
            {**{k: r[k] for k in key}, **{m: _interval_cell(r, m, 4) for m in lows}}
            if title == "Intervals"
            else {k: r.get(k) for k in (*key, *wanted)}
            for r in groups
        ]
        parts.append(table(rows, f"Per group: {title.lower()}"))
    notes = [(r["attribute"], r["notes"]) for r in summary if r["notes"]]
    notes += [(r["attribute"], r["notes"]) for r in groups if r["notes"]]
    if notes:
        items = "".join(f"<li><b>{html.escape(a)}</b>: {html.escape(n)}</li>" for a, n in notes)
        parts.append(f"<p><b>Notes</b></p><ul class='notes'>{items}</ul>")
    return "\n".join(parts)


def report_sections(
    reports: dict[str, AttributeReport], figure_dir: str | Path | None = None
) -> list[tuple[str, list[Any]]]:
    """Sections for ``evaluation.report.write_report(extra_sections=...)``: the tables as HTML,
    then the figures found in ``figure_dir`` (written by :func:`write_report`)."""
    items: list[Any] = [html_section(reports)]
    if figure_dir is not None:
        for a in reports:
            for kind in ("accuracy", "roc", "fdr_abf", "odta"):
                path = Path(figure_dir) / f"{a}_{kind}.png"
                if path.is_file():
                    items.append(path)
    return [("Fairness", items)]
