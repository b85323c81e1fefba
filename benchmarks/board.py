"""Everything a sweep writes after its runs (issue 38): the baseline rows, the leaderboards
with intervals, ties and seed spread (:func:`evaluation.leaderboard.build_leaderboard`), the
fairness columns and Pareto figures (:mod:`benchmarks.fairness_board`), the cost columns
(:mod:`benchmarks.costs`) and the one-page HTML leaderboard (:mod:`benchmarks.board_html`).

Layout of ``<out>`` (the leaderboard folder): ``leaderboard_<level>_<metric>.*``,
``fairness/fairness_<test set>_<attribute>.*`` and ``fairness/pareto_*``, ``costs.*``,
``report.html`` (the evaluation report) and ``index.html`` (the sortable page).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from fairforensics.benchmarks.baseline_runs import write_baselines
from fairforensics.benchmarks.board_html import write_page
from fairforensics.benchmarks.costs import cost_table
from fairforensics.benchmarks.fairness_board import write_fairness_tables
from fairforensics.evaluation.leaderboard import build_leaderboard, collect_entries
from fairforensics.evaluation.report import Section
from fairforensics.evaluation.settings import TestConfig

log = logging.getLogger(__name__)


def write_board(
    eval_dirs: Sequence[Path],
    out: Path,
    cfg: TestConfig,
    *,
    baselines_dir: Path | None = None,
    extra_baselines: Mapping[str, Path] | None = None,
    detectors: Sequence[str] = (),
    within: Sequence[str] | None = None,
    costs: bool = True,
    fairness_boot: int = 200,
    show_intervals: bool = False,
    latex: bool = False,
    title: str = "Leaderboard",
) -> Path:
    """The sweep's leaderboard folder ``out`` from its detectors' evaluation folders
    (several per detector: its seeds); with ``baselines_dir`` the ``constant``, ``random``
    and ``extra_baselines`` rows are evaluated there first. ``detectors``: the names whose
    costs are measured (``costs``). ``show_intervals``: the Markdown and report leaderboards
    show each cell's interval (CSV, JSON and ``index.html`` always do); ``latex``: the
    leaderboard and fairness tables also as ``.tex`` (booktabs). Each row decides at its run's
    threshold (:func:`evaluation.leaderboard.build_leaderboard`). Returns ``out``."""
    dirs = [Path(d) for d in eval_dirs]
    if baselines_dir is not None:
        dirs += write_baselines(dirs, baselines_dir, cfg, extra=extra_baselines, seed=cfg.seed)
    sections: list[Section] = []
    entries = collect_entries(dirs)
    fair = write_fairness_tables(
        entries, out / "fairness", n_boot=fairness_boot, confidence=cfg.confidence,
        seed=cfg.seed, latex=latex,
    )  # fmt: skip
    if fair:
        sections.append(Section("Fairness", [item for pair in fair for item in pair]))
    cost = cost_table(list(detectors), out) if costs and detectors else None
    if cost is not None:
        sections.append(Section("Cost", [cost]))
    build_leaderboard(
        dirs,
        out,
        cfg.metrics,
        cfg.levels,
        reduce=cfg.reduce,
        within=within,
        extra_sections=sections,
        n_boot=cfg.n_boot,
        confidence=cfg.confidence,
        seed=cfg.seed,
        show_intervals=show_intervals,
        latex=latex,
    )
    write_page(out, entries, fair, cost, title=title)
    return out
