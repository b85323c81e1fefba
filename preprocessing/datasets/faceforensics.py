"""FaceForensics++ (Rossler et al. 2019) and DeepFakeDetection (DFD), official layouts.

FF++::

    original_sequences/youtube/<comp>/videos/000.mp4
    manipulated_sequences/<method>/<comp>/videos/000_003.mp4      (fake of target 000)
    manipulated_sequences/<method>/masks/videos/000_003.mp4       (not for FaceShifter)
    splits/{train,val,test}.json     lists of [a, b] id pairs (the official split files)

A pair [a, b] puts the real videos a and b and the fakes a_b and b_a in that split
(DeepfakeBench, Appendix A.3 "FaceForensics++").

DFD (no official split; derived identity-disjoint by actor, see ``DFDOptions``)::

    original_sequences/actors/<comp>/videos/01__walking_down_street_outside_angry.mp4
    manipulated_sequences/DeepFakeDetection/<comp>/videos/01_02__walking__ABCDEFGH.mp4
    manipulated_sequences/DeepFakeDetection/masks/videos/01_02__walking__ABCDEFGH.mp4
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

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


@dataclass
class FFOptions:
    compression: Literal["raw", "c23", "c40"] = "c23"
    methods: list[str] = field(default_factory=lambda: list(FF_METHODS))
    splits_dir: str = "splits"  # relative to the dataset root, or absolute
    masks: bool = True
    real_source: str = "youtube"


def _read_pairs(path: Path) -> list[tuple[str, str]]:
    data = read_json_file(path, "FaceForensics++ split file")
    if not isinstance(data, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in data
    ):
        raise DatasetLayoutError(f"{path}: expected a list of [id, id] pairs")
    return [(a, b) for a, b in data]


@register_dataset("faceforensics", FFOptions)
def list_faceforensics(root: Path, opts: FFOptions) -> Listing:
    """Real and fake videos of FF++ with the official train/val/test split."""
    splits_dir = Path(opts.splits_dir)
    splits_dir = splits_dir if splits_dir.is_absolute() else root / splits_dir
    split_of: dict[str, str] = {}
    for split in ("train", "val", "test"):
        for a, b in _read_pairs(splits_dir / f"{split}.json"):
            for vid in (a, b, f"{a}_{b}", f"{b}_{a}"):
                if vid in split_of and split_of[vid] != split:
                    raise DatasetLayoutError(
                        f"{splits_dir}: {vid} is in both {split_of[vid]} and {split}"
                    )
                split_of[vid] = split
    listing = Listing(task="deepfake", items=[], methods=["real", *opts.methods])
    listing.split_info = {s: "official" for s in ("train", "val", "test")}
    real_dir = root / "original_sequences" / opts.real_source / opts.compression / "videos"
    if not real_dir.is_dir():
        raise DatasetLayoutError(f"{real_dir}: FaceForensics++ real videos folder not found")
    folders = [("real", 0, real_dir, None)]
    for method in opts.methods:
        base = root / "manipulated_sequences" / method
        vdir = base / opts.compression / "videos"
        if not vdir.is_dir():
            raise DatasetLayoutError(f"{vdir}: videos folder of method {method!r} not found")
        mdir = base / "masks" / "videos" if opts.masks else None
        folders.append((method, 1, vdir, mdir))
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
                elif mdir.is_dir():
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
    return listing


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
    for d in (real_dir, fake_dir):
        if not d.is_dir():
            raise DatasetLayoutError(f"{d}: DFD videos folder not found")
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
