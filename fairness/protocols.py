"""Fairness protocols (paper 001, Sec. III-C) and their runner.

A protocol YAML (``configs/fairness/protocol_*.yaml``) names the attribute whose groups split
the training data, the sub-protocols (train on all groups fused, or on some groups only), the
attributes whose groups are tested, the detectors, and whether to train a baseline and/or a
FairSWAP model. :func:`run_protocol` trains every (detector, variant, sub-protocol) through the
trainer, predicts the test split, and writes the paper's tables:

* ``eer``: EER (%) per test group, baseline / FairSWAP / improvement (Tables II, IV, VI);
* ``fdr_abf``: FDR-AUC and ABF-AUC per sub-protocol (or tested attribute) with their average
  (Tables III, V, VII);
* ``odta``: 1 - BPCER (%) at APCER_x with tau from the fused set and from each group
  (Figs. 6, 8, 10, 11), and ``curves``: FDR and ABF at every x (Figs. 7, 9), with figures.

Every table follows the report's ``species_rule`` (``--species-rule``): attack species (the
``method`` column) enter APCER, tau = APCER_x and the EER pooled or by the worst species.

Every training of a protocol gets, below its own ``train:`` overrides (:func:`protocol_train_overrides`):

* ``train.fairswap.group_key`` = :attr:`FairnessProtocol.swap_key` (``fairswap_group_key`` when
  set, else ``train_attribute``), so FairSWAP swaps across the very groups the protocol studies
  (protocol 2: occlusion, not gender). ``train: {train: {fairswap: {group_key: ...}}}`` in a
  protocol is an error: the key is the protocol's, set by ``fairswap_group_key``.
* fused sub-protocols (``train_groups: null``) with ``fused_balance: <attribute>``:
  ``train.sampler = class_group_balanced`` over (label, attribute) cells, i.e. bona fide : attack
  about 1:1 and, within each class, e.g. female : male about 1:1 (paper 001 Sec. IV-C and VI-A:
  "the ratio of male and female samples in the fused training data is close to 1:1, achieved by
  data oversampling"). Single-group sub-protocols keep the trainer config's sampler
  (``configs/train/pad.yaml``: class_balanced).

A protocol's ``models:`` section gives per-detector model settings, e.g. PG-FDD's demographic
groups (``models: {pg_fdd: {group_attributes: [lighting]}}``); they are applied to that
detector's trainings only, on top of everything above. A detector trained on real/fake pairs
(UCF, PG-FDD) cannot take FairSWAP's batch transform: asking for both is an error before any
training starts.

Finished runs are skipped on a re-run (their predictions file is kept), so a killed protocol
resumes where it stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairforensics.configs import load_config
from fairforensics.configs.loader import deep_merge
from fairforensics.detectors import get_detector_class
from fairforensics.evaluation.metrics import SingleClassError
from fairforensics.evaluation.predict import predict_index
from fairforensics.evaluation.predictions import Predictions, read_predictions, write_predictions
from fairforensics.evaluation.runs import load_run
from fairforensics.fairness import plots
from fairforensics.fairness.abf import (
    DEFAULT_XS,
    FairnessCurves,
    curve_areas,
    fairness_curves,
    odta_curves,
)
from fairforensics.fairness.iso import ISO_APCER_POINTS, check_species_rule, eer_species
from fairforensics.fairness.report import ReportConfig, attribute_arrays
from fairforensics.fairness.splits import (
    derive_any,
    filter_train,
    gender_balanced_split,
    save_index,
)
from fairforensics.fairness.tables import write_table
from fairforensics.preprocessing.device import resolve_device
from fairforensics.preprocessing.files import write_json
from fairforensics.preprocessing.resolve import resolve_index, resolve_index_path

log = logging.getLogger(__name__)

VARIANTS = {False: "B", True: "FairSwap"}


@dataclass
class SubProtocol:
    """One training subset: ``train_groups`` of the protocol's ``train_attribute`` (null: fused)."""

    id: str
    train_groups: list[str] | None = None
    label: str | None = None  # row name in the tables; default: "Fused" or the groups


@dataclass
class DerivedAttribute:
    """An attribute that is ``labels[0]`` when any of ``any_of`` is positive (e.g. occlusion)."""

    name: str
    any_of: list[str]
    labels: tuple[str, str] = ("yes", "no")


