"""A user's own data: ``real/`` and ``fake/`` folders, or a CSV of path,label,split.

Folders (the split folders are optional; without them the split is derived)::

    <root>/[<split>/]real/**.mp4|jpg...         label 0 ("bonafide" also accepted)
    <root>/[<split>/]fake/[<method>/]**         label 1 ("attack" also accepted)

CSV (``dataset.options.csv``, relative to the root or absolute): columns ``path`` (relative to
the root; an absolute path or one with ``..`` is a logged problem and the row is left out),
``label`` (0/1, real/fake, bonafide/attack) and optionally ``split``, ``method``, ``identity``,
``id``; every other column becomes an attribute. A row whose file is not on disk counts as a
listed video that is missing (``Listing.missing``), as in every layout with lists: more than
``max_failed_share`` of them stops the run before processing, unless ``allow_partial``.

Derived splits are identity-disjoint when identities are known (the CSV's ``identity``), else each
file is its own group: a fake whose file name contains a real video's name (FF++'s
``004_982`` and ``004``) may then land in another split than that real video, which is a warning
(:func:`warn_split_names`).
"""

from __future__ import annotations

import csv
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from fairforensics.preprocessing.datasets.base import (
    DERIVED,
    DatasetLayoutError,
    Listing,
    SourceItem,
    derive_splits,
    files_under,
    register_dataset,
    rel_of,
)
from fairforensics.preprocessing.video import IMAGE_SUFFIXES, VIDEO_SUFFIXES

log = logging.getLogger(__name__)
LABEL_NAMES = {"0": 0, "real": 0, "bonafide": 0, "bona_fide": 0, "1": 1, "fake": 1, "attack": 1}
SPLITS = ("train", "val", "test")
_RESERVED = {"path", "label", "split", "method", "identity", "id"}
#: what separates the parts of a file name (``004_982``, ``id0-id1``)
_NAME_PARTS = re.compile(r"[_\-]+")


@dataclass
class GenericOptions:
    task: Literal["deepfake", "pad"] = "deepfake"
    csv: str | None = None  # relative to the root, or absolute
    ratios: dict[str, float] = field(
        default_factory=lambda: {"train": 0.8, "val": 0.1, "test": 0.1}
    )
    seed: int = 0


def _item_id(rel: str) -> str:
    return rel.replace("/", "__")


@register_dataset("generic", GenericOptions)
def list_generic(root: Path, opts: GenericOptions) -> Listing:
    """Items from the folder layout or the CSV; derived splits are noted in ``split_info``."""
    listing = Listing(task=opts.task, items=[])
    if opts.csv:
        _from_csv(root, opts, listing)
    else:
        _from_folders(root, opts, listing)
    if not listing.items:
        if opts.csv:
            raise DatasetLayoutError(f"{root}: the CSV {opts.csv} lists no usable video or image")
        raise DatasetLayoutError(
            f"{root}: no videos or images found; the generic layout expects them in real/ and "
            "fake/ folders (optionally inside train/, val/, test/), or a CSV given as "
            "dataset.options.csv (columns path,label[,split]; paths relative to dataset.root)"
        )
    return listing


def _derived(opts: GenericOptions) -> str:
    how = ", ".join(f"{k} {v:g}" for k, v in opts.ratios.items())
    return f"derived: identity-disjoint (else by file) ({how}, seed {opts.seed})"


def _from_folders(root: Path, opts: GenericOptions, listing: Listing) -> None:
    split_roots = [(s, root / s) for s in SPLITS if (root / s).is_dir()]
    if split_roots:
        listing.split_info = {s: "folders" for s, _ in split_roots}
    else:
        split_roots = [(None, root)]
        listing.split_info = dict.fromkeys(SPLITS, _derived(opts))
    suffixes = VIDEO_SUFFIXES | IMAGE_SUFFIXES
    for split, base in split_roots:
        for folder in sorted(p for p in base.iterdir() if p.is_dir()):
            label = LABEL_NAMES.get(folder.name.lower())
            if label is None or folder.name.isdigit():
                continue
            for path in files_under(folder, suffixes):
                inner = path.relative_to(folder).parts
                method = (
                    inner[0]
                    if label == 1 and len(inner) > 1
                    else ("real" if label == 0 else folder.name)
                )
                rel = rel_of(path, root)
                listing.items.append(
                    SourceItem(
                        id=_item_id(rel),
                        label=label,
                        method=method,
                        split=split or DERIVED,
                        path=path,
                        rel=rel,
                    )
                )
    by_file = [item for item in listing.items if item.split == DERIVED]
    derive_splits(listing.items, opts.ratios, opts.seed, group=lambda item: item.rel)
    warn_split_names(by_file)


