"""The site's cache: one folder per admitted bundle, keyed by the bundle's SHA-256 and the
site's settings, holding its summary (``summary.json``: every statistic of its own rows) and its
seed-averaged predictions per test set (what the tie test of a column compares); and the ties of
each column, keyed by the bundles in it. A summary is written last, so a folder without one
(a build killed half-way) is computed again."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from fairforensics.evaluation.predictions import Predictions, read_predictions, write_predictions
from fairforensics.evaluation.results import slug
from fairforensics.preprocessing.files import atomic_write_text

SUMMARY = "summary.json"


def plain(value: Any) -> Any:
    """``value`` with numpy scalars and arrays as Python values and tuples as lists (NaN kept:
    the cache tells "undefined" from "not available")."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist"):
        return plain(value.tolist())
    return value


def digest(data: Any) -> str:
    """SHA-256 of ``data`` as canonical JSON (sorted keys)."""
    text = json.dumps(plain(data), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SummaryCache:
    """Bundle summaries and column ties under ``root/site`` (beside what else the board keeps in
    ``root``, e.g. unpacked archives) for settings whose digest is ``key``."""

    def __init__(self, root: Path, key: str) -> None:
        self.root = Path(root)
        self.key = key[:16]

    def folder(self, sha256: str) -> Path:
        """The cache folder of one bundle."""
        return self.root / "site" / "summaries" / f"{sha256}-{self.key}"

    def load(self, sha256: str) -> dict[str, Any] | None:
        """The bundle's summary, or None when it has none yet."""
        path = self.folder(sha256) / SUMMARY
        if not path.is_file():
            return None
        return json.loads(path.read_text(encoding="utf-8"))

    def store(self, sha256: str, summary: dict[str, Any]) -> None:
        """Write the bundle's summary (after its averaged predictions)."""
        text = json.dumps(plain(summary), indent=1)  # in its order: columns follow it
        atomic_write_text(self.folder(sha256) / SUMMARY, text + "\n")

    def averaged_path(self, sha256: str, test_data: str) -> Path:
        """Where the bundle's seed-averaged predictions of ``test_data`` are kept."""
        return self.folder(sha256) / "averaged" / f"{slug(test_data)}.parquet"

    def store_averaged(self, sha256: str, test_data: str, pred: Predictions) -> None:
        """Keep the seed-averaged predictions (without attributes: the tie test needs none)."""
        path = self.averaged_path(sha256, test_data)
        path.parent.mkdir(parents=True, exist_ok=True)
        bare = Predictions(pred.dataset, pred.video_id, pred.frame, pred.label, pred.score,
                           pred.method, unit=pred.unit)  # fmt: skip
        write_predictions(path, bare)

    def averaged(self, sha256: str, test_data: str) -> Predictions:
        """The bundle's seed-averaged predictions of ``test_data``."""
        return read_predictions(self.averaged_path(sha256, test_data))

    def ties(self, key: str) -> dict[str, Any] | None:
        """A column's ties (keyed by its bundles, test set and level), or None."""
        path = self.root / "site" / "ties" / f"{key}.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    def store_ties(self, key: str, ties: dict[str, Any]) -> None:
        """Keep a column's ties."""
        text = json.dumps(plain(ties), indent=1)
        atomic_write_text(self.root / "site" / "ties" / f"{key}.json", text + "\n")