@dataclass
class BalanceConfig:
    """Paper 000's re-splitting: balance by ``attribute``, train:test 3:2, 10 % of train as val."""

    enabled: bool = False
    attribute: str = "gender"
    train_test: tuple[int, int] = (3, 2)
    val_fraction: float = 0.1
    seed: int = 0


@dataclass
class FairnessProtocol:
    """A protocol YAML; see ``configs/fairness/protocol_1.yaml``."""

    name: str
    test_attributes: list[str]
    subprotocols: list[SubProtocol]
    detectors: list[str]
    train_attribute: str | None = None
    description: str = ""
    fairswap: list[bool] = field(default_factory=lambda: [False, True])
    derive: list[DerivedAttribute] = field(default_factory=list)
    balance: BalanceConfig = field(default_factory=BalanceConfig)
    train: dict[str, Any] = field(default_factory=dict)  # trainer overrides (TrainConfig shape)
    level: str = "frame"
    alpha: float = 0.5
    xs: list[float] | None = None
    fairswap_group_key: str | None = None  # null: train_attribute
    fused_balance: str | None = None  # fused training: oversample label x this attribute
    models: dict[str, dict[str, Any]] = field(default_factory=dict)  # per-detector model settings

    @property
    def swap_key(self) -> str | None:
        """FairSWAP's group key: ``fairswap_group_key``, else ``train_attribute``."""
        return self.fairswap_group_key or self.train_attribute

    def __post_init__(self) -> None:
        if not self.test_attributes or not self.subprotocols or not self.detectors:
            raise ValueError("test_attributes, subprotocols and detectors must not be empty")
        if not self.fairswap:
            raise ValueError("fairswap must list at least one of false (baseline) and true")
        if any(s.train_groups for s in self.subprotocols) and not self.train_attribute:
            raise ValueError("subprotocols with train_groups need train_attribute")
        ids = [s.id for s in self.subprotocols]
        if len(set(ids)) != len(ids):
            raise ValueError(f"subprotocol ids must be unique, got {ids}")
        if True in self.fairswap and not self.swap_key:
            raise ValueError(
                "fairswap: [.., true] needs the groups to swap across: set train_attribute or "
                "fairswap_group_key"
            )
        if "group_key" in ((self.train.get("train") or {}).get("fairswap") or {}):
            raise ValueError(
                "train.train.fairswap.group_key: FairSWAP's groups are the protocol's; set "
                "fairswap_group_key instead (default: train_attribute)"
            )
        if self.level not in ("frame", "video"):
            raise ValueError(f"level must be 'frame' or 'video', got {self.level!r}")
        stray = sorted(set(self.models) - set(self.detectors))
        if stray:
            raise ValueError(
                f"models names {', '.join(stray)}, not in detectors ({', '.join(self.detectors)})"
            )


def load_protocol(path: str | Path, overrides: Sequence[str] = ()) -> FairnessProtocol:
    """Read and validate a protocol YAML (errors name the file and key)."""
    return load_config(FairnessProtocol, path, overrides=overrides, kind="fairness")


TrainRun = Callable[[str, Sequence[str | Path], dict[str, Any]], Path]


def train_and_predict(
    train: TrainRun,
    detector: str,
    data_root: Path,
    dataset: str,
    fairswap: bool,
    out_dir: Path,
    run_name: str,
    train_configs: Sequence[str | Path],
    overrides: dict[str, Any],
) -> Predictions:
    """Train ``detector`` on ``<data_root>/<dataset>.json`` with ``train`` and predict its test
    split with the best checkpoint.

    ``train(detector, train_configs, overrides)`` runs a training and returns its run directory
    (fairness does not import training; ``scripts/fairness.py`` passes one built on
    ``training.Trainer``). Bind it with ``functools.partial`` to get a ``train_fn`` for
    :func:`run_protocol`.
    """

    layer = {
        "data": {
            "data_root": str(data_root),
            "train_data": [dataset],
            "val_data": [dataset],
            "test_data": [],  # the test split is predicted below, once, with the best weights
        },
        "train": {"fairswap": {"enabled": fairswap}},
        "output_dir": str(out_dir),
        "run_name": run_name,
    }
    run_dir = train(detector, list(train_configs), deep_merge(overrides, layer))
    model, cfg = load_run(run_dir, "best")
    t, data = cfg["train"], cfg["data"]
    return predict_index(
        model,
        resolve_index_path(dataset, data_root),
        split="test",
        frame_num=t["test_frame_num"],
        batch_size=t["eval_batch_size"] or t["batch_size"],
        num_workers=data["num_workers"],
        device=resolve_device(cfg["device"]),
    )


