"""Issue 47, item 8: the vectorised statistics give the numbers of the implementation before it
(stored in ``tests/data/stats_reference.json`` by ``tests/stats_reference.py``): counts and
replicate multiplicities exactly, every other figure to 1e-12, notes word for word."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tests.stats_reference import REFERENCE, compute


def _same(old: Any, new: Any, where: str) -> list[str]:
    """Where ``new`` differs from ``old`` (floats to 1e-12, everything else exactly); keys only
    in ``new`` are figures added since the reference (e.g. the ECE of issue 48) and not compared."""
    if isinstance(old, dict):
        if not isinstance(new, dict) or not set(old) <= set(new):
            return [
                f"{where}: keys {sorted(old)} != {sorted(new) if isinstance(new, dict) else new}"
            ]
        return [d for k in old for d in _same(old[k], new[k], f"{where}.{k}")]
    if isinstance(old, list):
        if not isinstance(new, list) or len(old) != len(new):
            return [f"{where}: length differs"]
        return [
            d
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for d in _same(a, b, f"{where}[{i}]")
        ]
    if isinstance(old, float) and not isinstance(new, bool):
        if isinstance(new, int | float) and math.isclose(old, new, rel_tol=1e-12, abs_tol=1e-12):
            return []
        return [f"{where}: {old!r} != {new!r}"]
    return [] if old == new and type(old) is type(new) else [f"{where}: {old!r} != {new!r}"]


@pytest.fixture(scope="module")
def figures() -> tuple[dict[str, Any], dict[str, Any]]:
    old = json.loads(REFERENCE.read_text())
    old.pop("made_at")
    return old, compute()


@pytest.mark.parametrize(
    "part",
    [
        "stratified",
        "bootstrap_multiplicities",
        "bootstrap_ci",
        "gaps",
        "curve_auc",
        "iso",
        "lin",
        "report",
    ],
)
def test_same_numbers_as_before(figures: tuple[dict[str, Any], dict[str, Any]], part: str) -> None:
    old, new = figures
    keys = [k for k in old if k.startswith(part)]
    assert keys
    diffs = [d for k in keys for d in _same(old[k], new.get(k), k)]
    assert not diffs, "\n".join(diffs[:20])
