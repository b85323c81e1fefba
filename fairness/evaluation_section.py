"""The fairness section of an evaluation's HTML report.

``scripts/test.py`` writes ``<eval>/report.html`` and ``<eval>/predictions/<set>.csv``;
``scripts/fairness.py --predictions <eval>/predictions/<set>.csv`` then adds its tables and
figures to that report (:func:`add_fairness_section`), with a link to the fairness folder, all
paths relative to the report so that both folders can move together. A later run on the same
predictions and attributes replaces its section; other attributes get a section of their own.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from fairforensics.evaluation.report import Section, add_sections, parts_path, relative_to
from fairforensics.fairness.report import report_sections


def evaluation_report_of(predictions: str | Path) -> Path | None:
    """``<eval>/report.html`` when ``predictions`` is ``<eval>/predictions/<set>.csv`` of an
    evaluation folder written by ``scripts/test.py`` (``eval.json``, the report and its
    ``report.parts.json`` beside it); else ``None``."""
    folder = Path(predictions).resolve().parent
    if folder.name != "predictions":
        return None
    report = folder.parent / "report.html"
    needed = (report, parts_path(report), folder.parent / "eval.json")
    return report if all(p.is_file() for p in needed) else None


def add_fairness_section(
    report: str | Path,
    reports: dict[str, Any],
    fairness_dir: str | Path,
    predictions: str | Path,
    threshold: float,
) -> Path:
    """Add (or replace) the section ``Fairness: <attributes> (<set>)`` in ``report``: where the
    full fairness output is, the decision threshold used, the tables and the figures."""
    report, fairness_dir = Path(report), Path(fairness_dir)
    title = f"Fairness: {', '.join(reports)} ({Path(predictions).stem})"
    folder = relative_to(fairness_dir, report.parent)
    links = ", ".join(
        f"<a href='{html.escape(folder)}/{name}'>{name}</a>"
        for name in ("section.html", "summary.md", "fairness.json")
        if (fairness_dir / name).is_file()
    )
    intro = (
        f"<p>Computed by scripts/fairness.py from {html.escape(Path(predictions).name)} at the "
        f"decision threshold {threshold:.6g}; every table and figure is in "
        f"<code>{html.escape(folder)}/</code> ({links}).</p>"
    )
    (_, items), *_ = report_sections(reports, fairness_dir / "figures")
    return add_sections(report, [Section(title, [intro, *items])])