def protocol_train_overrides(
    protocol: FairnessProtocol, sub: SubProtocol, detector: str | None = None
) -> dict[str, Any]:
    """Trainer overrides of one sub-protocol: FairSWAP's group key, the fused sampler, then the
    protocol's own ``train:`` section and ``detector``'s ``models:`` entry on top (see the
    module docstring)."""
    train: dict[str, Any] = {}
    if protocol.swap_key:
        train["fairswap"] = {"group_key": protocol.swap_key}
    if protocol.fused_balance and not sub.train_groups:
        train["sampler"] = "class_group_balanced"
        train["group_key"] = protocol.fused_balance
    overrides = deep_merge({"train": train}, protocol.train)
    if detector in protocol.models:
        overrides = deep_merge(overrides, {"model": protocol.models[detector]})
    return overrides


def check_fairswap_detectors(protocol: FairnessProtocol, detectors: Sequence[str]) -> None:
    """FairSWAP needs one sample per index: a detector trained on pairs cannot take it."""
    if True not in protocol.fairswap:
        return
    paired = [d for d in detectors if "pairs" in get_detector_class(d).requires]
    if paired:
        raise ValueError(
            f"protocol {protocol.name}: {', '.join(paired)} train on real/fake pairs, which "
            "FairSWAP cannot swap; set fairswap: [false] (or run them in a protocol without "
            "FairSWAP)"
        )


def prepare_index(protocol: FairnessProtocol, data_root: str | Path, dataset: str):
    """The dataset index with derived attributes and (optionally) the balanced re-split."""
    index = resolve_index(dataset, data_root)
    for d in protocol.derive:
        index = derive_any(index, d.name, d.any_of, d.labels)
    b = protocol.balance
    if b.enabled:
        index = gender_balanced_split(index, b.attribute, b.train_test, b.val_fraction, b.seed)
    return index


def _row_label(sub: SubProtocol) -> str:
    if sub.label:
        return sub.label
    return "Fused" if not sub.train_groups else "+".join(sub.train_groups)


@dataclass
class _Evaluation:
    """What the tables need of one (detector, variant, sub-protocol, tested attribute)."""

    eers: dict[str, float]  # test group -> EER % under the species rule (NaN: one class)
    curves: FairnessCurves | None  # None when tau is undefined (no attacks)
    areas: dict[str, float]  # fdr_auc, abf_auc (NaN: undefined)
    notes: dict[str, str]  # why an area is undefined
    odta: dict[str, dict[str, np.ndarray]]  # tau from -> test group -> 1 - BPCER per APCER_x


def _evaluate(
    pred: Predictions,
    attribute: str,
    level: str,
    xs: np.ndarray,
    alpha: float,
    species_rule: str,
    odta_xs: Sequence[float],
) -> _Evaluation:
    """EER per test group, FDR/ABF curves and areas, ODTA, all under ``species_rule`` (attack
    species = the ``method`` column)."""
    y, s, g, keys = attribute_arrays(pred, attribute, level)
    method_of = dict(zip(pred.video_key, pred.method, strict=True))
    species = (
        np.array([method_of[k] for k in keys], dtype=object) if level == "video" else pred.method
    )
    eers = {}
    for name in sorted(set(g) - {""}):
        rows = g == name
        try:
            eers[name] = 100.0 * eer_species(y[rows], s[rows], species[rows], species_rule)[0]
        except SingleClassError:
            log.warning("%s=%s holds one class: EER undefined", attribute, name)
            eers[name] = float("nan")
    try:
        curves = fairness_curves(y, s, g, xs, alpha, species=species, species_rule=species_rule)
        odta = odta_curves(y, s, g, odta_xs, species=species, species_rule=species_rule)
    except (SingleClassError, ValueError) as exc:
        log.warning("FDR/ABF/ODTA of %s undefined: %s", attribute, exc)
        nan = float("nan")
        return _Evaluation(
            eers,
            None,
            {"fdr_auc": nan, "abf_auc": nan},
            dict.fromkeys(("fdr_auc", "abf_auc"), str(exc)),
            {},
        )
    areas, notes = curve_areas(curves)
    return _Evaluation(eers, curves, areas, notes, odta)


