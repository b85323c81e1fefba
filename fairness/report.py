"""Fairness report of a predictions file: every group metric per attribute, tables and figures.

:func:`fairness_report` computes, for each attribute column of a predictions file, the
per-group metrics, bias factor (paper 000), Lin et al. metrics, ISO/IEC 30107-3 metrics per
group, FDR/ABF curves and areas with the pooled threshold and each group's threshold (ODTA,
paper 001), 1-BPCER at APCER_x per threshold group, and bootstrap CIs of the gaps.
:func:`write_report` writes tables (CSV/MD/JSON) and figures; :func:`format_summary` gives the
text that ``scripts/fairness.py`` prints.
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from configs import load_config
from evaluation.metrics import SingleClassError, video_scores
from evaluation.predictions import Predictions
from fairness import plots
from fairness.abf import (
    DEFAULT_XS,
    POOLED,
    FairnessCurves,
    curve_auc,
    fairness_curves,
    is_missing,
    odta_curves,
)
from fairness.iso import ISO_APCER_POINTS, iso_metrics
from fairness.metrics import bias_factor_pair, bootstrap_gaps, group_metrics, lin_metrics
from fairness.tables import write_table
from preprocessing.files import atomic_write_text, jsonable, write_json

log = logging.getLogger(__name__)


@dataclass
class ReportConfig:
    """Settings of a fairness report (``configs/fairness/report.yaml``)."""

    attributes: list[str] | None = None  # None: every attribute column of the predictions
    level: Literal["frame", "video"] = "frame"
    video_reduce: Literal["mean", "median", "max"] = "mean"
    threshold: float = 0.5
    alpha: float = 0.5
    xs: list[float] | None = None  # FDR/ABF operating points; None: 0.005 to 0.2 step 0.005
    iso_points: list[float] = field(default_factory=lambda: list(ISO_APCER_POINTS))
    threshold_groups: list[str] | None = None  # ODTA; None: fused + every group with attacks
    min_denominator: float = 1e-3
    bootstrap: int = 1000  # 0 switches the confidence intervals off
    confidence: float = 0.95
    seed: int = 0
    figures: bool = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        if self.bootstrap < 0 or not 0.0 < self.confidence < 1.0:
            raise ValueError("bootstrap must be >= 0 and confidence in (0, 1)")


def load_report_config(*paths: str | Path | None, overrides: Any = ()) -> ReportConfig:
    """Defaults < YAML files < ``key=value`` overrides."""
    return load_config(ReportConfig, *paths, overrides=overrides)


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
    bootstrap: dict[str, dict[str, float]]
    y_true: np.ndarray
    y_score: np.ndarray
    group_of: np.ndarray
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return jsonable(
            {
                "attribute": self.attribute,
                "level": self.level,
                "groups": self.groups,
                "bias_factor": self.bias_factor,
                "bias_pair": list(self.bias_pair),
                "lin": self.lin,
                "fdr_abf_auc": self.curve_aucs,
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
                    }
                    for k, c in self.curves.items()
                },
                "odta": {"xs": self.odta_xs, "one_minus_bpcer": self.odta},
                "bootstrap": self.bootstrap,
                "errors": self.errors,
            }
        )


def attribute_arrays(
    pred: Predictions, attribute: str, level: str = "frame", reduce: str = "mean"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(labels, scores, groups, video keys) at frame or video level for one attribute."""
    if attribute not in pred.attributes:
        raise KeyError(
            f"attribute {attribute!r} is not a column of the predictions; columns: {sorted(pred.attributes)}"
        )
    groups = np.array(
        ["" if is_missing(g) else str(g) for g in pred.attributes[attribute]], dtype=object
    )
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


