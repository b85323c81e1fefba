"""The predictions reader and writer as they were before the columnar rewrite (one Python string
per cell, the csv module), kept as the reference the new ones must match byte for byte."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np

BASE_COLUMNS = ("dataset", "video_id", "frame", "label", "score", "method")


def old_csv_text(columns: dict[str, Any], attributes: dict[str, Any]) -> str:
    """What the old ``write_predictions`` wrote for these columns (``unit`` among them)."""
    names = sorted(attributes)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*BASE_COLUMNS, "unit", *names])
    for i in range(len(columns["label"])):
        writer.writerow(
            [
                columns["dataset"][i],
                columns["video_id"][i],
                int(columns["frame"][i]),
                int(columns["label"][i]),
                repr(float(columns["score"][i])),
                columns["method"][i],
                columns["unit"][i],
                *(attributes[k][i] for k in names),
            ]
        )
    return buffer.getvalue()


def old_read_columns(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays the old ``read_predictions`` built (strings as object arrays)."""
    with Path(path).open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = list(reader)
    columns = {name: [r[i] for r in rows] for i, name in enumerate(header)}
    out = {k: np.array(v, dtype=object) for k, v in columns.items()}
    out["frame"] = np.array(columns["frame"], dtype=np.int64)
    out["label"] = np.array(columns["label"], dtype=np.int64)
    out["score"] = np.array(columns["score"], dtype=np.float64)
    if "unit" not in out:
        out["unit"] = np.full(len(rows), "frame", dtype=object)
    return out
