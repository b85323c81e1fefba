"""One bundle's summary: every statistic of its own rows, its predictions read once (issue 49,
item 5: computed once per bundle and column, not per page). Leaderboard cells (metrics, intervals,
spread across seeds, one class) per level and test set, fairness rows per attribute, calibration
rows, robust AUC, test video counts; the seed-averaged predictions go to the cache for the
column's tie test, the one statistic that needs the other bundles."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fairforensics.benchmarks.fairness_board import attributes_of, fairness_row
from fairforensics.benchmarks.site.cache import SummaryCache, digest
from fairforensics.benchmarks.submissions.admitted import AdmittedBundle
from fairforensics.evaluation.calibration.run import calibration_rows
from fairforensics.evaluation.leaderboard import (
    Entry,
    collect_entries,
    collect_robust_auc,
    entry_cells,
)
from fairforensics.evaluation.metrics import factorize
from fairforensics.evaluation.significance import seed_average

log = logging.getLogger(__name__)

#: Bumped when a summary's content changes: old cache folders are then not used.
SUMMARY_VERSION = 2  # 2: the fairness rows' AUC and xAUC intervals with fairness_boot


@dataclass(frozen=True)
class SiteSettings:
    """What the site's statistics are computed with (part of every cache key)."""

    levels: tuple[str, ...] = ("frame", "video")
    metrics: tuple[str, ...] = ("auc", "ap", "eer", "acc")
    reduce: str = "mean"
    n_boot: int = 1000  # the leaderboard cells' and calibration rows' intervals
    fairness_boot: int = 200  # every interval of the fairness rows (gaps, Lin's, AUC, xAUC)
    confidence: float = 0.95
    seed: int = 0
    alpha: float = 0.05

    def as_dict(self) -> dict[str, Any]:
        """The settings and the summary version, for cache keys and the site's header."""
        return {**asdict(self), "summary_version": SUMMARY_VERSION}

    def cache(self, root: Path, test_sets: Sequence[str]) -> SummaryCache:
        """The cache of summaries made with these settings for the benchmark's ``test_sets``
        (a summary holds the bundle's rows of those sets only)."""
        return SummaryCache(root, digest({**self.as_dict(), "test_sets": sorted(test_sets)}))


def _entry_summary(
    entry: Entry, settings: SiteSettings, bundle: AdmittedBundle, cache: SummaryCache
) -> dict[str, Any]:
    """The statistics of one test set of a bundle (its seeds read here, once)."""
    seeds = list(entry.preds)
    held = Entry(entry.detector, entry.train_data, entry.test_data, seeds, entry.baseline,
                 entry.thresholds, entry.eval_dirs, entry.chosen_by)  # fmt: skip
    out: dict[str, Any] = {
        "train_data": entry.train_data,
        "test_data": entry.test_data,
        "baseline": entry.baseline or bundle.baseline,
        "thresholds": entry.thresholds,
        "chosen_by": entry.chosen_by,
        "files": [str(p) for p in getattr(entry.preds, "paths", [])],
        "videos": [len(factorize(p.video_key)[1]) for p in seeds],
        "cells": {},
    }
    for level in settings.levels:
        result, details, _ = entry_cells(
            held, level, reduce=settings.reduce, threshold=None, n_boot=settings.n_boot,
            confidence=settings.confidence, seed=settings.seed,
        )  # fmt: skip
        out["cells"][level] = {"unit": result.unit, "metrics": result.metrics, "details": details}
    averaged = seed_average(seeds)
    cache.store_averaged(bundle.sha256, entry.test_data, averaged)
    out["fairness"] = {}
    pooled: dict = {}  # the pooled AUC, shared by attributes with the same known rows
    for attribute in attributes_of([held], entry.test_data):
        try:
            row = fairness_row(
                held, attribute, n_boot=settings.fairness_boot, confidence=settings.confidence,
                seed=settings.seed, pooled_memo=pooled, auc_boot=settings.fairness_boot,
            )  # fmt: skip
        except ValueError as exc:
            log.warning("site: %s on %s by %s: %s", entry.detector, entry.test_data, attribute, exc)
            continue
        out["fairness"][attribute] = row
    out["calibration"] = calibration_rows(
        averaged, entry.test_data, n_boot=settings.n_boot, seed=settings.seed
    )
    return out


def summarize(
    bundle: AdmittedBundle, settings: SiteSettings, cache: SummaryCache, test_sets: Sequence[str]
) -> dict[str, Any]:
    """The bundle's summary from the cache, or computed (each predictions file read once) and
    cached."""
    cached = cache.load(bundle.sha256)
    if cached is not None:
        return cached
    entries = collect_entries(bundle.eval_dirs)
    detectors = {e.detector for e in entries}
    if len(detectors) > 1:
        raise ValueError(f"bundle {bundle.sha256[:12]}: several detectors {sorted(detectors)}")
    summary: dict[str, Any] = {"sha256": bundle.sha256, "entries": {}}
    for entry in entries:
        if entry.test_data not in test_sets:
            log.warning("site: %s: test set %s is not the benchmark's; left out",
                        bundle.detector, entry.test_data)  # fmt: skip
            continue
        summary["entries"][entry.test_data] = _entry_summary(entry, settings, bundle, cache)
    summary["robust"] = {
        level: next(iter(collect_robust_auc(bundle.eval_dirs, level).values()), None)
        for level in settings.levels
    }
    cache.store(bundle.sha256, summary)
    return summary
