"""The one-page HTML leaderboard of a sweep (issue 38, item 7): ``<out>/index.html``.

Every table is sortable by clicking a column header (inline JavaScript, no network: the page
and its figures are files of the folder). Cells show their interval; a cell not
distinguishable from its column's best is marked ``≈``, the best of every column is bold red;
baseline rows are set apart below the others (their own block, which sorting leaves below, in
grey italics, under a line that says they are not ranked);
each detector links to its evaluation report (one per seed) and, where one was run, its
robustness report. Sections: leaderboards (every level and metric), robustness, fairness (tables
and Pareto figures), cost.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fairforensics.evaluation.leaderboard import Entry
from fairforensics.evaluation.report import relative_to
from fairforensics.evaluation.tables import BASELINE, BASELINE_NOTE, TIE_MARK, Table
from fairforensics.preprocessing.files import atomic_write_text

#: The page's style (the board's site adds to it: :mod:`benchmarks.site.assets`).
STYLE = """
body{font-family:sans-serif;max-width:1400px;margin:2em auto;padding:0 1.5em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:12px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#f0f0f0;cursor:pointer} td:nth-child(-n+2){text-align:left}
caption{font-weight:bold;text-align:left;padding:4px 0}
tr.baseline td{color:#777;font-style:italic;background:#fafafa}
tr.sep td{text-align:left;color:#555;font-style:italic;border-top:2px solid #888;cursor:default}
td.tied{background:#eef6ee} td.best{font-weight:bold;color:#c00}
img{max-width:520px} .meta{font-size:12px;color:#555}
"""
# sorts a table by the clicked column: numbers by data-v, text otherwise; a second click reverses
SORT_SCRIPT = """
function sortBy(th){
  const table=th.closest('table'), body=table.tBodies[0], col=th.cellIndex;
  const asc=th.dataset.asc!=='1'; th.dataset.asc=asc?'1':'0';
  const key=r=>{const c=r.cells[col]; const v=c.dataset.v;
    return v===undefined||v===''?c.textContent:parseFloat(v);};
  const rows=Array.from(body.rows).sort((a,b)=>{const x=key(a),y=key(b);
    if(typeof x==='number'&&typeof y==='number'){
      if(isNaN(x))return 1; if(isNaN(y))return -1; return asc?x-y:y-x;}
    return asc?String(x).localeCompare(String(y)):String(y).localeCompare(String(x));});
  rows.forEach(r=>body.appendChild(r));
}
"""


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _number(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return (
        repr(float(value))
        if isinstance(value, (int, float)) and not isinstance(value, bool)
        else ""
    )


def _text(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return "undefined" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def sortable_table(
    title: str,
    columns: Sequence[str],
    records: Sequence[dict[str, Any]],
    best: set[tuple[int, str]] = frozenset(),
    links: Mapping[str, str] | None = None,
) -> str:
    """A sortable ``<table>`` of JSON records as the tables write them (each column ``c``
    possibly with ``c low``, ``c high``, ``c sd`` and ``c tied`` beside it); baseline rows in a
    second body under :data:`evaluation.tables.BASELINE_NOTE` (sorting sorts the first).
    ``links``: detector -> the address its ``Detector`` cell links to."""
    head = "".join(f"<th onclick='sortBy(this)'>{_esc(c)}</th>" for c in columns)
    body, apart = [], []
    for i, r in enumerate(records):
        cells = []
        for c in columns:
            v = r.get(c)
            text = _text(v)
            if r.get(f"{c} sd") is not None:
                text += f" ± {_text(r[f'{c} sd'])}"
            if r.get(f"{c} one_class"):
                text += " (one class)"
            if r.get(f"{c} low") is not None and r.get(f"{c} high") is not None:
                text += f" [{_text(r[f'{c} low'], 3)}, {_text(r[f'{c} high'], 3)}]"
            css = []
            if (i, c) in best:
                css.append("best")
            elif r.get(f"{c} tied"):
                css.append("tied")
                text += TIE_MARK
            klass = f" class='{' '.join(css)}'" if css else ""
            shown = _esc(text)
            if c == "Detector" and links and v in links:
                shown = f"<a href='{_esc(links[v])}'>{shown}</a>"
            cells.append(f"<td data-v='{_number(v)}'{klass}>{shown}</td>")
        if r.get("Type") == BASELINE:
            apart.append(f"<tr class='baseline'>{''.join(cells)}</tr>")
        else:
            body.append(f"<tr>{''.join(cells)}</tr>")
    if apart:
        sep = f"<tr class='sep'><td colspan='{len(columns)}'>{_esc(BASELINE_NOTE)}</td></tr>"
        apart = [f"</tbody><tbody class='baselines'>{sep}", *apart]
    return (
        f"<table><caption>{_esc(title)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}{''.join(apart)}</tbody></table>"
    )


def table_html(table: Table, links: Mapping[str, str] | None = None) -> str:
    """:func:`sortable_table` of a :class:`Table`, from its JSON (what ``to_json`` writes)."""
    data = json.loads(table.to_json())
    best = {(i, table.columns[j]) for i, j in table.highlight}
    return sortable_table(data["title"], data["columns"], data["rows"], best, links)


def _leaderboards(out: Path) -> list[str]:
    parts = []
    for path in sorted(out.glob("leaderboard_*_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        level, metric = path.stem.split("_", 2)[1:]
        best = {(int(i), str(c)) for i, c in data.get("best", [])}  # every metric's best cells
        parts.append(f"<h3>{_esc(metric.upper())} ({_esc(level)} level)</h3>")
        parts.append(sortable_table(data["title"], data["columns"], data["rows"], best))
    return parts


def _links(entries: Sequence[Entry], out: Path) -> str:
    seen: dict[str, list[Path]] = {}
    for e in entries:
        for d in e.eval_dirs:
            if d not in seen.setdefault(e.detector, []):
                seen[e.detector].append(d)
    items = []
    for detector, dirs in seen.items():
        links = []
        for k, d in enumerate(dirs):
            for name, page in (("evaluation", d / "report.html"),
                               ("robustness", d / "robustness" / "report.html")):  # fmt: skip
                if page.is_file():
                    links.append(f"<a href='{_esc(relative_to(page, out))}'>{name} {k}</a>")
        items.append(f"<li>{_esc(detector)}: {' '.join(links) or 'no report'}</li>")
    return f"<ul>{''.join(items)}</ul>"


def write_page(
    out: Path,
    entries: Sequence[Entry],
    fairness: Sequence[tuple[Table, Path]],
    cost: Table | None,
    *,
    title: str = "Leaderboard",
) -> Path:
    """``<out>/index.html`` (module docstring); returns its path."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        f"<h1>{_esc(title)}</h1><p class='meta'>written {when}; ≈: not distinguishable from "
        "the column's best (paired DeLong, clustered by video, Holm); [low, high]: 95 % "
        "interval clustered by video; ± sd: spread across training seeds; bold red: a column's "
        "best; grey rows below each table: sanity baselines, never ranked. Every row decides "
        "at its run's threshold (columns Threshold and Chosen by); one class: every decision "
        "on the test set the same. Leaderboard AUC: the mean of the seeds' AUCs; fairness AUC: "
        "of the seed-averaged scores. Click a column header to sort.</p>",
        "<h2 id='leaderboards'>Leaderboards</h2>",
        *_leaderboards(out),
        "<h2 id='robustness'>Robustness</h2><p>The AUC tables' <i>robust AUC</i> column: the "
        "mean AUC over DeeperForensics-1.0's perturbations, for detectors swept with "
        "--robustness; reports linked below.</p>",
        "<h2 id='detectors'>Detectors' reports</h2>",
        _links(entries, out),
        "<h2 id='fairness'>Fairness</h2>",
    ]
    for table, figure in fairness:
        parts.append(table_html(table))
        parts.append(f"<p><img src='{_esc(relative_to(figure, out))}' alt='Pareto figure'></p>")
    if not fairness:
        parts.append("<p>No test set carries an attribute with two groups.</p>")
    if cost is not None:
        parts += ["<h2 id='cost'>Cost</h2>", table_html(cost)]
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{_esc(title)}</title><style>{STYLE}</style><script>{SORT_SCRIPT}</script>"
        f"</head><body>{''.join(parts)}</body></html>"
    )
    path = out / "index.html"
    atomic_write_text(path, page)
    return path
