"""A string column held as integer codes into its sorted distinct values (the string columns of
a predictions file): 4 bytes a row, plus one shared object per distinct value."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa


def _sort_order(values: np.ndarray) -> np.ndarray:
    """The order that sorts distinct values as :func:`evaluation.metrics.factorize` sorts keys."""
    if all(type(v) is str for v in values):
        return np.argsort(values, kind="stable")
    return np.argsort(values.astype(str), kind="stable")


class Categorical:
    """Integer ``codes`` (int32) into sorted distinct ``categories`` (an object array) with
    ``categories[codes]`` the column; every category occurs in the column."""

    __slots__ = ("codes", "categories", "_values")

    def __init__(self, codes: Any, categories: Any, *, ordered: bool = False) -> None:
        """Codes into distinct ``categories`` (unused ones allowed; ``ordered``: already sorted),
        kept sorted and compacted."""
        codes = np.asarray(codes)
        categories = np.asarray(categories, dtype=object).reshape(-1)
        k = len(categories)
        used = np.bincount(codes, minlength=k) > 0 if k else np.zeros(0, dtype=bool)
        if not used.all():
            keep = np.flatnonzero(used)
            categories = categories[keep]
            new = np.zeros(k, dtype=np.int64)
            new[keep] = np.arange(len(keep))
            codes = new[codes]
        order = np.arange(len(categories)) if ordered else _sort_order(categories)
        if (order != np.arange(len(order))).any():
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order))
            codes, categories = rank[codes], categories[order]
        self.codes = codes.astype(np.int32, copy=False)
        self.categories = categories
        self._values: np.ndarray | None = None

    @classmethod
    def from_values(cls, values: Any) -> Categorical:
        """The categorical of a sequence of strings (any hashable values are kept as they are)."""
        if isinstance(values, Categorical):
            return values
        try:
            arr = pa.array(values, type=pa.string())
        except (pa.ArrowException, TypeError, ValueError):
            arr = None
        if arr is not None and arr.null_count == 0:
            encoded = arr.dictionary_encode()
            return cls(
                encoded.indices.to_numpy(zero_copy_only=False),
                encoded.dictionary.to_numpy(zero_copy_only=False),
            )
        table: dict[Any, int] = {}
        items = np.asarray(values, dtype=object).reshape(-1)
        codes = np.fromiter(
            (table.setdefault(v, len(table)) for v in items), dtype=np.int64, count=len(items)
        )
        categories = np.empty(len(table), dtype=object)
        categories[:] = list(table)
        return cls(codes, categories)

    def __len__(self) -> int:
        return len(self.codes)

    @property
    def values(self) -> np.ndarray:
        """The column as a read-only object array (cached); its cells share the categories'
        objects, so it costs 8 bytes a row."""
        if self._values is None:
            values = self.categories[self.codes]
            values.flags.writeable = False
            self._values = values
        return self._values

    def take(self, rows: np.ndarray) -> Categorical:
        """The rows selected by a boolean mask or index array."""
        return Categorical(self.codes[rows], self.categories, ordered=True)

    @staticmethod
    def concat(parts: Sequence[Categorical]) -> Categorical:
        """The rows of ``parts`` one after the other."""
        table: dict[Any, int] = {}
        maps = [
            np.array([table.setdefault(c, len(table)) for c in p.categories], dtype=np.int64)
            for p in parts
        ]
        categories = np.empty(len(table), dtype=object)
        categories[:] = list(table)
        codes = [m[p.codes] for m, p in zip(maps, parts, strict=True)]
        return Categorical(np.concatenate(codes) if codes else np.zeros(0, np.int64), categories)

    def to_arrow(self) -> pa.DictionaryArray:
        """The column as an Arrow dictionary array (of strings; other values as ``str``)."""
        names = [c if type(c) is str else ("" if c is None else str(c)) for c in self.categories]
        return pa.DictionaryArray.from_arrays(
            pa.array(self.codes, type=pa.int32()), pa.array(names, type=pa.string())
        )
