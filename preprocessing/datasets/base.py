"""What a dataset module returns, the registry of modules, and split helpers."""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, make_dataclass
from itertools import islice
from pathlib import Path, PurePosixPath
from typing import Any, get_type_hints

from fairforensics.configs.loader import build_config

logger = logging.getLogger(__name__)

SPLIT_PRECEDENCE = ("test", "val", "train")  # a video listed twice keeps the first of these


class DatasetLayoutError(ValueError):
    """The dataset folder does not have the layout its module expects (names the path)."""


@dataclass
class SourceItem:
    """One raw video or image to preprocess, with its index metadata."""

    id: str
    label: int
    method: str
    split: str
    path: Path  # the raw file
    rel: str  # output folder under <out>/<dataset>/, POSIX, no suffix
    mask: Path | None = None  # mask video of the same frames (FF++ / DFD)
    identity: str | None = None
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.method, self.id)


@dataclass
class Listing:
    """Everything a dataset module found: items, how splits were made, problems, and how many
    of the videos its own lists (split files, metadata) name are not on disk (``missing``)."""

    task: str
    items: list[SourceItem]
    split_info: dict[str, str] = field(default_factory=dict)
    methods: list[str] | None = None
    problems: list[dict[str, str]] = field(default_factory=list)  # {"path", "reason"}
    missing: int = 0  # listed videos not found; layouts without lists (folders) have none
    allow_partial: bool = False  # dataset.options.allow_partial: the missing ones are intended
    missing_paths: list[str] = field(default_factory=list)  # the missing ones (for verify)

    def problem(self, path: str | Path, reason: str) -> None:
        """Record (and log) a file the layout names but that cannot be used."""
        logger.warning("%s: %s", path, reason)
        self.problems.append({"path": str(path), "reason": reason})

    def missing_video(self, path: str | Path, reason: str) -> None:
        """Record a video the dataset's lists name but that is not on disk (counted in
        :attr:`missing`)."""
        self.missing += 1
        self.missing_paths.append(str(path))
        self.problem(path, reason)

    @property
    def videos_found(self) -> int:
        """Videos of the dataset present on disk (the items)."""
        return len(self.items)

    @property
    def videos_listed(self) -> int:
        """Videos the dataset names: those found plus the listed ones that are missing."""
        return len(self.items) + self.missing


@dataclass
class CommonOptions:
    """Options of every dataset type, beside the module's own (``dataset.options``)."""

    # the dataset's lists name videos that are not on disk, and that subset is intended: the
    # missing ones do not count as failures, and every table names the set as partial
    allow_partial: bool = False


ListFn = Callable[[Path, Any], Listing]
_REGISTRY: dict[str, tuple[ListFn, type]] = {}


def register_dataset(name: str, options: type) -> Callable[[ListFn], ListFn]:
    """Register a dataset module's listing function with its options dataclass."""

    def wrap(fn: ListFn) -> ListFn:
        if name in _REGISTRY:
            raise ValueError(f"dataset type {name!r} registered twice")
        _REGISTRY[name] = (fn, options)
        return fn

    return wrap


def list_dataset_types() -> list[str]:
    """Every registered dataset type, sorted."""
    return sorted(_REGISTRY)


def dataset_options(type_name: str, options: dict[str, Any] | None, source: str = "config") -> Any:
    """The validated options of dataset module ``type_name``: an instance of its options
    dataclass extended with :class:`CommonOptions` (``allow_partial``)."""
    if type_name not in _REGISTRY:
        raise ValueError(
            f"{source}: unknown dataset type {type_name!r}; allowed: {', '.join(list_dataset_types())}"
        )
    return build_config(
        _with_common(type_name), options or {}, source=f"{source} (dataset.options)"
    )


def _with_common(type_name: str) -> type:
    """The options dataclass of ``type_name`` with the fields of :class:`CommonOptions` added."""
    if type_name not in _WITH_COMMON:
        own = _REGISTRY[type_name][1]
        hints = get_type_hints(CommonOptions)
        extra = [(f.name, hints[f.name], field(default=f.default)) for f in fields(CommonOptions)]
        cls = make_dataclass(own.__name__, extra, bases=(own,))
        cls.__module__ = own.__module__
        _WITH_COMMON[type_name] = cls
    return _WITH_COMMON[type_name]


_WITH_COMMON: dict[str, type] = {}


def build_listing(
    type_name: str, root: str | Path, options: dict[str, Any] | None = None, source: str = "config"
) -> Listing:
    """Run the dataset module ``type_name`` on ``root`` with validated ``options``."""
    opts = dataset_options(type_name, options, source)
    root = Path(root)
    if not root.is_dir():
        raise DatasetLayoutError(f"{source}: dataset root {root} is not a directory")
    listing = _REGISTRY[type_name][0](root, opts)
    check_unique(listing)
    listing.allow_partial = opts.allow_partial
    return listing


