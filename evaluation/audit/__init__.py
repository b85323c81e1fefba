"""The shortcut audit (issue 38, item 5): can a dataset's labels be predicted from the files alone
(resolution, codec, bit rate, JPEG quality, duration, face size, blur), without looking at a face?

:mod:`.features` reads each video's or image's metadata, :mod:`.shortcut` trains a small
cross-validated classifier on it and reports AUCs with intervals, :mod:`.report` writes
``audit.json``, ``audit.md``, the figure and the out-of-fold scores as a predictions file (the
leaderboard's ``metadata`` sanity baseline). :func:`audit_dataset` does all three;
``fairforensics audit`` is its command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairforensics.evaluation.audit.features import FEATURES, FeatureTable, read_features
from fairforensics.evaluation.audit.report import PREDICTIONS, write_audit
from fairforensics.evaluation.audit.shortcut import WARN_AUC, AuditError, AuditResult, run_audit
from fairforensics.preprocessing.index import DatasetIndex

__all__ = [
    "FEATURES",
    "PREDICTIONS",
    "WARN_AUC",
    "AuditError",
    "AuditResult",
    "FeatureTable",
    "audit_dataset",
    "read_features",
    "run_audit",
    "write_audit",
]


def audit_dataset(
    index: DatasetIndex,
    out: str | Path,
    *,
    source_root: str | Path | None,
    splits: tuple[str, ...] = ("all",),
    faces: bool = True,
    n_splits: int = 5,
    n_estimators: int = 100,
    n_boot: int = 1000,
    seed: int = 0,
    progress: bool = False,
) -> dict[str, Any]:
    """Audit the videos of ``splits`` of ``index`` and write the outputs under ``out``; returns
    what ``audit.json`` holds."""
    videos = index.split(*splits)
    if not videos:
        raise AuditError(f"{index.dataset}: no videos in split(s) {', '.join(splits)}")
    table = read_features(index, videos, source_root, faces=faces, progress=progress)
    result = run_audit(
        table, n_splits=n_splits, n_estimators=n_estimators, n_boot=n_boot, seed=seed
    )
    root = None if source_root is None else str(source_root)
    return write_audit(result, out, dataset=index.dataset, source_root=root)
