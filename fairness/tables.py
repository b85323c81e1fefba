"""Write a table (a list of row dicts) as CSV, Markdown and JSON with
:mod:`evaluation.table_writer`, which prints NaN as ``undefined`` and None as ``-`` in Markdown
(CSV: empty cells, JSON: null), as the evaluation tables do."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fairforensics.evaluation.table_writer import (
    csv_text,
    format_number,
    markdown_text,
    write_table_files,
)


def columns_of(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Column names in first-seen order across all rows."""
    cols: list[str] = []
    for row in rows:
        cols.extend(k for k in row if k not in cols)
    return cols


def _cells(rows: Sequence[dict[str, Any]], cols: Sequence[str]) -> list[list[Any]]:
    return [[row.get(c) for c in cols] for row in rows]


def to_markdown(
    rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None, digits: int = 4
) -> str:
    """A GitHub Markdown table; floats rounded to ``digits``."""
    cols = list(columns or columns_of(rows))
    return markdown_text(cols, _cells(rows, cols), lambda i, j, v: format_number(v, digits))


def to_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """CSV text with a header; floats written at full precision, None and NaN empty."""
    cols = list(columns or columns_of(rows))
    return csv_text(cols, _cells(rows, cols))


def write_table(
    rows: Sequence[dict[str, Any]],
    stem: str | Path,
    columns: Sequence[str] | None = None,
    digits: int = 4,
) -> list[Path]:
    """Write ``stem``.csv, ``stem``.md and ``stem``.json; returns the three paths."""
    cols = list(columns or columns_of(rows))
    return write_table_files(
        stem,
        to_csv(rows, cols),
        to_markdown(rows, cols, digits),
        [{c: row.get(c) for c in cols} for row in rows],
    )
