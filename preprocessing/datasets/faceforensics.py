"""FaceForensics++ (Rossler et al. 2019) and DeepFakeDetection (DFD), official layouts.

FF++::

    original_sequences/youtube/<comp>/videos/000.mp4
    manipulated_sequences/<method>/<comp>/videos/000_003.mp4      (fake of target 000)
    manipulated_sequences/<method>/masks/videos/000_003.mp4       (not for FaceShifter)
    splits/{train,val,test}.json     lists of [a, b] id pairs (the official split files)

A pair [a, b] puts the real videos a and b and the fakes a_b and b_a in that split
(DeepfakeBench, Appendix A.3 "FaceForensics++"). The official split files ship with this package
(``faceforensics_splits/``, MIT, from the FaceForensics repository) and are used when the
dataset folder has none.

DFD (no official split; derived identity-disjoint by actor, see ``DFDOptions``)::

    original_sequences/actors/<comp>/videos/01__walking_down_street_outside_angry.mp4
    manipulated_sequences/DeepFakeDetection/<comp>/videos/01_02__walking__ABCDEFGH.mp4
    manipulated_sequences/DeepFakeDetection/masks/videos/01_02__walking__ABCDEFGH.mp4
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fairforensics.configs.loader import join_problems
from fairforensics.preprocessing.datasets.base import (
    DERIVED,
    DatasetLayoutError,
    Listing,
    SourceItem,
    derive_splits,
    files_under,
    read_json_file,
    register_dataset,
    rel_of,
)
from fairforensics.preprocessing.video import VIDEO_SUFFIXES

FF_METHODS = ["Deepfakes", "Face2Face", "FaceSwap", "NeuralTextures", "FaceShifter"]
#: the official split files, shipped with the package (MIT; see the folder's README and LICENSE)
OFFICIAL_SPLITS = Path(__file__).resolve().parent / "faceforensics_splits"
SPLITS = ("train", "val", "test")
log = logging.getLogger(__name__)


@dataclass
class FFOptions:
    compression: Literal["raw", "c23", "c40"] = "c23"
    methods: list[str] = field(default_factory=lambda: list(FF_METHODS))
    # relative to the dataset root, or absolute; the default "splits" falls back to the official
    # files shipped with the package when the dataset folder has none
    splits_dir: str = "splits"
    masks: bool = True
    real_source: str = "youtube"


def _read_pairs(path: Path) -> list[tuple[str, str]]:
    data = read_json_file(path, "FaceForensics++ split file")
    if not isinstance(data, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in data
    ):
        raise DatasetLayoutError(f"{path}: expected a list of [id, id] pairs")
    return [(a, b) for a, b in data]


def _splits_folder(root: Path, opts: FFOptions) -> tuple[Path, str]:
    """The folder of the split files and how the splits were made (for ``split_info``)."""
    splits_dir = Path(opts.splits_dir)
    splits_dir = splits_dir if splits_dir.is_absolute() else root / splits_dir
    present = [s for s in SPLITS if (splits_dir / f"{s}.json").is_file()]
    if len(present) == len(SPLITS):
        return splits_dir, "official"
    missing = ", ".join(f"{s}.json" for s in SPLITS if s not in present)
    if present or opts.splits_dir != FFOptions.splits_dir:
        raise DatasetLayoutError(
            f"{splits_dir}: FaceForensics++ split file(s) {missing} not found; the official "
            "files ship with fairforensics and are used when dataset.options.splits_dir is "
            "left at 'splits' and the dataset folder has no split files"
        )
    log.info("%s: no split files; the official ones shipped with fairforensics are used", root)
    return OFFICIAL_SPLITS, "official (the FaceForensics++ split files shipped with fairforensics)"


def _method_folders(root: Path, opts: FFOptions) -> tuple[list[tuple[str, Path]], list[str]]:
    """``(method, videos folder)`` of every method whose folder is there, and the problem of a
    partial download (naming ``dataset.options.methods`` and the methods that are there)."""
    folders = [
        (m, root / "manipulated_sequences" / m / opts.compression / "videos") for m in opts.methods
    ]
    present = [(m, vdir) for m, vdir in folders if vdir.is_dir()]
    missing = [m for m, vdir in folders if not vdir.is_dir()]
    if not missing:
        return present, []
    return present, [
        f"{root / 'manipulated_sequences'}: no {opts.compression} videos folder "
        f"(<method>/{opts.compression}/videos) for {', '.join(missing)}; to preprocess only "
        "the methods downloaded, set dataset.options.methods, e.g. "
        f'--set "dataset.options.methods=[{", ".join(m for m, _ in present)}]"'
    ]


def _masks_folders(
    listing: Listing, root: Path, opts: FFOptions, methods: list[str]
) -> tuple[dict[str, Path | None], list[str]]:
    """The masks folder of each of ``methods`` (``masks: true``), and the problem when none has
    one; a method without one while others have theirs is a warning in the listing's problems."""
    if not opts.masks:
        return dict.fromkeys(methods), []
    folders = {m: root / "manipulated_sequences" / m / "masks" / "videos" for m in methods}
    absent = [m for m, mdir in folders.items() if not mdir.is_dir()]
    if absent and len(absent) == len(folders):
        return dict.fromkeys(methods), [_masks_missing(root / "manipulated_sequences", absent)]
    for method in absent:
        listing.problem(
            folders[method],
            f"masks: true but this folder is missing; {method}'s fakes get no masks (download "
            "them with the FaceForensics++ script's -t masks, or set dataset.options.masks: false)",
        )
        folders[method] = None
    return folders, []