def read_json_file(path: Path, what: str) -> Any:
    """The JSON in ``path``; a missing file or invalid JSON is a :class:`DatasetLayoutError`
    naming the file (``what``: the file's role, e.g. "DFDC-P metadata")."""
    if not path.is_file():
        raise DatasetLayoutError(f"{path}: {what} not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DatasetLayoutError(f"{path}: not valid JSON: {exc}") from None


def rel_of(path: Path, root: Path) -> str:
    """Output folder for a raw file: its path under ``root`` without the suffix, POSIX."""
    rel = PurePosixPath(path.relative_to(root).as_posix())
    return str(rel.with_suffix(""))


def stable_fraction(key: str, seed: int = 0) -> float:
    """A deterministic number in [0, 1) for ``key`` (splits that never change between runs)."""
    return (zlib.crc32(f"{seed}:{key}".encode()) & 0xFFFFFFFF) / 2**32


DERIVED = ""  # the split of an item until :func:`derive_splits` assigns it


def split_counts(n: int, ratios: dict[str, float]) -> dict[str, int]:
    """How many of ``n`` groups each split gets: ``ratios`` rounded by largest remainder.

    Every split with a non-zero ratio gets at least one group when ``n`` allows it (the
    largest split gives one up), so 13 identities at 0.8/0.1/0.1 give 11/1/1, not 13/0/0.
    """
    if any(r < 0 for r in ratios.values()) or sum(ratios.values()) <= 0:
        raise DatasetLayoutError(f"split ratios {ratios} must be >= 0 with a positive sum")
    total = sum(ratios.values())
    exact = {k: n * r / total for k, r in ratios.items()}
    counts = {k: int(v) for k, v in exact.items()}
    names = list(ratios)
    by_remainder = sorted(names, key=lambda k: (counts[k] - exact[k], names.index(k)))
    for k in by_remainder[: n - sum(counts.values())]:
        counts[k] += 1
    nonzero = [k for k in names if ratios[k] > 0]
    if n >= len(nonzero):
        for k in nonzero:
            if counts[k] == 0:
                donor = max(names, key=lambda d: (counts[d], -names.index(d)))
                counts[donor] -= 1
                counts[k] += 1
    return counts


def derive_splits(
    items: Iterable[SourceItem],
    ratios: dict[str, float],
    seed: int = 0,
    group: Callable[[SourceItem], str] = lambda item: item.identity or item.id,
) -> None:
    """Give every item whose split is :data:`DERIVED` a split, group-disjointly by ``ratios``.

    Groups (subject, real/fake pair, file) are ordered by a stable hash with ``seed`` and cut
    at the counts of :func:`split_counts`; one group never spans two splits.
    """
    todo = [item for item in items if item.split == DERIVED]
    groups = sorted({group(item) for item in todo}, key=lambda g: (stable_fraction(g, seed), g))
    ordered = iter(groups)
    split_of = {
        g: name for name, count in split_counts(len(groups), ratios).items()
        for g in islice(ordered, count)
    }  # fmt: skip
    for item in todo:
        item.split = split_of[group(item)]


def holdout_val(items: Iterable[SourceItem], fraction: float, seed: int = 0) -> int:
    """Move a group-disjoint ``fraction`` of the train groups to val (groups: identity or id)."""
    train = [item for item in items if item.split == "train"]
    for item in train:
        item.split = DERIVED
    derive_splits(train, {"train": 1.0 - fraction, "val": fraction}, seed)
    return sum(item.split == "val" for item in train)


def dedupe_by_split(items: list[SourceItem], listing: Listing) -> list[SourceItem]:
    """Keep one entry per (method, id); a video in several splits keeps test > val > train."""
    best: dict[tuple[str, str], SourceItem] = {}
    for item in items:
        other = best.get(item.key)
        if other is None:
            best[item.key] = item
            continue
        keep, drop = sorted((other, item), key=lambda x: SPLIT_PRECEDENCE.index(x.split))
        if keep.split != drop.split:
            listing.problem(
                drop.path,
                f"listed in both {keep.split} and {drop.split}; kept in {keep.split} only",
            )
        best[item.key] = keep
    return list(best.values())


def check_unique(listing: Listing) -> None:
    """Every (method, id) and every output folder must be unique."""
    keys: dict[tuple[str, str], Path] = {}
    rels: dict[str, Path] = {}
    for item in listing.items:
        if item.key in keys:
            raise DatasetLayoutError(
                f"{item.path}: duplicate video {item.key} (also {keys[item.key]})"
            )
        if item.rel in rels:
            raise DatasetLayoutError(
                f"{item.path}: output folder {item.rel!r} also used by {rels[item.rel]}"
            )
        keys[item.key] = item.path
        rels[item.rel] = item.path


def files_under(folder: Path, suffixes: Iterable[str]) -> list[Path]:
    """Files below ``folder`` whose suffix is in ``suffixes`` (case-insensitive), sorted."""
    allowed = {s.lower() for s in suffixes}
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in allowed)
