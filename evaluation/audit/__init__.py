"""The shortcut audit (issue 38, item 5): can a dataset's labels be predicted from the files alone
(resolution, codec, bit rate, JPEG quality, duration, face size, blur), without looking at a face?

:mod:`.features` reads each video's or image's metadata, :mod:`.shortcut` trains a small
cross-validated classifier on it and reports AUCs and a permutation p, :mod:`.report` writes
``audit.json``, ``audit.md``, the figure and the out-of-fold scores as a predictions file (the
leaderboard's ``metadata`` sanity baseline). :func:`audit_dataset` does all three;
``fairforensics audit`` is its command.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fairforensics.evaluation.audit.features import FEATURES, FeatureTable, read_features
from fairforensics.evaluation.audit.report import PREDICTIONS, write_audit
from fairforensics.evaluation.audit.shortcut import WARN_AUC, AuditError, AuditResult, run_audit
from fairforensics.preprocessing.index import DatasetIndex

log = logging.getLogger(__name__)

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
    source_root: str | Path | None = None,
    splits: tuple[str, ...] = ("all",),
    faces: bool = True,
    n_splits: int = 5,
    n_estimators: int = 100,
    n_perm: int = 99,
    seed: int = 0,
    progress: bool = False,
) -> dict[str, Any]:
    """Audit the videos of ``splits`` of ``index`` and write the outputs under ``out``; returns
    what ``audit.json`` holds. Without ``source_root`` the index's recorded source root (its
    ``source_root``, where the index was made from) is used; without either, the file metadata
    is not read and the audit says so first."""
    videos = index.split(*splits)
    if not videos:
        raise AuditError(f"{index.dataset}: no videos in split(s) {', '.join(splits)}")
    root, origin = source_root, "--source-root"
    if root is None and getattr(index, "source_root", None):
        # recorded by preprocessing; a relative one is relative to the index, as its paths
        root, origin = index.resolve(index.source_root), "the index"
    no_root = "no --source-root given and none recorded in the index"
    if root is not None and not Path(root).is_dir():
        no_root = f"the source root {root} (from {origin}) is not a folder; give --source-root"
        log.warning("audit: %s: the file metadata is not read", no_root)
        root = None
    table = read_features(index, videos, root, faces=faces, progress=progress, no_root=no_root)
    result = run_audit(
        table, n_splits=n_splits, n_estimators=n_estimators, n_perm=n_perm, seed=seed
    )
    return write_audit(
        result,
        out,
        dataset=index.dataset,
        source_root=None if root is None else str(root),
        source_root_from=None if root is None else origin,
    )
