"""The site's pages: ``index.html`` (the leaderboards per level and metric, the "own
preprocessing" track apart, fairness, calibration, cost), ``detectors/<name>.html`` (a bundle's
card, its rows of every table, robustness), ``testsets/<name>.html`` (every table's column of one
test set) and ``changelog.html`` (when each bundle was added, from which code version, its
SHA-256; the refused bundles with their reason)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fairforensics.benchmarks.fairness_board import pareto_figure
from fairforensics.benchmarks.site.stats import Row
from fairforensics.benchmarks.site.views import columns_of, rows_of
from fairforensics.benchmarks.site.writer import SiteWriter, esc
from fairforensics.evaluation.calibration.section import CALIBRATION_COLUMNS
from fairforensics.evaluation.results import slug
from fairforensics.evaluation.tables import BASELINE_NOTE, Table

TRACKS = ("benchmark", "own preprocessing")
_TRACK_TEXT = {
    "benchmark": "Scored on the benchmark's test items with its preprocessing (index SHA-256).",
    "own preprocessing": "The same test videos scored from the submitter's own preprocessing "
    "or frame sampling: not comparable with the benchmark track, never ranked with it.",
}
LEGEND = (
    "≈: not distinguishable from the column's best (paired DeLong clustered by video, "
    "family-wise: max-|z| over all pairs); [low, high]: 95 % interval clustered by video; "
    "± sd: spread across training seeds; bold red: a column's best; grey rows under each "
    "table: " + BASELINE_NOTE + ". Every row decides at its run's threshold (columns Threshold "
    "and Chosen by). Click a column header to sort; every table's JSON is linked under it."
)


@dataclass
class Board:
    """What the pages show: the admitted rows per track and their tables."""

    benchmark: str
    test_sets: list[str]
    rows: dict[str, list[Row]]  # per track
    leaderboards: dict[str, dict[tuple[str, str], Table]]  # per track: (level, metric) -> table
    fairness: dict[str, dict[tuple[str, str], Table]]  # per track: (test set, attribute)
    calibration: dict[str, dict[str, Table]]  # per track: level -> ECE table
    costs: Table | None
    refused: Sequence[tuple[str, str]] = ()
    pages: dict[str, str] = field(default_factory=dict)  # row name -> detectors/<slug>.html

    def all_rows(self) -> list[Row]:
        """Every admitted row, tracks in order."""
        return [r for t in TRACKS for r in self.rows.get(t, [])]


def _prefix(track: str) -> str:
    return "" if track == "benchmark" else "own_"


def _leaderboard_parts(board: Board, site: SiteWriter, track: str) -> list[str]:
    parts = []
    for (level, metric), table in board.leaderboards.get(track, {}).items():
        parts.append(f"<h3>{esc(metric.upper())} ({esc(level)} level)</h3>")
        parts.append(site.table(table, f"{_prefix(track)}leaderboard_{level}_{metric}", 0))
    return parts


def _fairness_parts(board: Board, site: SiteWriter, track: str, out: Path) -> list[str]:
    parts = []
    for (test, attribute), table in board.fairness.get(track, {}).items():
        name = f"{_prefix(track)}fairness_{test}_{attribute}"
        parts.append(site.table(table, name, 0))
        figure = pareto_figure(table, out / "figures" / f"pareto_{slug(name)}.png")[0]
        parts.append(
            f"<p><img src='figures/{esc(figure.name)}' alt='AUC against AUC gap, {esc(test)} "
            f"by {esc(attribute)}' width='520'></p>"
        )
    return parts


def index_page(board: Board, site: SiteWriter, out: Path) -> Path:
    """``index.html``."""
    parts = [f"<p class='meta'>{esc(LEGEND)}</p>", "<h2 id='leaderboards'>Leaderboards</h2>"]
    parts.append(f"<p>{esc(_TRACK_TEXT['benchmark'])}</p>")
    parts += _leaderboard_parts(board, site, "benchmark") or ["<p>No bundle admitted.</p>"]
    if board.rows.get("own preprocessing"):
        parts += ["<h2 id='own'>Own preprocessing track</h2>",
                  f"<p>{esc(_TRACK_TEXT['own preprocessing'])}</p>",
                  *_leaderboard_parts(board, site, "own preprocessing")]  # fmt: skip
    parts.append("<h2 id='fairness'>Fairness</h2>")
    fair = [p for t in TRACKS for p in _fairness_parts(board, site, t, out)]
    parts += fair or ["<p>No test set carries an attribute with two groups.</p>"]
    parts.append("<h2 id='calibration'>Calibration</h2>")
    for track in TRACKS:
        for level, table in board.calibration.get(track, {}).items():
            parts.append(site.table(table, f"{_prefix(track)}calibration_{level}", 0))
    parts.append("<h2 id='cost'>Cost</h2>")
    parts.append(
        site.table(board.costs, "costs", 0) if board.costs else "<p>No bundle carries costs.</p>"
    )
    sets = "".join(
        f"<li><a href='testsets/{esc(slug(t))}.html'>{esc(t)}</a></li>" for t in board.test_sets
    )
    parts.append(f"<h2 id='testsets'>Test sets</h2><ul>{sets}</ul>")
    items = "".join(
        f"<li><a href='{esc(board.pages[r.name])}'>{esc(r.name)}</a> ({esc(r.bundle.track)}"
        f"{', baseline' if r.baseline else ''}; added {esc(r.bundle.added)})</li>"
        for r in board.all_rows()
    )
    parts.append(f"<h2 id='detectors'>Detectors</h2><ul>{items}</ul>")
    return site.page("index.html", f"Leaderboard: {board.benchmark}", parts)


def _meta(row: Row) -> str:
    b = row.bundle
    items = [
        ("Detector", b.detector),
        ("Track", b.track + (" (baseline: never ranked)" if row.baseline else "")),
        ("Added", b.added),
        ("Code version", b.code_version),
        ("Bundle SHA-256", b.sha256),
        ("Model package", b.package or "not given (weights not published)"),
    ]
    items += [("Note", n) for n in b.notes]
    return "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items) + "</dl>"


def _calibration_rows(row: Row, title: str) -> Table:
    table = Table(list(CALIBRATION_COLUMNS), title=title)
    for e in row.summary["entries"].values():
        for c in e.get("calibration", []):
            table.rows.append([c.get(k) for k in CALIBRATION_COLUMNS])
    return table


def detector_page(board: Board, site: SiteWriter, row: Row) -> Path:
    """``detectors/<name>.html``."""
    name, track, stem = row.name, row.bundle.track, Path(board.pages[row.name]).stem
    card = row.bundle.card
    text = card.read_text(encoding="utf-8") if card is not None and card.is_file() else None
    parts = [_meta(row), "<h2>Model card</h2>"]
    parts.append(f"<pre>{esc(text)}</pre>" if text else "<p>No model card submitted.</p>")
    parts.append("<h2>Leaderboards</h2>")
    for (level, metric), table in board.leaderboards.get(track, {}).items():
        mine = rows_of(table, name, f"{metric.upper()} ({level} level): {table.title}")
        if mine is not None:
            parts.append(site.table(mine, f"detector_{stem}_{level}_{metric}", 1))
    parts.append("<h2>Robustness</h2>")
    robust = {k: v for k, v in row.summary["robust"].items() if v is not None}
    parts.append(
        "<p>Robust AUC (mean over DeeperForensics-1.0's perturbations): "
        + ", ".join(f"{esc(level)} level {v:.4f}" for level, v in robust.items()) + "</p>"
        if robust else "<p>No robustness run submitted.</p>"
    )  # fmt: skip
    parts.append("<h2>Fairness</h2>")
    fair = [
        site.table(mine, f"detector_{stem}_fairness_{test}_{attribute}", 1)
        for (test, attribute), table in board.fairness.get(track, {}).items()
        if (mine := rows_of(table, name, table.title)) is not None
    ]
    parts += fair or ["<p>No fairness figures (no attribute with two groups).</p>"]
    parts.append("<h2>Calibration</h2>")
    title = "Calibration of the seed-averaged P(fake): ECE (interval by video), MCE, Brier, NLL"
    parts.append(site.table(_calibration_rows(row, title), f"detector_{stem}_calibration", 1))
    mine = rows_of(board.costs, name, board.costs.title) if board.costs else None
    if mine is not None:
        parts += ["<h2>Cost</h2>", site.table(mine, f"detector_{stem}_costs", 1)]
    return site.page(board.pages[name], name, parts)


def testset_page(board: Board, site: SiteWriter, test: str) -> Path:
    """``testsets/<name>.html``: the test set's column of every table."""
    keep = ["Type", "Detector", test, "Seeds", "Threshold", "Chosen by"]
    parts = []
    for track in TRACKS:
        tables = board.leaderboards.get(track, {})
        if tables:
            parts.append(f"<h2>{esc(track.capitalize())} track</h2>")
        for (level, metric), table in tables.items():
            column = columns_of(table, keep, f"{test}: {metric.upper()} ({level} level)")
            if column is not None:
                name = f"testset_{test}_{_prefix(track)}{level}_{metric}"
                parts.append(site.table(column, name, 1))
        for level, table in board.calibration.get(track, {}).items():
            column = columns_of(table, keep, f"{test}: ECE ({level} level)")
            if column is not None:
                name = f"testset_{test}_{_prefix(track)}calibration_{level}"
                parts.append(site.table(column, name, 1))
        for (t, attribute), table in board.fairness.get(track, {}).items():
            if t == test:
                parts.append(site.table(table, f"{_prefix(track)}fairness_{t}_{attribute}", 1))
    return site.page(
        f"testsets/{slug(test)}.html", f"Test set {test}", parts or ["<p>No rows.</p>"]
    )


def changelog_page(board: Board, site: SiteWriter) -> Path:
    """``changelog.html``: every admitted bundle, newest first, and every refused one."""
    added = Table(
        ["Added", "Detector", "Track", "Baseline", "Code version", "SHA-256", "Package"],
        title="Admitted bundles, newest first (the SHA-256 of each bundle's manifest.json)",
    )
    for r in sorted(
        board.all_rows(), key=lambda r: (r.bundle.added, r.bundle.sha256), reverse=True
    ):
        b = r.bundle
        added.rows.append(
            [b.added, r.name, b.track, "yes" if r.baseline else "no", b.code_version, b.sha256,
             b.package or "-"]
        )  # fmt: skip
    refused = Table(["Bundle", "Reason"], [list(x) for x in board.refused],
                    title="Refused bundles (not on the leaderboard), each with the one line "
                    "that says why")  # fmt: skip
    parts = ["<h2>Added</h2>", site.table(added, "changelog", 0), "<h2>Refused</h2>"]
    parts.append(site.table(refused, "refused", 0) if board.refused else "<p>None.</p>")
    return site.page("changelog.html", "Changelog", parts)
