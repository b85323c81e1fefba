"""Parts of a table for the detector and test-set pages: some of its rows, some of its columns,
each cell with what it carries (interval, spread, tie mark, best)."""

from __future__ import annotations

from collections.abc import Sequence

from fairforensics.evaluation.tables import Table


def rows_of(table: Table, detector: str, title: str) -> Table | None:
    """The rows of ``detector`` (column ``Detector``), or None when it has none."""
    col = table.columns.index("Detector")
    keep = [i for i, r in enumerate(table.rows) if r[col] == detector]
    if not keep:
        return None
    new = {old: k for k, old in enumerate(keep)}
    return Table(
        list(table.columns),
        [list(table.rows[i]) for i in keep],
        title=title,
        highlight={(new[i], j) for i, j in table.highlight if i in new},
        details={(new[i], j): dict(v) for (i, j), v in table.details.items() if i in new},
        baseline_rows={new[i] for i in table.baseline_rows if i in new},
    )


def columns_of(table: Table, names: Sequence[str], title: str) -> Table | None:
    """The columns ``names`` that ``table`` has (in its order), or None when it lacks one of
    the columns after ``Type`` and ``Detector``."""
    keep = [j for j, c in enumerate(table.columns) if c in names]
    if not any(table.columns[j] not in ("Type", "Detector") for j in keep):
        return None
    new = {old: k for k, old in enumerate(keep)}
    return Table(
        [table.columns[j] for j in keep],
        [[r[j] for j in keep] for r in table.rows],
        title=title,
        highlight={(i, new[j]) for i, j in table.highlight if j in new},
        details={(i, new[j]): dict(v) for (i, j), v in table.details.items() if j in new},
        baseline_rows=set(table.baseline_rows),
    )