def _mean_or_undefined(values: list[float]) -> float:
    """The mean, or NaN when any value is undefined (an average over fewer rows would not
    compare with the other columns)."""
    return float(np.mean(values)) if values and np.isfinite(values).all() else float("nan")


def run_protocol(
    protocol: FairnessProtocol,
    data_root: str | Path,
    dataset: str,
    out_dir: str | Path,
    *,
    detectors: Sequence[str] | None = None,
    train_configs: Sequence[str | Path] = (),
    report_cfg: ReportConfig | None = None,
    train_fn: Callable[..., Predictions],
) -> dict[str, Path]:
    """Train and evaluate every detector of ``protocol``; write its tables under ``out_dir``.

    ``train_fn`` (e.g. ``functools.partial(train_and_predict, train)``) trains one model and
    returns test predictions; predictions land in ``out_dir/predictions/<detector>/<variant>/<sub>.csv``.
    ``report_cfg`` gives alpha, the species rule, the APCER_x points of ODTA and whether to
    draw figures. Returns ``{"eer", "fdr_abf", "odta", "curves"}`` paths (stems; each written
    as CSV, MD and JSON).
    """
    out = Path(out_dir)
    dets = list(detectors or protocol.detectors)
    check_fairswap_detectors(protocol, dets)
    xs = np.asarray(protocol.xs if protocol.xs is not None else DEFAULT_XS, dtype=np.float64)
    alpha = report_cfg.alpha if report_cfg is not None else protocol.alpha
    species_rule = report_cfg.species_rule if report_cfg is not None else "pooled"
    odta_xs = report_cfg.iso_points if report_cfg is not None else ISO_APCER_POINTS
    figures = report_cfg.figures if report_cfg is not None else True
    index = prepare_index(protocol, data_root, dataset)
    index_dir = out / "indices"
    names: dict[str, str] = {}
    for sub in protocol.subprotocols:
        sub_index = filter_train(index, protocol.train_attribute or "", sub.train_groups)
        names[sub.id] = f"{dataset}_p{sub.id.replace('.', '_')}"
        save_index(sub_index, index_dir / f"{names[sub.id]}.json", dataset=names[sub.id])
    results: dict[tuple[str, bool, str], Predictions] = {}
    for det in dets:
        for fs in protocol.fairswap:
            for sub in protocol.subprotocols:
                pred_path = out / "predictions" / det / VARIANTS[fs] / f"{sub.id}.csv"
                if pred_path.is_file():
                    log.info("%s exists: skipping this run", pred_path)
                    results[(det, fs, sub.id)] = read_predictions(pred_path)
                    continue
                run_name = f"{protocol.name}_{sub.id}_{det}_{VARIANTS[fs]}".replace(".", "_")
                log.info(
                    "protocol %s: training %s (%s) on %s", protocol.name, det, VARIANTS[fs], sub.id
                )
                pred = train_fn(
                    det,
                    index_dir,
                    names[sub.id],
                    fs,
                    out / "runs",
                    run_name,
                    list(train_configs),
                    protocol_train_overrides(protocol, sub, det),
                )
                write_predictions(pred_path, pred)
                results[(det, fs, sub.id)] = pred
    return write_protocol_tables(
        protocol,
        results,
        dets,
        out,
        xs,
        alpha,
        species_rule=species_rule,
        odta_xs=odta_xs,
        figures=figures,
    )