def _attempt(errors: list[str], what: str, fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (SingleClassError, ValueError) as exc:
        errors.append(f"{what}: {exc}")
        log.warning("%s skipped: %s", what, exc)
        return None


def attribute_report(
    pred: Predictions, attribute: str, cfg: ReportConfig
) -> AttributeReport | None:
    """All fairness figures of one attribute; None (logged) when it has fewer than two groups."""
    y_true, y_score, groups, ids = attribute_arrays(pred, attribute, cfg.level, cfg.video_reduce)
    keep = groups != ""
    if (~keep).any():
        log.warning(
            "%s: %d of %d rows have no value and are left out", attribute, (~keep).sum(), len(keep)
        )
    y_true, y_score, groups, ids = y_true[keep], y_score[keep], groups[keep], ids[keep]
    method_of = dict(zip(pred.video_key, pred.method, strict=True))
    species = np.array([method_of[k] for k in ids], dtype=object)  # attack species = method
    names = sorted(set(groups))
    if len(names) < 2:
        log.warning(
            "attribute %r has %d group(s) %s: no fairness metrics", attribute, len(names), names
        )
        return None
    errors: list[str] = []
    per_group = group_metrics(y_true, y_score, groups, cfg.threshold)
    for g in names:
        rows = groups == g
        iso = None
        if len(set(y_true[rows].tolist())) == 2:
            iso = _attempt(
                errors,
                f"ISO metrics of {g}",
                iso_metrics,
                y_true[rows],
                y_score[rows],
                cfg.threshold,
                species[rows],
                cfg.iso_points,
            )
        per_group[g]["iso"] = iso
    y_pred = (y_score >= cfg.threshold).astype(np.int64)
    bias, low, high = bias_factor_pair(y_true, y_pred, groups)
    lin = lin_metrics(y_true, y_score, groups, cfg.threshold)
    xs = np.asarray(cfg.xs if cfg.xs is not None else DEFAULT_XS, dtype=np.float64)
    threshold_groups = cfg.threshold_groups or [POOLED] + [
        g for g in names if np.any((groups == g) & (y_true == 1))
    ]
    curves: dict[str, FairnessCurves] = {}
    aucs: dict[str, dict[str, float]] = {}
    for tg in threshold_groups:
        c = _attempt(
            errors,
            f"FDR/ABF with tau from {tg}",
            fairness_curves,
            y_true,
            y_score,
            groups,
            xs,
            cfg.alpha,
            tg,
            cfg.min_denominator,
        )
        if c is not None:
            curves[tg] = c
            aucs[tg] = {"fdr_auc": curve_auc(xs, c.fdr), "abf_auc": curve_auc(xs, c.abf)}
    valid_tg = [tg for tg in threshold_groups if tg in curves]
    odta = (
        _attempt(errors, "ODTA", odta_curves, y_true, y_score, groups, cfg.iso_points, valid_tg)
        or {}
    )
    boot = {}
    if cfg.bootstrap:
        boot = bootstrap_gaps(
            y_true,
            y_score,
            groups,
            ids,
            threshold=cfg.threshold,
            n_boot=cfg.bootstrap,
            confidence=cfg.confidence,
            seed=cfg.seed,
        )
    return AttributeReport(
        attribute=attribute,
        level=cfg.level,
        groups=per_group,
        bias_factor=bias,
        bias_pair=(low, high),
        lin=lin,
        curves=curves,
        curve_aucs=aucs,
        odta=odta,
        odta_xs=list(cfg.iso_points),
        bootstrap=boot,
        y_true=y_true,
        y_score=y_score,
        group_of=groups,
        errors=errors,
    )


def fairness_report(
    pred: Predictions, attributes: list[str] | None = None, cfg: ReportConfig | None = None
) -> dict[str, AttributeReport]:
    """Reports of the given attributes (default: ``cfg.attributes`` or every attribute column)."""
    cfg = cfg or ReportConfig()
    names = attributes or cfg.attributes or sorted(pred.attributes)
    if not names:
        raise ValueError("the predictions have no attribute columns: nothing to group by")
    missing = [a for a in names if a not in pred.attributes]
    if missing:
        raise KeyError(
            f"attributes {missing} are not columns of the predictions; columns: {sorted(pred.attributes)}"
        )
    reports = {}
    for a in names:
        rep = attribute_report(pred, a, cfg)
        if rep is not None:
            reports[a] = rep
    return reports


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
)


def group_rows(reports: dict[str, AttributeReport]) -> list[dict[str, Any]]:
    """One row per (attribute, group) with detection and ISO metrics."""
    rows = []
    for a, rep in reports.items():
        for g, m in rep.groups.items():
            row: dict[str, Any] = {"attribute": a, "group": g, **{k: m[k] for k in _GROUP_COLUMNS}}
            iso = m.get("iso") or {}
            row.update(
                {"apcer": iso.get("apcer"), "bpcer": iso.get("bpcer"), "acer": iso.get("acer")}
            )
            for species, v in (iso.get("apcer_per_species") or {}).items():
                row[f"apcer[{species}]"] = v
            for key, v in (iso.get("bpcer_at_apcer") or {}).items():
                row[f"bpcer@apcer={key}"] = v
            rows.append(row)
    return rows


