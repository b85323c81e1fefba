"""The fairness section of an evaluation's HTML report.

``scripts/test.py`` writes ``<eval>/report.html`` and ``<eval>/predictions/<set>.csv``;
``scripts/fairness.py --predictions <eval>/predictions/<set>.csv`` then adds its tables and
figures to that report (:func:`add_fairness_section`), with a link to the fairness folder, all
paths relative to the report so that both folders can move together. A later run on the same
predictions and attributes replaces its section; other attributes get a section of their own.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from fairforensics.evaluation.report import Section, add_sections, parts_path, relative_to
from fairforensics.evaluation.results import slug
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


def evaluation_notes(predictions: str | Path) -> list[str]:
    """What ``scripts/test.py`` recorded about the test set of ``predictions`` (a file of an
    evaluation folder) that its fairness numbers inherit: the set is partial (``partial`` in
    ``eval.json``), or its faces are cropped otherwise than the detector's weights were trained
    on (``crop_notes``). Empty for any other file."""
    path = Path(predictions).resolve()
    info_path = path.parent.parent / "eval.json"
    if path.parent.name != "predictions" or not info_path.is_file():
        return []
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except ValueError:
        return []
    names = [n for n in info.get("test_data") or [] if slug(n) == path.stem]
    if not names:
        return []
    name, notes = names[0], []
    partial = (info.get("partial") or {}).get(name)
    if partial:
        notes.append(f"{name} is partial ({partial}): these are the numbers of that subset")
    crop = (info.get("crop_notes") or {}).get(name)
    if crop:
        notes.append(crop)
    return notes


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
