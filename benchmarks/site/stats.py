"""The site's tables from the bundles' summaries (:mod:`benchmarks.site.summary`): the
leaderboards per level and metric (the evaluation's own table code:
:func:`evaluation.leaderboard.leaderboard_tables`), whose only statistic across bundles, the tie
test of each column, reads the cached seed-averaged predictions (and is cached by the bundles in
the column); the fairness tables (:func:`benchmarks.fairness_board.rows_table`), the calibration
(ECE) and cost tables. No bundle's predictions are read here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fairforensics.benchmarks.fairness_board import rows_table
from fairforensics.benchmarks.site.cache import SummaryCache, digest
from fairforensics.benchmarks.site.summary import SiteSettings
from fairforensics.benchmarks.submissions.admitted import AdmittedBundle
from fairforensics.evaluation.leaderboard import (
    Cells,
    Entry,
    SeedFiles,
    column_ties,
    leaderboard_tables,
    videos_text,
)
from fairforensics.evaluation.tables import BASELINE, Result, Table, detector_type


@dataclass(frozen=True)
class Row:
    """An admitted bundle, its summary and its name on the site (unique among the bundles)."""

    bundle: AdmittedBundle
    name: str
    summary: dict[str, Any]

    def entry(self, test_data: str) -> dict[str, Any] | None:
        """Its summary of ``test_data``, or None when it was not scored on it."""
        return self.summary["entries"].get(test_data)

    @property
    def baseline(self) -> bool:
        """Whether it is a sanity baseline (never ranked)."""
        return self.bundle.baseline or any(e["baseline"] for e in self.summary["entries"].values())

    @property
    def kind(self) -> str:
        """Its type column."""
        return BASELINE if self.baseline else detector_type(self.bundle.detector)


def entries(rows: Sequence[Row], test_sets: Sequence[str]) -> list[Entry]:
    """The leaderboard entries of ``rows`` (their predictions files named, never read)."""
    out = []
    for row in rows:
        for t in test_sets:
            e = row.entry(t)
            if e is not None:
                out.append(Entry(row.name, e["train_data"], t, SeedFiles(e["files"]), row.baseline,
                                 list(e["thresholds"]), [], list(e["chosen_by"])))  # fmt: skip
    return out


def videos(rows: Sequence[Row], test_sets: Sequence[str]) -> dict[str, str]:
    """Per test set scored by ``rows``: its number of test videos in words."""
    counts: dict[str, set[int]] = {}
    for row in rows:
        for t in test_sets:
            e = row.entry(t)
            if e is not None:
                counts.setdefault(t, set()).update(e["videos"])
    return videos_text(counts)


def _ties(
    rows: Sequence[Row], test_data: str, level: str, settings: SiteSettings, cache: SummaryCache
) -> dict[str, dict[str, Any]]:
    """The tie test of one column (cached by the bundles in it, its test set and level)."""
    members = [r for r in rows if r.entry(test_data) is not None]
    key = digest([sorted((r.bundle.sha256, r.name) for r in members), test_data, level,
                  settings.as_dict()])  # fmt: skip
    found = cache.ties(key)
    if found is not None:
        return found
    averaged = {r.name: cache.averaged(r.bundle.sha256, test_data) for r in members}
    shown = {r.name: r.entry(test_data)["cells"][level]["metrics"]["auc"] for r in members}
    ties = column_ties(averaged, shown, {r.name for r in members if r.baseline},
                       test_data=test_data, level=level, reduce=settings.reduce,
                       alpha=settings.alpha)  # fmt: skip
    cache.store_ties(key, ties)
    return ties


def level_cells(
    rows: Sequence[Row],
    test_sets: Sequence[str],
    level: str,
    settings: SiteSettings,
    cache: SummaryCache,
) -> Cells:
    """One level's cells of ``rows``, in the order of :func:`entries`."""
    cells = Cells()
    for row in rows:
        for t in test_sets:
            e = row.entry(t)
            if e is None:
                continue
            cell = e["cells"][level]
            cells.results.append(
                Result(row.name, e["train_data"], t, cell["metrics"], cell["unit"])
            )
            for metric, info in cell["details"].items():
                cells.details[(row.name, t, metric)] = dict(info)
    for t in test_sets:
        for name, info in _ties(rows, t, level, settings, cache).items():
            cells.details[(name, t, "auc")].update(info)
    return cells


