"""The one table writer: columns and rows of cells as CSV, Markdown and JSON text and files.

Used by the leaderboard (:class:`evaluation.tables.Table`), the fairness tables
(:mod:`fairness.tables`) and the metamorphic tables (:mod:`fairness.metamorphic.tables`). The
callers differ only in options: how a Markdown cell is formatted (digits, percent, the text of a
missing value), right-aligned numeric columns and bold best cells.
"""

from __future__ import annotations

import csv
import html
import io
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fairforensics.preprocessing.files import atomic_write_text, jsonable, write_json

#: ``(row index, column index, value) -> Markdown text`` of one cell.
CellFormat = Callable[[int, int, Any], str]


#: How every evaluation and fairness table prints a value that was computed but is undefined
#: (NaN: 0/0, one class, too few videos); the reason goes in the table's notes. CSV leaves the
#: cell empty and JSON writes null.
UNDEFINED = "undefined"
#: How they print a value that was not computed (None: switched off, not applicable).
NOT_AVAILABLE = "-"


def is_missing(value: Any) -> bool:
    """None or a float NaN."""
    return value is None or (isinstance(value, (float, np.floating)) and math.isnan(value))


def format_number(
    value: Any,
    digits: int = 4,
    missing: str = UNDEFINED,
    *,
    none: str | None = NOT_AVAILABLE,
    percent=False,
) -> str:
    """Floats with ``digits`` decimals (``percent``: 100 x value with 2), other values as ``str``.

    NaN is ``missing`` (default ``undefined``), None is ``none`` (default ``-``; None: the same
    as ``missing``). Bools print as ``True``/``False``.
    """
    if value is None:
        return missing if none is None else none
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return missing
        return f"{100 * value:.2f}" if percent else f"{value:.{digits}f}"
    return str(value)


