"""The one dataset-name resolver: a name under the data root, or a path to an index file.

Every command and API (trainer, prediction, testing, fairness protocols, metamorphic testing)
resolves ``--train-data`` / ``--test-data`` / ``--dataset`` values here, so a name that trains
also tests. ``<data_root>/<name>.json`` may be our schema-v1 index or a DeepfakeBench JSON file
(imported on the fly, its frame paths read from ``data_root``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from fairforensics.preprocessing.datasets.deepfakebench import read_any_index
from fairforensics.preprocessing.index import DatasetIndex, DatasetIndexError, check_complete

log = logging.getLogger(__name__)


def resolve_index_path(name: str | Path, data_root: str | Path) -> Path:
    """``<data_root>/<name>.json``; an existing ``.json`` path is kept (errors name the file)."""
    path = Path(name)
    if path.suffix == ".json" and path.is_file():
        return path
    resolved = Path(data_root) / f"{name}.json"
    if not resolved.is_file():
        raise DatasetIndexError(
            f"{resolved}: dataset index not found (dataset {str(name)!r}; set the data root, "
            "or pass a .json path)"
        )
    return resolved


def resolve_index(name: str | Path, data_root: str | Path) -> DatasetIndex:
    """The index that ``name`` resolves to, ours or DeepfakeBench's."""
    return read_any_index(resolve_index_path(name, data_root), data_root)


def resolve_datasets(data_root: str | Path, names: Sequence[str]) -> list[DatasetIndex]:
    """:func:`resolve_index` for every name."""
    return [resolve_index(name, data_root) for name in names]


def check_datasets_complete(
    names: Iterable[str | Path], data_root: str | Path, *, allow_partial: bool = False
) -> None:
    """:func:`~fairforensics.preprocessing.index.check_complete` on the index of every name that
    resolves (one that does not is left to the command's own error): an index of an interrupted
    preprocessing run stops the command, naming it, unless ``allow_partial`` (then a warning
    names it)."""
    for name in dict.fromkeys(names):
        try:
            path = resolve_index_path(name, data_root)
        except DatasetIndexError:
            continue
        lacks = check_complete(path, allow_partial=allow_partial)
        if lacks:
            log.warning("%s is incomplete (%s): used as --allow-partial says", path, lacks)
