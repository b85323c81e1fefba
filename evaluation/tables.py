"""Result tables: the cross-domain leaderboard (paper 002, Table 3) and cross-manipulation matrices
(Figure 2), written as CSV, Markdown and JSON.

A :class:`Result` is one (detector, training data, test data) evaluation. Table 3 layout: rows are
detectors grouped by type (Naive, Spatial, Frequency, then Video: DeepfakeBench v2's video
detectors, and PAD); columns are the within-domain test sets,
their average and Top-3 count, then the cross-domain test sets, their average and Top-3 count.
"Top3" counts the test sets of the group on which the detector ranks within the top 3 (ranking
with ties: a detector is in the top k when fewer than k detectors are strictly better).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairforensics.detectors.registry import detector_family, get_detector_class
from fairforensics.evaluation.table_writer import (
    csv_text,
    format_number,
    html_text,
    is_missing,
    json_records,
    markdown_text,
    write_table_files,
)

log = logging.getLogger(__name__)

#: Paper 002, Table 3 column order.
WITHIN_DOMAIN = ("FF-c23", "FF-c40", "FF-DF", "FF-F2F", "FF-FS", "FF-NT")
CROSS_DOMAIN = ("CDFv1", "CDFv2", "DF-1.0", "DFD", "DFDC", "DFDCP", "FSh", "UADFV")
FF_METHODS = ("FF-DF", "FF-F2F", "FF-FS", "FF-NT")
#: Row order of paper 002, Table 1, DeepfakeBench v2's detectors (plus the PAD detectors of
#: paper 001); the type of each
#: detector is its ``family`` (``@register_detector(name, family=...)``).
TABLE_ORDER = (
    "meso4",
    "meso_inception4",
    "cnn_aug",
    "xception",
    "efficientnet_b4",
    "resnet_dsc",
    "capsule",
    "fwa",
    "ifwa",
    "xray",
    "ffd",
    "core",
    "recce",
    "ucf",
    "f3net",
    "spsl",
    "srm",
    # DeepfakeBench v2's image detectors (v2 README order), then PG-FDD (family Fairness)
    "sbi",
    "lsda",
    "iid",
    "lrl",
    "rfm",
    "sia",
    "sladd",
    "uia_vit",
    "clip",
    "pcl_xception",
    "multi_attention",
    "effort",
    "pg_fdd",
    "tall",
    "ftcn",
    "altfreezing",
    "i3d",
    "stil",
    "timesformer",
    "videomae",
    "xclip",
    "sta_clip",
    "lbp_mlp",
    "pad_resnet50",
    "deeppixbis",
    "lmfd_pad",
)
TYPE_ORDER = ("Naive", "Spatial", "Frequency", "Video", "Fairness", "PAD", "Other", "Baseline")
#: The type of a sanity baseline's row (``constant``, ``random``, ``metadata``; issue 38)
BASELINE = "Baseline"
LOWER_IS_BETTER = frozenset({"eer", "eer_threshold"})
#: What a cell may carry beside its value (:attr:`Table.details`), in column order.
DETAIL_KEYS = ("low", "high", "sd", "seeds low", "seeds high", "p", "tied")
#: Marks a cell not distinguishable from its column's best (:mod:`evaluation.significance`).
TIE_MARK = " ≈"


@dataclass(frozen=True)
class Result:
    """Metrics of one detector trained on ``train_data`` and tested on ``test_data``."""

    detector: str
    train_data: str
    test_data: str
    metrics: Mapping[str, float]
    unit: str = "frame"  # what was scored: frame, clip (a video detector's rows) or video


@dataclass
class Table:
    """A plain table: column names and rows of cells (str, int or float; NaN = undefined,
    None = not available, e.g. a test set a detector was not evaluated on)."""

    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    title: str = ""
    highlight: set[tuple[int, int]] = field(default_factory=set)  # (row, column): best cells
    #: (row, column) -> what a cell carries beside its value: ``low``/``high`` (interval),
    #: ``sd`` (spread across seeds), ``p`` (Holm-adjusted p against the column's best) and
    #: ``tied`` (not distinguishable from the best); CSV and JSON get one column of each
    details: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    show_intervals: bool = False  # Markdown/HTML cells show ``[low, high]`` too

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def _expanded(self) -> tuple[list[str], list[list[Any]]]:
        """Columns and rows with each detail of a column as a column ``"<column> <detail>"``."""
        keys: dict[int, list[str]] = {}
        for (_, j), info in self.details.items():
            have = keys.setdefault(j, [])
            have += [k for k in DETAIL_KEYS if k in info and k not in have]
        columns: list[str] = []
        rows: list[list[Any]] = [[] for _ in self.rows]
        for j, name in enumerate(self.columns):
            extra = sorted(keys.get(j, []), key=DETAIL_KEYS.index)
            columns += [name, *(f"{name} {k}" for k in extra)]
            for i, row in enumerate(self.rows):
                info = self.details.get((i, j), {})
                rows[i] += [row[j], *(info.get(k) for k in extra)]
        return columns, rows

    def _cell(self, i: int, j: int, v: Any, digits: int) -> str:
        text = format_number(v, digits)
        info = self.details.get((i, j))
        if not info or is_missing(v):
            return text
        if info.get("sd") is not None:
            text += f" ± {format_number(info['sd'], digits)}"
        if self.show_intervals and "low" in info:
            low, high = (format_number(info[k], digits) for k in ("low", "high"))
            text += f" [{low}, {high}]"
        return text + (TIE_MARK if info.get("tied") and not info.get("best") else "")

    def to_csv(self) -> str:
        return csv_text(*self._expanded())

    def to_markdown(self, digits: int = 4) -> str:
        """Numbers right-aligned with ``digits`` decimals, NaN ``undefined``, None ``-``, best
        cells bold, ties with the best marked :data:`TIE_MARK`, the spread across seeds as
        ``± sd`` and, with ``show_intervals``, each interval."""
        text = markdown_text(
            self.columns,
            self.rows,
            lambda i, j, v: self._cell(i, j, v, digits),
            right_align_numbers=True,
            bold=self.highlight,
        )
        return f"**{self.title}**\n\n{text}" if self.title else text

    def to_html(self, digits: int = 4) -> str:
        return html_text(
            self.columns,
            self.rows,
            lambda i, j, v: self._cell(i, j, v, digits),
            bold=self.highlight,
            bold_format="<b style='color:#c00'>{}</b>",
            caption=self.title,
        )

    def to_json(self) -> str:
        rows = json_records(*self._expanded())
        return json.dumps({"title": self.title, "columns": self.columns, "rows": rows}, indent=2)

    def write(self, stem: str | Path) -> list[Path]:
        """Write ``<stem>.csv``, ``<stem>.md`` and ``<stem>.json`` atomically; returns the paths."""
        return write_table_files(stem, self.to_csv(), self.to_markdown(), self.to_json())


def _ordered(names: Iterable[str], reference: Sequence[str]) -> list[str]:
    """``names`` in ``reference`` order, unknown names after them, sorted."""
    names = set(names)
    return [n for n in reference if n in names] + sorted(names - set(reference))


def top_k_counts(values: np.ndarray, k: int = 3, higher_is_better: bool = True) -> np.ndarray:
    """Per row, the number of columns in which it ranks within the top ``k`` (NaN never counts).

    ``values``: detectors x test sets. A row is in the top ``k`` of a column when fewer than ``k``
    rows are strictly better in that column, so ties share a rank.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"values must be 2-D (detectors x test sets), got shape {v.shape}")
    v = v if higher_is_better else -v
    filled = np.where(np.isnan(v), -np.inf, v)
    better = (filled[None, :, :] > filled[:, None, :]).sum(axis=1)
    return ((better < k) & ~np.isnan(v)).sum(axis=1)