def _masks_missing(base: Path, methods: list[str]) -> str:
    """The error for ``masks: true`` when no method has a ``masks/videos`` folder."""
    return (
        f"{base}: masks: true but no masks folder (<method>/masks/videos) for "
        f"{', '.join(methods)}; download them (the FaceForensics++ download script's -t masks) "
        "or preprocess without masks: --set dataset.options.masks=false"
    )


@register_dataset("faceforensics", FFOptions)
def list_faceforensics(root: Path, opts: FFOptions) -> Listing:
    """Real and fake videos of FF++ with the official train/val/test split."""
    splits_dir, how = _splits_folder(root, opts)
    split_of: dict[str, str] = {}
    for split in SPLITS:
        for a, b in _read_pairs(splits_dir / f"{split}.json"):
            for vid in (a, b, f"{a}_{b}", f"{b}_{a}"):
                if vid in split_of and split_of[vid] != split:
                    raise DatasetLayoutError(
                        f"{splits_dir}: {vid} is in both {split_of[vid]} and {split}"
                    )
                split_of[vid] = split
    listing = Listing(task="deepfake", items=[], methods=["real", *opts.methods])
    listing.split_info = dict.fromkeys(SPLITS, how)
    real_dir = root / "original_sequences" / opts.real_source / opts.compression / "videos"
    problems = []  # every problem of the layout at once, each with its fix
    if not real_dir.is_dir():
        problems.append(
            f"{real_dir}: FaceForensics++ real videos folder not found; check dataset.root, "
            f"dataset.options.compression ({opts.compression}) and dataset.options.real_source "
            f"({opts.real_source})"
        )
    videos, missing = _method_folders(root, opts)
    masks, no_masks = _masks_folders(listing, root, opts, [m for m, _ in videos])
    problems += missing + no_masks
    if problems:
        raise DatasetLayoutError(join_problems(problems))
    folders = [("real", 0, real_dir, None), *((m, 1, v, masks[m]) for m, v in videos)]
    for method, label, vdir, mdir in folders:
        for path in files_under(vdir, VIDEO_SUFFIXES):
            vid = path.stem
            split = split_of.get(vid)
            if split is None:
                listing.problem(path, "not in any official split file; left out")
                continue
            mask = None
            if mdir is not None:
                cand = mdir / path.name
                if cand.is_file():
                    mask = cand
                else:
                    listing.problem(path, f"no mask video {cand}; frames without masks")
            listing.items.append(
                SourceItem(
                    id=vid,
                    label=label,
                    method=method,
                    split=split,
                    path=path,
                    rel=rel_of(path, root),
                    mask=mask,
                    identity=vid.split("_")[0],
                )
            )
    _count_missing(listing, split_of, folders, splits_dir, opts.allow_partial)
    return listing


