"""Join an attributes CSV (per video or per subject) into a dataset listing.

The attributes are the groups fairness is measured on (gender, beard, eyeglasses, bangs, makeup,
long hair, curly hair, occlusion, as annotated in CAAD-PAD, paper 001 Section III-B).
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path

from fairforensics.preprocessing.config import AttributesConfig
from fairforensics.preprocessing.datasets.base import Listing, SourceItem

logger = logging.getLogger(__name__)


def read_attributes_csv(
    path: str | Path, key: str, columns: list[str] | None = None
) -> dict[str, dict[str, str]]:
    """``{key value: {column: value}}`` from a CSV with a header; empty cells are left out."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: attributes CSV not found")
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        if key not in header:
            raise ValueError(f"{path}: no key column {key!r}; columns: {header}")
        wanted = list(columns) if columns else [c for c in header if c != key]
        unknown = [c for c in wanted if c not in header]
        if unknown:
            raise ValueError(
                f"{path}: unknown attribute columns {', '.join(unknown)}; its columns: "
                f"{', '.join(header)}"
            )
        table: dict[str, dict[str, str]] = {}
        for n, row in enumerate(reader, start=2):
            k = (row.get(key) or "").strip()
            if not k:
                logger.warning("%s line %d: empty %r; row ignored", path, n, key)
                continue
            if k in table:
                raise ValueError(f"{path} line {n}: duplicate {key} {k!r}")
            table[k] = {c: str(row[c]).strip() for c in wanted if (row.get(c) or "").strip()}
    return table


def _candidates(item: SourceItem, join: str) -> list[str]:
    if join == "identity":
        return [item.identity] if item.identity else []
    return [f"{item.method}/{item.id}", item.id, item.rel, item.path.name, item.path.stem]


def join_attributes(listing: Listing, cfg: AttributesConfig) -> int:
    """Add each item's CSV row to its ``attributes``; items without a row are recorded. Returns hits."""
    table = read_attributes_csv(cfg.csv, cfg.key, cfg.columns or None)
    hits = 0
    for item in listing.items:
        row = next((table[k] for k in _candidates(item, cfg.join) if k in table), None)
        if row is None:
            listing.problem(item.path, f"no row in {cfg.csv} for this video; no attributes")
            continue
        item.attributes.update(row)
        hits += 1
    logger.info("attributes: %d of %d videos matched %s", hits, len(listing.items), cfg.csv)
    return hits