def detector_type(name: str, types: Mapping[str, str] | None = None) -> str:
    """Naive / Spatial / Frequency / Video / PAD / Other: ``types[name]`` when a mapping is
    given, else the registered detector's ``family`` (a video detector, ``input_kind`` clip,
    registered without one is ``Video``)."""
    if types is not None:
        return types.get(name, "Other")
    family = detector_family(name)
    if family != "Other":
        return family
    try:
        return "Video" if get_detector_class(name).input_kind == "clip" else family
    except (KeyError, ImportError):  # a name from another tool's predictions, a broken plugin
        return family


def leaderboard(
    results: Iterable[Result],
    metric: str = "auc",
    *,
    within: Sequence[str] | None = None,
    train_data: str | None = None,
    types: Mapping[str, str] | None = None,
    k: int = 3,
    baselines: Collection[str] = (),
) -> Table:
    """Paper 002, Table 3 for ``metric`` from the results of several detectors.

    ``baselines``: rows that are sanity baselines, not detectors (type ``Baseline``, last).

    ``within``: the within-domain test sets (default: those named ``FF*``, as in the paper);
    all other test sets are cross-domain. ``train_data``: keep only results trained on it.
    An average over a group is NaN (with a warning) when the detector lacks one of its sets.
    If a detector has several results for one test set, the last one wins (with a warning).
    """
    table: dict[str, dict[str, float]] = {}
    for r in results:
        if train_data is not None and r.train_data != train_data:
            continue
        row = table.setdefault(r.detector, {})
        if r.test_data in row:
            log.warning(
                "leaderboard: %s has two results on %s; keeping the last", r.detector, r.test_data
            )
        if metric not in r.metrics:
            raise KeyError(
                f"metric {metric!r} missing for {r.detector} on {r.test_data}; have {sorted(r.metrics)}"
            )
        row[r.test_data] = float(r.metrics[metric])
    if not table:
        raise ValueError("no results to put in the leaderboard")
    test_sets = {t for row in table.values() for t in row}
    is_within = (lambda t: t in within) if within is not None else (lambda t: t.startswith("FF"))
    groups = [
        ("Within", _ordered([t for t in test_sets if is_within(t)], WITHIN_DOMAIN)),
        ("Cross", _ordered([t for t in test_sets if not is_within(t)], CROSS_DOMAIN)),
    ]
    type_rank = {t: i for i, t in enumerate(TYPE_ORDER)}
    known = list(types or TABLE_ORDER)

    def kind(d: str) -> str:
        return BASELINE if d in baselines else detector_type(d, types)

    detectors = sorted(
        table,
        key=lambda d: (
            type_rank.get(kind(d), len(TYPE_ORDER)),
            known.index(d) if d in known else len(known),
            d,
        ),
    )
    higher = metric not in LOWER_IS_BETTER
    columns = ["Type", "Detector"]
    blocks = []
    for label, sets in groups:
        if not sets:
            continue
        values = np.array(
            [[table[d].get(t, np.nan) for t in sets] for d in detectors], dtype=np.float64
        )
        avg = np.full(len(detectors), np.nan)
        for i, d in enumerate(detectors):
            if np.isnan(values[i]).any():
                _warn_gaps(d, metric, label, [t for t in sets if t not in table[d]],
                           [t for t in sets if t in table[d] and np.isnan(table[d][t])])  # fmt: skip
            else:
                avg[i] = values[i].mean()
        blocks.append((sets, values, avg, top_k_counts(values, k, higher)))
        columns += [*sets, f"{label} Avg.", f"{label} Top{k}"]
    rows = []
    for i, d in enumerate(detectors):
        row: list[Any] = [kind(d), d]
        for sets, values, avg, top in blocks:
            lacking = [t not in table[d] for t in sets]
            cells = [None if no else float(v) for no, v in zip(lacking, values[i], strict=True)]
            row += [*cells, None if any(lacking) else float(avg[i]), int(top[i])]
        rows.append(row)
    title = f"{metric.upper()} leaderboard (Top{k}: test sets ranked top {k}; best in bold)"
    return Table(columns, rows, title=title, highlight=_best_cells(rows, columns, higher, k))


