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
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairforensics.configs.detector_source import family_without_import
from fairforensics.evaluation.table_writer import (
    csv_text,
    format_number,
    html_text,
    is_missing,
    json_records,
    latex_text,
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
LOWER_IS_BETTER = frozenset({"eer", "eer_threshold", "acc_lost"})
#: What a cell may carry beside its value (:attr:`Table.details`), in column order.
DETAIL_KEYS = ("low", "high", "sd", "seeds low", "seeds high", "p", "tied", "one_class")
#: Marks a cell not distinguishable from its column's best (:mod:`evaluation.significance`).
TIE_MARK = " ≈"
#: Metrics of decisions at a threshold (the others are threshold-free).
THRESHOLD_METRICS = frozenset({"acc", "precision", "recall", "f1"})
#: What a cell of decisions that put a test set of both classes in one class says.
ONE_CLASS = "one class"
#: The line above a table's baseline rows (issue 46: shown, set apart, never ranked).
BASELINE_NOTE = (
    "Baselines (sanity checks, shown for reference: never ranked, never a column's best "
    "nor the reference of the tie test)"
)
#: Test sets of one domain (paper 002, Table 3: FaceForensics++'s qualities and methods).
DOMAINS = {name: "FaceForensics++" for name in (*WITHIN_DOMAIN, "FF++", "FF")}


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
    #: rows that are sanity baselines: set apart (below the others, under :data:`BASELINE_NOTE`)
    baseline_rows: set[int] = field(default_factory=set)
    #: column -> a note under its name in LaTeX (e.g. ``n = 128 videos``)
    column_notes: dict[str, str] = field(default_factory=dict)

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

    def _cell(self, i: int, j: int, v: Any, digits: int, intervals: bool | None = None) -> str:
        text = format_number(v, digits)
        info = self.details.get((i, j))
        if not info or is_missing(v):
            return text
        if info.get("sd") is not None:
            text += f" ± {format_number(info['sd'], digits)}"
        if (self.show_intervals if intervals is None else intervals) and "low" in info:
            low, high = (format_number(info[k], digits) for k in ("low", "high"))
            text += f" [{low}, {high}]"
        if info.get("one_class"):
            text += f" ({ONE_CLASS})"
        return text + (TIE_MARK if info.get("tied") and not info.get("best") else "")

    def _order(self) -> tuple[list[int], list[int]]:
        """Row indices of the ranked rows and of the baselines (kept in their order)."""
        ranked = [i for i in range(len(self.rows)) if i not in self.baseline_rows]
        return ranked, sorted(self.baseline_rows)

    def to_csv(self) -> str:
        return csv_text(*self._expanded())

    def to_markdown(self, digits: int = 4) -> str:
        """Numbers right-aligned with ``digits`` decimals, NaN ``undefined``, None ``-``, best
        cells bold, ties with the best marked :data:`TIE_MARK`, the spread across seeds as
        ``± sd`` and, with ``show_intervals``, each interval."""
        parts = [f"**{self.title}**\n"] if self.title else []
        for n, order in enumerate(self._order()):
            if not order:
                continue
            if n:  # the baselines: a table of their own under a line that says what they are
                parts.append(f"*{BASELINE_NOTE}*\n")
            parts.append(
                markdown_text(
                    self.columns,
                    [self.rows[i] for i in order],
                    lambda k, j, v, order=order: self._cell(order[k], j, v, digits),
                    right_align_numbers=True,
                    bold={(k, j) for k, i in enumerate(order) for r, j in self.highlight if r == i},
                )
            )
        return "\n".join(parts)

    def to_html(self, digits: int = 4) -> str:
        """An HTML table; baseline rows last, in grey italics under a row that says what
        they are."""
        ranked, base = self._order()
        order = ranked + base
        return html_text(
            self.columns,
            [self.rows[i] for i in order],
            lambda k, j, v: self._cell(order[k], j, v, digits),
            bold={(order.index(i), j) for i, j in self.highlight},
            bold_format="<b style='color:#c00'>{}</b>",
            caption=self.title,
            row_class={k: "baseline" for k in range(len(ranked), len(order))},
            label_before={len(ranked): BASELINE_NOTE} if base else {},
        )

    def to_latex(self, digits: int = 3) -> str:
        """A booktabs ``table`` (needs ``\\usepackage{booktabs}``): the title as caption, each
        cell with its spread across seeds, interval and tie mark, best cells bold, the
        :attr:`column_notes` (e.g. test videos) under the column names, baselines last under
        a rule."""
        ranked, base = self._order()
        order = ranked + base
        numeric = [all(isinstance(r[j], (int, float)) or is_missing(r[j])
                       for r in self.rows) for j in range(len(self.columns))]  # fmt: skip
        return latex_text(
            self.columns,
            [
                [self._cell(i, j, v, digits, intervals=True) for j, v in enumerate(self.rows[i])]
                for i in order
            ],  # fmt: skip
            caption=self.title,
            bold={(order.index(i), j) for i, j in self.highlight},
            right=numeric,
            notes=[self.column_notes.get(c, "") for c in self.columns],
            label_before={len(ranked): BASELINE_NOTE} if base else {},
        )

    def to_json(self) -> str:
        """``{"title", "columns", "rows", "best"}``; ``best``: ``[row, column]`` of each best
        cell (the bold ones)."""
        rows = json_records(*self._expanded())
        best = sorted([int(i), self.columns[j]] for i, j in self.highlight)
        data = {"title": self.title, "columns": self.columns, "rows": rows, "best": best}
        return json.dumps(data, indent=2)

    def write(self, stem: str | Path, *, latex: bool = False) -> list[Path]:
        """Write ``<stem>.csv``, ``<stem>.md`` and ``<stem>.json`` (``latex``: and ``<stem>.tex``)
        atomically; returns the paths."""
        return write_table_files(
            stem, self.to_csv(), self.to_markdown(), self.to_json(),
            latex=self.to_latex() if latex else None,
        )  # fmt: skip


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
    family = family_without_import(name)  # the registry imports torch: test --predictions needs
    if family is not None:  # none, a built-in's family is in its source
        return family
    from fairforensics.detectors.registry import detector_family, get_detector_class

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

    ``baselines``: rows that are sanity baselines, not detectors (type ``Baseline``): last,
    set apart (:attr:`Table.baseline_rows`), with no Top-k count, never a column's best and
    never pushing a detector out of the top k.

    ``within``: the within-domain test sets (default: :func:`within_domain`, from the results'
    training data); all other test sets are cross-domain. ``train_data``: keep only results
    trained on it.
    An average over a group is NaN (with a warning) when the detector lacks one of its sets.
    If a detector has several results for one test set, the last one wins (with a warning).
    """
    results = list(results)
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
    if within is None:
        kept = [r for r in results if train_data is None or r.train_data == train_data]
        within = within_domain(kept)
    groups = [
        ("Within", _ordered([t for t in test_sets if t in within], WITHIN_DOMAIN)),
        ("Cross", _ordered([t for t in test_sets if t not in within], CROSS_DOMAIN)),
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
    ranked = np.array([kind(d) != BASELINE for d in detectors], dtype=bool)
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
        top = np.zeros(len(detectors), dtype=np.int64)
        top[ranked] = top_k_counts(values[ranked], k, higher)  # baselines push no one out
        blocks.append((sets, values, avg, top))
        columns += [*sets, f"{label} Avg.", f"{label} Top{k}"]
    rows = []
    for i, d in enumerate(detectors):
        row: list[Any] = [kind(d), d]
        for sets, values, avg, top in blocks:
            lacking = [t not in table[d] for t in sets]
            cells = [None if no else float(v) for no, v in zip(lacking, values[i], strict=True)]
            count = int(top[i]) if ranked[i] else None  # a baseline is not ranked
            row += [*cells, None if any(lacking) else float(avg[i]), count]
        rows.append(row)
    title = f"{metric.upper()} leaderboard (Top{k}: test sets ranked top {k}; best in bold)"
    best = _best_cells(rows, columns, higher, k, ranked)
    apart = {i for i in range(len(rows)) if not ranked[i]}
    return Table(columns, rows, title=title, highlight=best, baseline_rows=apart)


def training_sets(train_data: str) -> list[str]:
    """The data set names of a result's ``train_data`` (``"FF-c23+DFDC"``, ``"a,b"``)."""
    return [t.strip() for t in re.split(r"[+,]", train_data or "") if t.strip()]


def domain(name: str) -> str:
    """The domain of a test set or training set: FaceForensics++ for its qualities and methods
    (:data:`DOMAINS`), else the set's own name (a partial set's label counts as its set)."""
    base = name.split(" (", 1)[0].strip()
    return DOMAINS.get(base, base)


def within_domain(results: Iterable[Result]) -> set[str]:
    """The test sets of ``results`` that lie in the domain of their training data (the
    training sets themselves and, as in paper 002's Table 3, FaceForensics++'s other qualities
    and methods). A test set whose results name no training data is within-domain when it is
    one of FaceForensics++'s (the paper's rule), said in the log."""
    trained: dict[str, set[str]] = {}
    for r in results:
        trained.setdefault(r.test_data, set()).update(map(domain, training_sets(r.train_data)))
    unknown = sorted(t for t, d in trained.items() if not d)
    if unknown:
        log.info(
            "leaderboard: no training data recorded for the results on %s; within-domain by "
            "paper 002's rule (FaceForensics++'s sets); --within sets it",
            ", ".join(unknown),
        )
    return {
        t for t, d in trained.items() if domain(t) in d or (not d and domain(t) in DOMAINS.values())
    }


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
    rows: list[list[Any]], columns: list[str], higher: bool, k: int, ranked: np.ndarray
) -> set[tuple[int, int]]:
    """The best value among the ``ranked`` rows (not baselines) of each test-set and average
    column (paper 002 Table 3 marks it in red)."""
    best = set()
    for j, name in enumerate(columns[2:], start=2):
        if name.endswith(f"Top{k}"):
            continue
        col = np.array([r[j] if ranked[i] else None for i, r in enumerate(rows)], dtype=np.float64)
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
