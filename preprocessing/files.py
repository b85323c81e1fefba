"""Atomic file writers and the one JSON writer every package uses (standard JSON: NaN -> null)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

from fairforensics.configs.filemode import atomic_path


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (mode as umask says)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def jsonable(value: Any) -> Any:
    """Replace NaN/inf by None and numpy scalars/arrays by Python values, recursively."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json(path: str | Path, data: Any, indent: int | None = 1) -> None:
    """Atomic standard-JSON write: NaN/inf become null, numpy values become Python values, and
    anything else JSON cannot hold (paths, dates) is written as its ``str``."""
    text = json.dumps(
        jsonable(data), indent=indent, ensure_ascii=False, allow_nan=False, default=str
    )
    atomic_write_text(path, text + "\n")


def write_yaml(path: str | Path, data: Any) -> None:
    """Atomic YAML write (keys in insertion order)."""
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False))