def _from_csv(root: Path, opts: GenericOptions, listing: Listing) -> None:
    path = Path(opts.csv)
    path = path if path.is_absolute() else root / path
    if not path.is_file():
        raise DatasetLayoutError(f"{path}: generic dataset CSV not found")
    derived = False
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        for col in ("path", "label"):
            if col not in header:
                raise DatasetLayoutError(f"{path}: missing column {col!r}; columns: {header}")
        for n, row in enumerate(reader, start=2):
            where = f"{path} line {n}"
            label = LABEL_NAMES.get((row["label"] or "").strip().lower())
            rel_file = (row["path"] or "").strip().replace("\\", "/")
            if label is None:
                listing.problem(where, f"bad label {row['label']!r}; expected 0/1, real/fake")
                continue
            if not rel_file or PurePosixPath(rel_file).is_absolute() or ".." in rel_file.split("/"):
                listing.problem(where, f"path {rel_file!r} must be relative to {root}")
                continue
            split = (row.get("split") or "").strip()
            identity = (row.get("identity") or "").strip() or None
            rel = str(PurePosixPath(rel_file).with_suffix(""))
            if split and split not in SPLITS:
                listing.problem(where, f"bad split {split!r}; expected one of {SPLITS}")
                continue
            if not split:
                derived = True
                split = DERIVED
            if not (root / rel_file).is_file():  # counted like every layout's listed files
                listing.missing_video(root / rel_file, f"listed in {path} line {n}, not on disk")
                continue
            method = (row.get("method") or "").strip() or ("real" if label == 0 else "fake")
            attrs = {
                k: str(v).strip()
                for k, v in row.items()
                if k not in _RESERVED and v and str(v).strip()
            }
            listing.items.append(
                SourceItem(
                    id=(row.get("id") or "").strip() or _item_id(rel),
                    label=label,
                    method=method,
                    split=split,
                    path=root / rel_file,
                    rel=rel,
                    identity=identity,
                    attributes=attrs,
                )
            )
    by_file = [item for item in listing.items if item.split == DERIVED and not item.identity]
    derive_splits(listing.items, opts.ratios, opts.seed, group=lambda it: it.identity or it.rel)
    warn_split_names(by_file)
    listing.split_info = dict.fromkeys(
        SPLITS, _derived(opts) + " for rows without a split" if derived else "csv"
    )


def warn_split_names(items: list[SourceItem]) -> int:
    """Warn when ``items`` (split derived per file, no identity known) put a fake in another split
    than a real video whose name is one of the parts of the fake's name (``fake/004_982.mp4`` and
    ``real/004.mp4``): if they show one person, the splits share identities. Returns how many
    such fakes there are."""
    reals = {PurePosixPath(item.rel).name: item for item in items if item.label == 0}
    crossed = []
    for fake in (item for item in items if item.label == 1):
        for part in _NAME_PARTS.split(PurePosixPath(fake.rel).name):
            real = reals.get(part)
            if real is not None and real.split != fake.split:
                crossed.append((real, fake))
                break
    if crossed:
        real, fake = crossed[0]
        log.warning(
            "generic dataset: splits are derived per file (no identity is known), and %d fake(s) "
            "are in another split than a real video whose name is part of theirs, e.g. %s (%s) "
            "and %s (%s); if such a pair shows one person, the splits share identities: give "
            "each row an identity in a CSV (dataset.options.csv, column identity) or put the "
            "files in train/, val/ and test/ folders",
            len(crossed), real.path, real.split, fake.path, fake.split,
        )  # fmt: skip
    return len(crossed)
