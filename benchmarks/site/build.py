"""Build the site from admitted bundles: each bundle summarised once (cached by its SHA-256),
the tables put together from the summaries, every page written; the same bundles give the same
bytes (bundles ordered by when they were added and their SHA-256; the only date of the build the
site shows is ``SOURCE_DATE_EPOCH``'s, else the latest submission's)."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from fairforensics.benchmarks.site.assets import write_assets
from fairforensics.benchmarks.site.cache import SummaryCache
from fairforensics.benchmarks.site.pages import (
    TRACKS,
    Board,
    changelog_page,
    detector_page,
    index_page,
    testset_page,
)
from fairforensics.benchmarks.site.stats import (
    Row,
    calibration_table,
    cost_table,
    fairness_tables,
    leaderboards,
)
from fairforensics.benchmarks.site.summary import SiteSettings, summarize
from fairforensics.benchmarks.site.writer import SiteWriter, esc
from fairforensics.benchmarks.submissions.admitted import AdmittedBundle
from fairforensics.evaluation.results import slug
from fairforensics.preprocessing.files import atomic_write_text

log = logging.getLogger(__name__)

#: The file that marks a folder as a site this builder wrote (and may clear on a rebuild).
MARKER = ".fairforensics-site"
_WRITTEN = ("assets", "detectors", "figures", "tables", "testsets")


def _prepare(out: Path) -> None:
    """An empty site folder: a new one, or one this builder wrote (its pages removed)."""
    if out.exists() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise ValueError(
            f"{out}: not empty and not a site written by board build; give a new folder"
        )
    for name in _WRITTEN:
        shutil.rmtree(out / name, ignore_errors=True)
    for page in out.glob("*.html"):
        page.unlink()
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / MARKER, "written by fairforensics board build\n")


def site_date(bundles: Sequence[AdmittedBundle]) -> str:
    """The date the site shows: ``SOURCE_DATE_EPOCH``'s (the build), else the latest bundle's."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        try:
            when = datetime.fromtimestamp(int(epoch), timezone.utc)
        except ValueError:
            raise ValueError(f"SOURCE_DATE_EPOCH={epoch!r}: expected whole seconds") from None
        return f"built {when.strftime('%Y-%m-%d %H:%M UTC')}"
    latest = max((b.added for b in bundles), default=None)
    return f"as of the latest submission, {latest}" if latest else "no submission yet"


def _names(bundles: Sequence[AdmittedBundle]) -> dict[str, str]:
    """Each bundle's name on the site: its detector's, with its SHA-256's start when several
    bundles share the detector."""
    counts = Counter(b.detector for b in bundles)
    return {
        b.sha256: b.detector if counts[b.detector] == 1 else f"{b.detector} ({b.sha256[:8]})"
        for b in bundles
    }


def _pages(rows: Sequence[Row]) -> dict[str, str]:
    """Each row's page, ``detectors/<slug>.html`` (unique)."""
    pages: dict[str, str] = {}
    taken: set[str] = set()
    for r in rows:
        stem = slug(r.name)
        if stem.lower() in taken:
            stem = f"{stem}-{r.bundle.sha256[:8]}"
        taken.add(stem.lower())
        pages[r.name] = f"detectors/{stem}.html"
    return pages


def _board(
    rows: list[Row],
    test_sets: list[str],
    settings: SiteSettings,
    cache: SummaryCache,
    *,
    benchmark: str,
    refused: Sequence[tuple[str, str]],
) -> Board:
    """Every table of the site from the rows' summaries."""
    by_track = {t: [r for r in rows if r.bundle.track == t] for t in TRACKS}
    board = Board(benchmark, test_sets, by_track, {}, {}, {}, cost_table(rows), refused)
    for track, members in by_track.items():
        if not members:
            continue
        board.leaderboards[track] = leaderboards(members, test_sets, settings, cache)
        board.fairness[track] = fairness_tables(members, test_sets)
        board.calibration[track] = {
            level: table
            for level in settings.levels
            if (table := calibration_table(members, test_sets, level)) is not None
        }
    board.pages = _pages(board.all_rows())
    return board


def build(
    bundles: Sequence[AdmittedBundle],
    out: Path,
    *,
    benchmark: str,
    test_sets: list[str],
    refused: Sequence[tuple[str, str]] = (),
    cache_dir: Path | None = None,
    settings: SiteSettings | None = None,
) -> Path:
    """:func:`benchmarks.site.build_site` with its statistics' ``settings`` (default:
    :class:`SiteSettings`)."""
    settings = settings or SiteSettings()
    out = Path(out)
    _prepare(out)
    ordered = sorted(bundles, key=lambda b: (b.added, b.sha256))
    names = _names(ordered)
    with tempfile.TemporaryDirectory(prefix="site-cache-") as scratch:
        cache = settings.cache(Path(cache_dir or scratch), test_sets)
        rows = [Row(b, names[b.sha256], summarize(b, settings, cache, test_sets)) for b in ordered]
        board = _board(rows, list(test_sets), settings, cache, benchmark=benchmark,
                       refused=list(refused))  # fmt: skip
    header = (
        f"{esc(benchmark)}: {len(rows)} bundle(s) admitted, {len(refused)} refused "
        f"(<a href='{{up}}changelog.html'>changelog</a>); {esc(site_date(ordered))}; intervals: "
        f"{settings.n_boot} bootstrap replicates over videos at {settings.confidence:.0%} "
        f"(fairness tables: {settings.fairness_boot}), ties at alpha {settings.alpha}"
    )
    write_assets(out)
    site = SiteWriter(out, benchmark, header, board.pages)
    index = index_page(board, site, out)
    for row in board.all_rows():
        detector_page(board, site, row)
    for test in board.test_sets:
        testset_page(board, site, test)
    changelog_page(board, site)
    site.index_of_tables()
    log.info("site: %d bundle(s), %d page(s) in %s", len(rows), 2 + len(rows) + len(test_sets), out)
    return index