def _count_missing(
    listing: Listing,
    split_of: dict[str, str],
    folders: list[tuple[str, int, Path, Path | None]],
    splits_dir: Path,
    allow_partial: bool,
) -> None:
    """Count the videos the split files name (every source, and every fake of each method) that
    are not on disk; one problem names how many and where, with an example, and whether
    ``allow_partial`` already says that the subset is intended."""
    found = {item.key for item in listing.items}
    absent = [
        vdir / f"{vid}.mp4"
        for method, label, vdir, _ in folders
        for vid in sorted(split_of)
        if ("_" in vid) == bool(label) and (method, vid) not in found
    ]
    listing.missing = len(absent)
    listing.missing_paths = [str(p) for p in absent]
    if absent:
        intended = (
            "dataset.options.allow_partial is true, so this subset is intended: tables name "
            "the set as partial"
            if allow_partial
            else "an intended subset needs dataset.options.allow_partial: true"
        )
        listing.problem(
            absent[0].parent,
            f"{len(absent)} of {listing.videos_listed} videos named by the split files in "
            f"{splits_dir} are not on disk (e.g. {absent[0].name}); {intended}",
        )


@dataclass
class DFDOptions:
    compression: Literal["raw", "c23", "c40"] = "c23"
    ratios: dict[str, float] = field(
        default_factory=lambda: {"train": 0.7, "val": 0.15, "test": 0.15}
    )
    seed: int = 0
    masks: bool = True


@register_dataset("dfd", DFDOptions)
def list_dfd(root: Path, opts: DFDOptions) -> Listing:
    """DFD with an identity-disjoint split by actor (target actor for the fakes)."""
    if set(opts.ratios) - {"train", "val", "test"} or not all(v >= 0 for v in opts.ratios.values()):
        raise DatasetLayoutError("dfd: ratios must map train/val/test to non-negative numbers")
    real_dir = root / "original_sequences" / "actors" / opts.compression / "videos"
    fake_base = root / "manipulated_sequences" / "DeepFakeDetection"
    fake_dir = fake_base / opts.compression / "videos"
    problems = [f"{d}: DFD videos folder not found" for d in (real_dir, fake_dir) if not d.is_dir()]
    if opts.masks and not (fake_base / "masks" / "videos").is_dir():
        problems.append(_masks_missing(root / "manipulated_sequences", ["DeepFakeDetection"]))
    if problems:
        raise DatasetLayoutError(join_problems(problems))
    how = ", ".join(f"{k} {v:g}" for k, v in opts.ratios.items())
    listing = Listing(task="deepfake", items=[], methods=["real", "DeepFakeDetection"])
    listing.split_info = {
        s: f"derived: identity-disjoint by actor ({how}, seed {opts.seed})"
        for s in ("train", "val", "test")
    }
    for label, vdir in ((0, real_dir), (1, fake_dir)):
        for path in files_under(vdir, VIDEO_SUFFIXES):
            actor = path.stem.split("_")[0]
            mask = fake_base / "masks" / "videos" / path.name if label and opts.masks else None
            if mask is not None and not mask.is_file():
                listing.problem(path, f"no mask video {mask}; frames without masks")
                mask = None
            listing.items.append(
                SourceItem(
                    id=path.stem,
                    label=label,
                    method="DeepFakeDetection" if label else "real",
                    split=DERIVED,
                    path=path,
                    rel=rel_of(path, root),
                    mask=mask,
                    identity=actor,
                )
            )
    derive_splits(listing.items, opts.ratios, opts.seed)  # groups: the actor
    return listing