def summary_rows(reports: dict[str, AttributeReport]) -> list[dict[str, Any]]:
    """One row per attribute: bias factor with pair and CI, Lin et al. metrics, FDR/ABF-AUC."""
    rows = []
    for a, rep in reports.items():
        ci = rep.bootstrap.get("acc", {})
        row: dict[str, Any] = {
            "attribute": a,
            "groups": " ".join(rep.groups),
            "bias_factor": rep.bias_factor,
            "bias_low_group": rep.bias_pair[0],
            "bias_high_group": rep.bias_pair[1],
            "bias_ci_low": ci.get("low"),
            "bias_ci_high": ci.get("high"),
            **rep.lin,
        }
        fused = rep.curve_aucs.get(POOLED, {})
        row["fdr_auc"] = fused.get("fdr_auc")
        row["abf_auc"] = fused.get("abf_auc")
        rows.append(row)
    return rows


def write_report(
    reports: dict[str, AttributeReport], out_dir: str | Path, figures: bool = True
) -> Path:
    """Write ``fairness.json``, tables (``summary``, ``group_metrics``, ``fdr_abf_auc``,
    ``curves``, ``odta``, ``bootstrap``: CSV/MD/JSON) and figures under ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "fairness.json", {a: r.to_json() for a, r in reports.items()})
    atomic_write_text(out / "section.html", f"<html><body>{html_section(reports)}</body></html>\n")
    write_table(summary_rows(reports), out / "summary")
    write_table(group_rows(reports), out / "group_metrics")
    auc_rows, curve_rows, odta_rows, boot_rows = [], [], [], []
    for a, rep in reports.items():
        for tg, v in rep.curve_aucs.items():
            auc_rows.append({"attribute": a, "threshold_group": tg, **v})
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
        for m, v in rep.bootstrap.items():
            boot_rows.append({"attribute": a, "metric": m, **v})
    write_table(auc_rows, out / "fdr_abf_auc")
    write_table(curve_rows, out / "curves")
    write_table(odta_rows, out / "odta")
    write_table(boot_rows, out / "bootstrap")
    if figures:
        fig_dir = out / "figures"
        for a, rep in reports.items():
            plots.plot_group_roc(
                rep.y_true, rep.y_score, rep.group_of, fig_dir / f"{a}_roc.png", f"ROC per {a}"
            )
            plots.plot_group_accuracy(
                {g: m["acc"] for g, m in rep.groups.items()},
                rep.bias_factor,
                rep.bias_pair,
                fig_dir / f"{a}_accuracy.png",
                a,
            )
            if rep.curves:
                plots.plot_fairness_curves(rep.curves, fig_dir / f"{a}_fdr_abf.png", a)
            if rep.odta:
                plots.plot_odta(rep.odta, rep.odta_xs, fig_dir / f"{a}_odta.png", a)
    return out


def format_summary(reports: dict[str, AttributeReport]) -> str:
    """Per attribute: ACC, AUC, EER per group, the bias factor with its pair, FDR/ABF-AUC."""

    def pct(v: float | None) -> str:
        return "   n/a" if v is None or np.isnan(v) else f"{100 * v:6.2f}"

    lines = []
    for a, rep in reports.items():
        lines.append(f"== {a} ({rep.level} level) ==")
        lines.append(f"{'group':<16}{'n':>7}{'ACC%':>8}{'AUC%':>8}{'EER%':>8}")
        for g, m in rep.groups.items():
            lines.append(
                f"{g:<16}{m['n']:>7}{pct(m['acc']):>8}{pct(m['auc']):>8}{pct(m['eer']):>8}"
            )
        ci = rep.bootstrap.get("acc")
        ci_text = f" [{pct(ci['low']).strip()}, {pct(ci['high']).strip()}]" if ci else ""
        lines.append(
            f"bias factor: {pct(rep.bias_factor).strip()}%{ci_text} "
            f"({rep.bias_pair[0]} vs {rep.bias_pair[1]})"
        )
        fused = rep.curve_aucs.get(POOLED)
        if fused:
            lines.append(
                f"FDR-AUC {fused['fdr_auc']:.3f}  ABF-AUC {fused['abf_auc']:.3f} (tau from fused)"
            )
        lines.append("")
    return "\n".join(lines)


def html_section(reports: dict[str, AttributeReport]) -> str:
    """The summary and per-group tables as an HTML fragment."""
    from fairness.tables import columns_of

    def table(rows: list[dict[str, Any]]) -> str:
        cols = columns_of(rows)
        head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(c)))}</td>" for c in cols) + "</tr>"
            for r in rows
        )
        return f"<table><tr>{head}</tr>{body}</table>"

    return "\n".join([table(summary_rows(reports)), table(group_rows(reports))])


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


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if np.isnan(v) else f"{v:.4f}"
    return "" if v is None else str(v)
