"""Write a table (a list of row dicts) as CSV, Markdown and JSON, atomically."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from preprocessing.files import atomic_write_text, write_json


def _cell(value: Any, digits: int) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def columns_of(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Column names in first-seen order across all rows."""
    cols: list[str] = []
    for row in rows:
        cols.extend(k for k in row if k not in cols)
    return cols


def to_markdown(
    rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None, digits: int = 4
) -> str:
    """A GitHub Markdown table; floats rounded to ``digits``."""
    cols = list(columns or columns_of(rows))
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c), digits) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def to_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """CSV text with a header; floats written at full precision."""
    cols = list(columns or columns_of(rows))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(cols)
    for row in rows:
        writer.writerow(["" if row.get(c) is None else row.get(c) for c in cols])
    return buffer.getvalue()


def write_table(
    rows: Sequence[dict[str, Any]],
    stem: str | Path,
    columns: Sequence[str] | None = None,
    digits: int = 4,
) -> list[Path]:
    """Write ``stem``.csv, ``stem``.md and ``stem``.json; returns the three paths."""
    stem = Path(stem)
    cols = list(columns or columns_of(rows))
    paths = [stem.with_suffix(".csv"), stem.with_suffix(".md"), stem.with_suffix(".json")]
    atomic_write_text(paths[0], to_csv(rows, cols))
    atomic_write_text(paths[1], to_markdown(rows, cols, digits))
    write_json(paths[2], [{c: row.get(c) for c in cols} for row in rows])
    return paths
