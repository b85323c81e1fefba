"""What produced a predictions file of ``scripts/test.py``, so an output folder is never reused
stale (issue 14, item 2).

Next to ``<out>/predictions/<set>.csv`` lies ``<set>.provenance.json``: the detector name, the
weights file and its SHA-256, the model config, the index file and its SHA-256, and the test
settings that change predictions (split, frame_num, amp). :func:`evaluation.testing.run_test`
reuses a predictions file only when its provenance equals the current one and predicts again
otherwise (logging which keys changed); a file without provenance is never reused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fairforensics.evaluation.settings import TestConfig
from fairforensics.preprocessing.files import jsonable, write_json

#: Test settings that change the predictions themselves (the metrics are recomputed anyway).
PREDICTION_SETTINGS = ("split", "frame_num", "amp")


def file_sha256(path: str | Path) -> str:
    """SHA-256 hex digest of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def provenance_path(predictions_file: str | Path) -> Path:
    """``<set>.provenance.json`` next to ``<set>.csv``."""
    p = Path(predictions_file)
    return p.with_name(p.stem + ".provenance.json")


def prediction_provenance(
    producer: Mapping[str, Any], index_path: str | Path, cfg: TestConfig
) -> dict[str, Any]:
    """The provenance of one test set's predictions: ``producer`` (detector, weights file and
    hash, model config), the index file and its hash, and :data:`PREDICTION_SETTINGS`."""
    index = Path(index_path)
    return {
        **producer,
        "index": str(index.resolve()),
        "index_sha256": file_sha256(index) if index.is_file() else None,
        "settings": {key: getattr(cfg, key) for key in PREDICTION_SETTINGS},
    }


def changed_keys(predictions_file: str | Path, current: Mapping[str, Any]) -> list[str]:
    """Keys of ``current`` that differ from the recorded provenance (``["provenance"]`` when
    there is none or it is unreadable); empty when the predictions file may be reused."""
    path = provenance_path(predictions_file)
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ["provenance"]
    if not isinstance(recorded, dict):
        return ["provenance"]
    current = json.loads(json.dumps(jsonable(dict(current)), default=str))  # as recorded
    keys = set(recorded) | set(current)
    return sorted(k for k in keys if recorded.get(k) != current.get(k))


def write_provenance(predictions_file: str | Path, provenance: Mapping[str, Any]) -> None:
    """Record ``provenance`` next to ``predictions_file`` (atomically)."""
    write_json(provenance_path(predictions_file), dict(provenance))