def _warn_gaps(
    detector: str, metric: str, group: str, missing: list[str], undefined: list[str]
) -> None:
    """Why a detector's average over ``group`` is empty: test sets it was not evaluated on, or
    evaluated with an undefined (NaN) value, named as such."""
    why = []
    if missing:
        why.append(f"was not evaluated on {', '.join(missing)}")
    if undefined:
        why.append(
            f"has no defined {metric.upper()} on {', '.join(undefined)} (NaN: e.g. one class only)"
        )
    log.warning(
        "leaderboard: %s %s; its %s average is left empty", detector, " and ".join(why), group
    )


def _best_cells(
    rows: list[list[Any]], columns: list[str], higher: bool, k: int
) -> set[tuple[int, int]]:
    """The best value of each test-set and average column (paper 002 Table 3 marks it in red)."""
    best = set()
    for j, name in enumerate(columns[2:], start=2):
        if name.endswith(f"Top{k}"):
            continue
        col = np.array([r[j] for r in rows], dtype=np.float64)
        if np.isnan(col).all():
            continue
        target = np.nanmax(col) if higher else np.nanmin(col)
        best |= {(i, j) for i in np.flatnonzero(col == target)}
    return best


def cross_manipulation(
    results: Iterable[Result], metric: str = "auc", methods: Sequence[str] = FF_METHODS
) -> dict[str, Table]:
    """Per detector, a train-set x test-set matrix of ``metric`` (paper 002, Figure 2).

    Rows and columns are the ``methods`` found in the results (in that order); missing pairs: NaN.
    """
    per: dict[str, dict[tuple[str, str], float]] = {}
    for r in results:
        if r.train_data in methods and r.test_data in methods:
            per.setdefault(r.detector, {})[(r.train_data, r.test_data)] = float(r.metrics[metric])
    out = {}
    for det, cells in sorted(per.items()):
        trains = [m for m in methods if any(t == m for t, _ in cells)]
        tests = [m for m in methods if any(s == m for _, s in cells)]
        rows = [[tr, *(cells.get((tr, te), float("nan")) for te in tests)] for tr in trains]
        out[det] = Table(
            ["train \\ test", *tests], rows, title=f"{det}: cross-manipulation {metric.upper()}"
        )
    return out


def metric_table(results: Iterable[Result], metrics: Sequence[str]) -> Table:
    """One row per result with the chosen metrics (the per-run table of ``scripts/test.py``)."""
    rows = [
        [
            r.detector,
            r.train_data,
            r.test_data,
            *(float(r.metrics.get(m, float("nan"))) for m in metrics),
        ]
        for r in results
    ]
    return Table(["detector", "train_data", "test_data", *metrics], rows)
