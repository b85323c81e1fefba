"""The generalisation protocols of DF40 (Yan et al. 2024, Sec. 4) and Celeb-DF++ (Li et al.
2025) as sweeps: ``benchmark.py --protocol NAME`` (configs ``configs/protocols/<name>.yaml``).

A protocol names its source indexes (``sources``: a role -> an index under ``--data-root``),
builds its training and test indexes from them (``train``/``test``: parts, each the videos of
one source that match ``where``, combined with :func:`preprocessing.combine.combine_indexes`;
``per_method``: one index per fake method of the first part), writes them to
``<out>/indexes/``, and runs :func:`benchmarks.sweep.run_sweep` once per training index into
``<out>/runs/<train index>/``. The tables of :mod:`evaluation.protocol_tables` go to
``<out>/tables/``: AUC per test method grouped by family with the family means, and with a
training index per method the one-vs-all matrix (CSV and heat map).

Checkpoints are selected on the training index's val split (``selection: val``); DF40's own
Protocol 1 selects on its test methods, which ``selection: test-top3`` reproduces
(DeepfakeBench's rule, :mod:`training.selection`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from fairforensics.benchmarks.sweep import Runner, Sweep, SweepError, _subprocess_runner, run_sweep

__all__ = [
    "Protocol",
    "SweepError",
    "build_indexes",
    "load_protocol",
    "run_protocol",
    "write_tables",
]
from fairforensics.configs.loader import load_config
from fairforensics.evaluation.predictions import read_predictions
from fairforensics.evaluation.protocol_tables import (
    auc_interval,
    family_table,
    one_vs_all,
    one_vs_all_heatmap,
)
from fairforensics.evaluation.results import slug
from fairforensics.preprocessing.combine import combine_indexes, select_videos
from fairforensics.preprocessing.index import DatasetIndex, rebase_index, write_index
from fairforensics.preprocessing.resolve import resolve_index

log = logging.getLogger(__name__)


@dataclass
class Part:
    """The videos of one source index that match every key of ``where`` (method, split,
    label or an attribute -> allowed values; empty: all)."""

    source: str
    where: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class DataSpec:
    """A training or test side: indexes built from ``parts``, or ``datasets`` used as they are."""

    parts: list[Part] = field(default_factory=list)
    per_method: bool = False  # one index per fake method of parts[0], with the other parts
    # what names a method in parts[0] (DF40's df40_method also marks the reals of a method made
    # from its own source, so that each such method is tested with its own reals)
    method_key: str = "method"
    datasets: list[str] = field(default_factory=list)  # index names under the data root


@dataclass
class Protocol:
    description: str = ""
    sources: dict[str, str] = field(default_factory=dict)  # role -> index name (data root)
    train: DataSpec = field(default_factory=DataSpec)
    test: DataSpec = field(default_factory=DataSpec)
    family_attribute: str = "family"  # the attribute tables group the test methods by
    selection: Literal["val", "test-top3"] = "val"
    robustness: list[str] = field(default_factory=list)  # fairforensics robustness arguments


def load_protocol(name: str | Path, overrides: list[str] | None = None) -> Protocol:
    """A shipped protocol by name (``df40-p1``) or a YAML file, with ``KEY=VALUE`` overrides."""
    proto = load_config(Protocol, name, overrides=overrides or [], kind="protocols")
    for side, spec in (("train", proto.train), ("test", proto.test)):
        if bool(spec.parts) == bool(spec.datasets):
            raise SweepError(f"protocol {name}: {side} needs either parts or datasets")
        unknown = sorted({p.source for p in spec.parts} - set(proto.sources))
        if unknown:
            raise SweepError(
                f"protocol {name}: {side} names sources {unknown} that 'sources' does not define"
            )
    return proto


def build_indexes(
    proto: Protocol, data_root: str | Path, out: Path
) -> tuple[dict[str, str | None], dict[str, str | None], dict[str, str]]:
    """Write the protocol's indexes to ``out``; returns ``{train index: its method or None}``,
    the same for the test indexes, and ``{method: family}`` of the test methods."""
    cache: dict[str, DatasetIndex] = {}

    def source(role: str) -> DatasetIndex:
        if role not in cache:
            cache[role] = resolve_index(proto.sources[role], data_root)
        return cache[role]

    family: dict[str, str] = {}

    def build(spec: DataSpec, prefix: str) -> dict[str, str | None]:
        if spec.datasets:
            for name in spec.datasets:
                write_index(rebase_index(resolve_index(name, data_root), out), out / f"{name}.json")
            return dict.fromkeys(spec.datasets)
        first = select_videos(source(spec.parts[0].source), spec.parts[0].where)
        methods: list[str | None] = [None]
        if spec.per_method:
            key = spec.method_key
            fakes = [v for v in first.videos if v.label == 1]
            named = [v.method if key == "method" else v.attributes.get(key) for v in fakes]
            methods = list(dict.fromkeys(m for m in named if m))
            if not methods:
                raise SweepError(f"{proto.sources[spec.parts[0].source]}: no fake has {key!r}")
        built: dict[str, str | None] = {}
        for method in methods:
            name = prefix if method is None else f"{prefix}-{method}"
            by_source: dict[str, list[DatasetIndex]] = {}
            for k, part in enumerate(spec.parts):
                where = dict(part.where)
                if k == 0 and method is not None:
                    where[spec.method_key] = [method]
                by_source.setdefault(part.source, []).append(
                    select_videos(source(part.source), where)
                )
            parts = [_union(ixs) for ixs in by_source.values()]
            combined = combine_indexes(parts, name, out)
            write_index(combined, out / f"{name}.json")
            built[name] = method
            for v in combined.videos:
                if v.label == 1 and proto.family_attribute in v.attributes:
                    family[v.method] = v.attributes[proto.family_attribute]
        return built

    out.mkdir(parents=True, exist_ok=True)
    return build(proto.train, "train"), build(proto.test, "test"), family


def _union(indexes: list[DatasetIndex]) -> DatasetIndex:
    """Parts of one source as one index (each video once)."""
    seen, videos = set(), []
    for ix in indexes:
        for v in ix.videos:
            if v.key not in seen:
                seen.add(v.key)
                videos.append(v)
    return replace(indexes[0], videos=videos)


def run_protocol(
    proto: Protocol,
    *,
    detectors: list[str],
    data_root: str | Path,
    out: Path,
    sweep: Sweep | None = None,
    runner: Runner = _subprocess_runner,
    launch: Callable[[list[Sweep]], object] | None = None,
) -> Path:
    """Build the indexes, run a sweep per training index, write the tables; returns the tables
    folder. ``sweep`` carries the launch settings (recipe, gpus, seeds, overrides, imports);
    ``launch`` runs the sweeps (default: :func:`benchmarks.sweep.run_sweep` one after another
    with ``runner``; ``benchmark.py --launcher slurm``: every run of every sweep as one job
    array, :func:`benchmarks.launch.run_sweeps_jobs`)."""
    index_dir = out / "indexes"
    trains, tests, family = build_indexes(proto, data_root, index_dir)
    base = sweep or Sweep(detectors, out)
    overrides = [*base.overrides, f"train.selection={proto.selection}"]
    sweeps = [
        replace(
            base,
            detectors=detectors,
            out=out / "runs" / train,
            train_data=[train],
            val_data=[train] if proto.selection == "val" else [],
            test_data=list(tests),
            data_root=str(index_dir),
            overrides=overrides,
            robustness=bool(proto.robustness),
            robustness_args=list(proto.robustness),
        )  # fmt: skip
        for train in trains
    ]
    if launch is None:
        for run in sweeps:
            run_sweep(run, runner)
    else:
        launch(sweeps)
    return write_tables(out, detectors, trains, tests, family, seeds=base.seeds)


def write_tables(
    out: Path,
    detectors: list[str],
    trains: dict[str, str | None],
    tests: dict[str, str | None],
    family: dict[str, str],
    *,
    seeds: list[int] | None = None,
) -> Path:
    """The family tables of every (detector, training index) and, with a training index per
    method, each detector's one-vs-all matrix and heat map, in ``<out>/tables/``. With
    ``seeds`` a cell is the mean AUC of the detector's runs over the seeds
    (:func:`evaluation.protocol_tables.auc_interval`)."""
    tables = out / "tables"
    for det in detectors:
        matrix = {}
        for train, train_method in trains.items():
            cells = {}
            for test, test_method in tests.items():
                run = Sweep([det], out / "runs" / train)
                paths = [
                    run.folder(det, seed) / "eval" / "predictions" / f"{slug(test)}.csv"
                    for seed in (seeds or [None])
                ]
                missing = [p for p in paths if not p.is_file()]
                if missing:
                    log.warning("%s: no predictions (%s); left out of the tables", test, missing[0])
                    continue
                preds = [read_predictions(p) for p in paths]
                cells[test_method or test] = cell = auc_interval(preds)
                if train_method is not None and test_method is not None:
                    matrix[(train_method, test_method)] = cell
            if cells:
                title = f"{det} trained on {train}: AUC per test method"
                family_table(cells, family, title=title).write(tables / f"{det}_{train}")
        if matrix:
            order = list(tests.values())
            grid, long = one_vs_all(matrix, [m for m in order if m])
            grid.write(tables / f"{det}_one_vs_all")
            long.write(tables / f"{det}_one_vs_all_intervals")
            one_vs_all_heatmap(grid, tables / f"{det}_one_vs_all", title=f"{det}: one-vs-all AUC")
    return tables