def csv_text(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """CSV with a header; values at full precision, None and NaN as empty cells."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if is_missing(c) else c for c in row])
    return buffer.getvalue()


def is_numeric(rows: Sequence[Sequence[Any]], j: int) -> bool:
    """Whether column ``j`` holds numbers or missing values only."""
    return all(isinstance(r[j], (int, float, np.number)) or is_missing(r[j]) for r in rows)


def markdown_text(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    cell: CellFormat = lambda i, j, v: format_number(v),
    *,
    right_align_numbers: bool = False,
    bold: Collection[tuple[int, int]] = (),
) -> str:
    """A GitHub Markdown table; ``bold``: the (row, column) cells to set in bold."""
    head = "| " + " | ".join(columns) + " |"
    numeric = [right_align_numbers and is_numeric(rows, j) for j in range(len(columns))]
    rule = "|" + "|".join("---:" if num else "---" for num in numeric) + "|"
    body = []
    for i, row in enumerate(rows):
        cells = [cell(i, j, v) for j, v in enumerate(row)]
        cells = [f"**{c}**" if (i, j) in bold else c for j, c in enumerate(cells)]
        body.append("| " + " | ".join(cells) + " |")
    return "\n".join([head, rule, *body]) + "\n"


def html_text(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    cell: CellFormat = lambda i, j, v: format_number(v),
    *,
    bold: Collection[tuple[int, int]] = (),
    bold_format: str = "<b>{}</b>",
    caption: str = "",
    sections: bool = True,
    row_sep: str = "",
    row_class: Mapping[int, str] | None = None,
    label_before: Mapping[int, str] | None = None,
) -> str:
    """An HTML ``<table>`` (texts escaped); ``sections``: ``<thead>``/``<tbody>``; ``row_sep``
    goes before each row and before the closing tag (``"\n"``: one row a line); ``row_class``:
    row -> CSS class; ``label_before``: row -> a text on a full-width row before it."""

    def esc(text: Any) -> str:
        return html.escape(str(text), quote=False)

    head = "<tr>" + "".join(f"<th>{esc(c)}</th>" for c in columns) + "</tr>"
    body = ""
    for i, row in enumerate(rows):
        if label_before and i in label_before:
            body += f"{row_sep}<tr class='sep'><td colspan='{len(columns)}'>"
            body += f"{esc(label_before[i])}</td></tr>"
        cells = [esc(cell(i, j, v)) for j, v in enumerate(row)]
        cells = [bold_format.format(c) if (i, j) in bold else c for j, c in enumerate(cells)]
        klass = f" class='{row_class[i]}'" if row_class and i in row_class else ""
        body += f"{row_sep}<tr{klass}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"
    body += row_sep
    top = f"<caption>{esc(caption)}</caption>" if caption else ""
    if sections:
        return f"<table>{top}<thead>{head}</thead><tbody>{body}</tbody></table>"
    return f"<table>{top}{head}{body}</table>"


_LATEX_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "≈": r"$\approx$", "±": r"$\pm$", "–": "--", ">": r"\textgreater{}", "<": r"\textless{}",
}  # fmt: skip


def latex_escape(text: Any) -> str:
    """``text`` with LaTeX's special characters (and ``≈``, ``±``) written as LaTeX."""
    return "".join(_LATEX_ESCAPES.get(c, c) for c in str(text))


def latex_text(
    columns: Sequence[str],
    cells: Sequence[Sequence[str]],
    *,
    caption: str = "",
    bold: Collection[tuple[int, int]] = (),
    right: Sequence[bool] = (),
    notes: Sequence[str] = (),
    label_before: Mapping[int, str] | None = None,
) -> str:
    """A booktabs ``table`` of formatted ``cells`` (escaped here): ``right``: right-aligned
    columns; ``notes``: a second header line under the column names; ``label_before``: row ->
    a text on a full-width row (after a rule) before it."""
    n = len(columns)
    align = "".join("r" if j < len(right) and right[j] else "l" for j in range(n))

    def line(items: Sequence[str]) -> str:
        return " & ".join(items) + r" \\"

    out = [r"\begin{table}[ht]", r"\centering", r"\small"]
    if caption:
        out.append(r"\caption{" + latex_escape(caption) + "}")
    out += [r"\begin{tabular}{" + align + "}", r"\toprule", line(map(latex_escape, columns))]
    if any(notes):
        out.append(line([latex_escape(x) for x in notes]))
    out.append(r"\midrule")
    for i, row in enumerate(cells):
        if label_before and i in label_before:
            text = latex_escape(label_before[i])
            out += [r"\midrule"] * bool(i) + [
                line([rf"\multicolumn{{{n}}}{{l}}{{\emph{{{text}}}}}"])
            ]
        out.append(
            line(
                [
                    rf"\textbf{{{latex_escape(c)}}}" if (i, j) in bold else latex_escape(c)
                    for j, c in enumerate(row)
                ]
            )  # fmt: skip
        )
    out += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(out) + "\n"


def json_records(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Rows as ``{column: value}`` with NaN as None (standard JSON)."""
    return jsonable([dict(zip(columns, row, strict=True)) for row in rows])


def table_paths(stem: str | Path) -> list[Path]:
    """``<stem>.csv``, ``<stem>.md`` and ``<stem>.json`` (a dot in the stem's name is kept)."""
    stem = Path(stem)
    return [stem.with_name(stem.name + s) for s in (".csv", ".md", ".json")]


def write_table_files(
    stem: str | Path, csv_: str, markdown: str, json_data: Any, *, latex: str | None = None
) -> list[Path]:
    """Write the three files of a table atomically (JSON by ``write_json``) and, given its
    ``latex``, ``<stem>.tex``; returns the paths."""
    paths = table_paths(stem)
    atomic_write_text(paths[0], csv_)
    atomic_write_text(paths[1], markdown)
    if isinstance(json_data, str):
        atomic_write_text(paths[2], json_data)
    else:
        write_json(paths[2], json_data)
    if latex is not None:
        paths.append(paths[0].with_name(Path(stem).name + ".tex"))
        atomic_write_text(paths[-1], latex)
    return paths