def leaderboards(
    rows: Sequence[Row], test_sets: Sequence[str], settings: SiteSettings, cache: SummaryCache
) -> dict[tuple[str, str], Table]:
    """``{(level, metric): table}`` of ``rows`` (none when no row has a test set)."""
    if not any(r.entry(t) for r in rows for t in test_sets):
        return {}
    listed = entries(rows, test_sets)
    counts = videos(rows, test_sets)
    out = {}
    for level in settings.levels:
        cells = level_cells(rows, test_sets, level, settings, cache)
        robust = {r.name: r.summary["robust"][level] for r in rows
                  if r.summary["robust"].get(level) is not None}  # fmt: skip
        tables = leaderboard_tables(cells, listed, settings.metrics, videos=counts, robust=robust)
        for metric, table in tables.items():
            out[(level, metric)] = table
    return out


def fairness_tables(rows: Sequence[Row], test_sets: Sequence[str]) -> dict[tuple[str, str], Table]:
    """``{(test set, attribute): table}``: every row's fairness figures, by AUC, baselines apart."""
    counts = videos(rows, test_sets)
    out = {}
    for t in test_sets:
        by_attribute: dict[str, list[tuple[Any, ...]]] = {}
        for row in rows:
            e = row.entry(t)
            for attribute, values in sorted((e or {}).get("fairness", {}).items()):
                kind, _, threshold, how, split, seeds, figures, details = values
                by_attribute.setdefault(attribute, []).append(
                    (row.kind if kind != BASELINE else BASELINE, row.name, threshold, how, split,
                     seeds, figures, details)
                )  # fmt: skip
        for attribute in sorted(by_attribute):
            out[(t, attribute)] = rows_table(by_attribute[attribute], t, attribute, counts[t])
    return out


def calibration_table(rows: Sequence[Row], test_sets: Sequence[str], level: str) -> Table | None:
    """ECE per row and test set at ``level`` (interval clustered by video), beside MCE, Brier,
    NLL in the CSV/JSON; the lowest ECE of each column in bold, baselines apart."""
    scored = [t for t in test_sets if any(r.entry(t) for r in rows)]
    if not scored:
        return None
    table = Table(
        ["Type", "Detector", *scored],
        title=f"Calibration of P(fake), {level} level: ECE (15 equal-width bins; 0 = "
        "calibrated; interval clustered by video) of the seed-averaged scores; lower is better",
    )
    for row in sorted(rows, key=lambda r: (r.baseline, r.name)):
        i = len(table.rows)
        cells: list[Any] = [row.kind, row.name]
        for j, t in enumerate(scored, start=2):
            e = row.entry(t)
            found = [c for c in (e or {}).get("calibration", []) if c["level"] == level]
            cells.append(found[0]["ece"] if found else None)
            if found:
                table.details[(i, j)] = {"low": found[0]["ece_low"], "high": found[0]["ece_high"]}
        table.rows.append(cells)
        if row.baseline:
            table.baseline_rows.add(i)
    for j in range(2, len(table.columns)):
        values = [
            (r[j], i)
            for i, r in enumerate(table.rows)
            if i not in table.baseline_rows and isinstance(r[j], float) and np.isfinite(r[j])
        ]
        if values:
            table.highlight.add((min(values)[1], j))
    return table


def _cost_record(row: Row) -> dict[str, Any] | None:
    """The bundle's cost figures: its ``costs.json`` as :func:`benchmarks.costs.cost_table`
    writes it (the row of its detector, or its one row) or one such row."""
    costs = row.bundle.costs
    if not isinstance(costs, dict) or not costs:
        return None
    records = costs.get("rows")
    if records is None:
        return costs
    records = [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []
    mine = [r for r in records if r.get("detector") == row.bundle.detector] or records[:1]
    return {"machine": costs.get("machine"), **mine[0]} if mine else None


def cost_table(rows: Sequence[Row]) -> Table | None:
    """Parameters, GMACs and CPU ms per frame of the bundles that carry costs (measured by the
    submitter, on the machine named in each row)."""
    table = Table(
        ["Type", "Detector", "Params", "GMACs/frame", "CPU ms/frame", "machine"],
        title="Cost at batch 1 as submitted (torch.utils.flop_counter; CPU time on the "
        "submitter's machine, named in each row: not comparable across machines)",
    )
    for row in sorted(rows, key=lambda r: (r.baseline, r.name)):
        cost = _cost_record(row)
        if cost is None:
            continue
        macs = cost.get("macs_per_frame")
        table.rows.append([row.kind, row.name, cost.get("params"),
                           None if macs is None else macs / 1e9, cost.get("cpu_ms_per_frame"),
                           cost.get("machine")])  # fmt: skip
        if row.baseline:
            table.baseline_rows.add(len(table.rows) - 1)
    return table if table.rows else None
