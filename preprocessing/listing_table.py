"""What a dataset module lists, as a CSV and as counts, before anything is decoded
(``fairforensics preprocess --config C --list``)."""

from __future__ import annotations

import csv
import io
from collections import Counter
from pathlib import Path

from fairforensics.preprocessing.datasets import Listing
from fairforensics.preprocessing.files import atomic_write_text

COLUMNS = ("video_id", "path", "label", "method", "split")


def listing_csv(listing: Listing, root: Path) -> str:
    """One row per video or image: :data:`COLUMNS` (``path`` relative to ``root`` when it is
    below it), then every attribute any item has, sorted (empty where an item has none)."""
    attrs = sorted({k for item in listing.items for k in item.attributes})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*COLUMNS, *attrs])
    for item in sorted(listing.items, key=lambda i: (i.split, i.method, i.id)):
        path = item.path.relative_to(root) if item.path.is_relative_to(root) else item.path
        row = [item.id, path.as_posix(), item.label, item.method, item.split]
        writer.writerow([*row, *(item.attributes.get(k, "") for k in attrs)])
    return out.getvalue()


def write_listing_csv(listing: Listing, root: Path, path: str | Path) -> None:
    """:func:`listing_csv` written atomically to ``path``."""
    atomic_write_text(path, listing_csv(listing, root))


def listing_counts(listing: Listing) -> dict[str, dict[str, int]]:
    """``{split: {method: videos}}`` with the splits in train, val, test order."""
    counts = Counter((item.split, item.method) for item in listing.items)
    order = {"train": 0, "val": 1, "test": 2}
    out: dict[str, dict[str, int]] = {}
    for (split, method), n in sorted(
        counts.items(), key=lambda kv: (order.get(kv[0][0], 3), kv[0])
    ):
        out.setdefault(split, {})[method] = n
    return out