def write_protocol_tables(
    protocol: FairnessProtocol,
    results: dict[tuple[str, bool, str], Predictions],
    detectors: Sequence[str],
    out: Path,
    xs: np.ndarray,
    alpha: float,
    *,
    species_rule: str = "pooled",
    odta_xs: Sequence[float] = ISO_APCER_POINTS,
    figures: bool = True,
) -> dict[str, Path]:
    """Paper 001's tables and figures from the predictions of every run, under ``species_rule``:

    * ``eer``: EER % per trained subset and test group (Tables II, IV, VI);
    * ``fdr_abf``: FDR-AUC and ABF-AUC per trained subset (Tables III, V, VII);
    * ``odta``: 1 - BPCER % at APCER_x for tau from the fused set and from each group
      (Figs. 6, 8, 10, 11);
    * ``curves``: FDR and ABF at every x (Figs. 7, 9);
    * ``settings``: alpha, species rule, level and the x grids (JSON);

    plus ``figures/<name>_odta_<detector>_<variant>_<attribute>.png`` and
    ``figures/<name>_abf_<detector>_<attribute>.png``. An undefined value is NaN and printed
    ``undefined``; the ``notes`` column says why.
    """
    check_species_rule(species_rule)
    variants = [fs for fs in (False, True) if fs in protocol.fairswap]
    ev = {
        (d, fs, sub.id, a): _evaluate(
            results[(d, fs, sub.id)], a, protocol.level, xs, alpha, species_rule, odta_xs
        )
        for d in detectors
        for fs in variants
        for sub in protocol.subprotocols
        for a in protocol.test_attributes
    }
    runs = _Runs(protocol, ev, list(detectors), variants)
    paths = {
        "eer": out / f"{protocol.name}_eer",
        "fdr_abf": out / f"{protocol.name}_fdr_abf",
        "odta": out / f"{protocol.name}_odta",
        "curves": out / f"{protocol.name}_curves",
    }
    write_table(_eer_rows(runs), paths["eer"], digits=2)
    write_table(_fdr_abf_rows(runs), paths["fdr_abf"], digits=3)
    write_table(_odta_rows(runs, odta_xs), paths["odta"], digits=2)
    write_table(_curve_rows(runs), paths["curves"], digits=4)
    settings = {
        "alpha": alpha,
        "species_rule": species_rule,
        "level": protocol.level,
        "xs": [float(x) for x in xs],
        "odta_apcer_x": [float(x) for x in odta_xs],
    }
    write_json(out / f"{protocol.name}_settings.json", settings, indent=2)
    if figures:
        _protocol_figures(protocol, ev, detectors, variants, odta_xs, out / "figures")
    return paths


@dataclass
class _Runs:
    """The evaluations of every (detector, variant, sub-protocol, tested attribute)."""

    protocol: FairnessProtocol
    ev: dict[tuple[str, bool, str, str], _Evaluation]
    detectors: list[str]
    variants: list[bool]

    def cells(self) -> list[tuple[SubProtocol, str]]:
        """(sub-protocol, tested attribute) in table order."""
        return [
            (sub, a) for sub in self.protocol.subprotocols for a in self.protocol.test_attributes
        ]

    def columns(self) -> list[tuple[str, bool]]:
        """(detector, variant) in column order."""
        return [(d, fs) for d in self.detectors for fs in self.variants]


def _eer_rows(runs: _Runs) -> list[dict[str, Any]]:
    """EER % per trained subset and test group, a column per detector and variant (and the
    FairSWAP improvement); with several tested attributes an Average row (Table VI)."""
    rows: list[dict[str, Any]] = []
    for sub, attribute in runs.cells():
        evals = {(d, fs): runs.ev[(d, fs, sub.id, attribute)] for d, fs in runs.columns()}
        for g in sorted({g for e in evals.values() for g in e.eers}):
            row: dict[str, Any] = {"trained": _row_label(sub), "attribute": attribute, "test": g}
            for d in runs.detectors:
                for fs in runs.variants:
                    row[f"{d} {VARIANTS[fs]}"] = evals[(d, fs)].eers.get(g, float("nan"))
                if len(runs.variants) == 2:
                    row[f"{d} Impro"] = row[f"{d} FairSwap"] - row[f"{d} B"]
            rows.append(row)
    if len(runs.protocol.test_attributes) > 1 and rows:
        cols = [c for c in rows[0] if c not in ("trained", "attribute", "test")]
        average = {c: _mean_or_undefined([r[c] for r in rows]) for c in cols}
        rows.append({"trained": "", "attribute": "Average", "test": "", **average})
    return rows


def _fdr_abf_rows(runs: _Runs) -> list[dict[str, Any]]:
    """FDR-AUC, then ABF-AUC, per trained subset, each with its Average row; ``notes`` say
    why a value is undefined."""
    table: list[dict[str, Any]] = []
    single = len(runs.protocol.test_attributes) == 1
    for metric in ("FDR", "ABF"):
        key = f"{metric.lower()}_auc"
        rows = []
        for sub, attribute in runs.cells():
            name = _row_label(sub) if single else f"{_row_label(sub)} / {attribute}"
            row: dict[str, Any] = {"metric": metric, "trained": name}
            notes = []
            for d, fs in runs.columns():
                e = runs.ev[(d, fs, sub.id, attribute)]
                row[f"{d} {VARIANTS[fs]}"] = e.areas[key]
                if key in e.notes:
                    notes.append(f"{d} {VARIANTS[fs]}: {e.notes[key]}")
            row["notes"] = "; ".join(notes)
            rows.append(row)
        cols = [c for c in rows[0] if c not in ("metric", "trained", "notes")]
        avg = {c: _mean_or_undefined([r[c] for r in rows]) for c in cols}
        undefined = [c for c in cols if not np.isfinite(avg[c])]
        note = f"{', '.join(undefined)}: a row above is undefined" if undefined else ""
        table += [*rows, {"metric": metric, "trained": "Average", **avg, "notes": note}]
    return table


def _run_key(sub: SubProtocol, attribute: str, d: str, fs: bool) -> dict[str, Any]:
    return {
        "detector": d,
        "variant": VARIANTS[fs],
        "trained": _row_label(sub),
        "attribute": attribute,
    }


def _odta_rows(runs: _Runs, odta_xs: Sequence[float]) -> list[dict[str, Any]]:
    """1 - BPCER % at each APCER_x, per run, threshold group (tau from) and test group."""
    rows = []
    for sub, attribute in runs.cells():
        for d, fs in runs.columns():
            for tg, per in runs.ev[(d, fs, sub.id, attribute)].odta.items():
                for g, values in per.items():
                    at = {
                        f"1-BPCER@APCER={100 * x:g}%": 100.0 * float(v)
                        for x, v in zip(odta_xs, values, strict=True)
                    }
                    rows.append(
                        {**_run_key(sub, attribute, d, fs), "tau_from": tg, "test": g, **at}
                    )
    return rows


def _curve_rows(runs: _Runs) -> list[dict[str, Any]]:
    """FDR and ABF at every x, per run (runs without curves are left out)."""
    rows = []
    for sub, attribute in runs.cells():
        for d, fs in runs.columns():
            c = runs.ev[(d, fs, sub.id, attribute)].curves
            if c is None:
                continue
            key = _run_key(sub, attribute, d, fs)
            for k, x in enumerate(c.xs):
                rows.append(
                    {**key, "x": float(x), "tau": c.tau[k], "fdr": c.fdr[k], "abf": c.abf[k]}
                )
    return rows


def _protocol_figures(
    protocol: FairnessProtocol,
    ev: dict[tuple[str, bool, str, str], _Evaluation],
    detectors: Sequence[str],
    variants: list[bool],
    odta_xs: Sequence[float],
    fig_dir: Path,
) -> None:
    """Figs. 6/8/10/11 (ODTA per detector and variant) and 7/9 (ABF curves per detector)."""
    for d in detectors:
        for a in protocol.test_attributes:
            curves = {
                (_row_label(sub), VARIANTS[fs]): ev[(d, fs, sub.id, a)].curves
                for sub in protocol.subprotocols
                for fs in variants
                if ev[(d, fs, sub.id, a)].curves is not None
            }
            if curves:
                plots.plot_protocol_abf(
                    curves, fig_dir / f"{protocol.name}_abf_{d}_{a}.png", f"{d}: ABF ({a})"
                )
            for fs in variants:
                panels = {
                    _row_label(sub): ev[(d, fs, sub.id, a)].odta for sub in protocol.subprotocols
                }
                if any(panels.values()):
                    plots.plot_protocol_odta(
                        panels,
                        odta_xs,
                        fig_dir / f"{protocol.name}_odta_{d}_{VARIANTS[fs]}_{a}.png",
                        f"{d} ({VARIANTS[fs]}): 1 - BPCER at APCER_x ({a})",
                    )


__all__ = [
    "BalanceConfig",
    "check_fairswap_detectors",
    "DerivedAttribute",
    "FairnessProtocol",
    "SubProtocol",
    "load_protocol",
    "prepare_index",
    "protocol_train_overrides",
    "run_protocol",
    "train_and_predict",
    "write_protocol_tables",
]
