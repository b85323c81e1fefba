"""Face presentation-attack datasets of CAAD-PAD (paper 001, Table I and Section III-A).

CASIA-FASD, Replay-Attack, MSU-MFSD and OULU-NPU use their official train/test (and dev)
splits; a validation set missing from the official protocol is held out of train
subject-disjoint. HKBU-MARs and SWFFD have no official split: subject-disjoint 8:2
train/test (HKBU-MARs as in the paper), noted in ``split_info``. Label 0 is bona fide.
"""

from __future__ import annotations

import re
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
    holdout_val,
    register_dataset,
    rel_of,
)
from fairforensics.preprocessing.video import IMAGE_SUFFIXES, VIDEO_SUFFIXES


def _item(root: Path, path: Path, label: int, method: str, split: str, subject: str) -> SourceItem:
    rel = rel_of(path, root)
    return SourceItem(rel.replace("/", "__"), label, method if label else "bonafide", split, path,
                      rel, identity=subject)  # fmt: skip


def _holdout(listing: Listing, fraction: float, seed: int) -> None:
    holdout_val(listing.items, fraction, seed)
    listing.split_info["val"] = f"derived: {fraction:g} of train subjects held out (seed {seed})"


@dataclass
class HoldoutOptions:
    val_fraction: float = 0.1
    seed: int = 0


# ------------------------------------------------------------------------------ CASIA-FASD

CASIA_TYPES = {
    "1": "bonafide", "2": "bonafide", "HR_1": "bonafide",
    "3": "warped_photo", "4": "warped_photo", "HR_2": "warped_photo",
    "5": "cut_photo", "6": "cut_photo", "HR_3": "cut_photo",
    "7": "video_replay", "8": "video_replay", "HR_4": "video_replay",
}  # fmt: skip


@register_dataset("casia_fasd", HoldoutOptions)
def list_casia_fasd(root: Path, opts: HoldoutOptions) -> Listing:
    """CASIA-FASD: {train,test}_release/<subject>/<1..8|HR_1..HR_4>.avi."""
    listing = Listing(
        task="pad", items=[], methods=["bonafide", "warped_photo", "cut_photo", "video_replay"]
    )
    for folder, split in (("train_release", "train"), ("test_release", "test")):
        if not (root / folder).is_dir():
            raise DatasetLayoutError(f"{root / folder}: CASIA-FASD folder not found")
        for path in files_under(root / folder, VIDEO_SUFFIXES):
            kind = CASIA_TYPES.get(path.stem)
            if kind is None:
                listing.problem(path, "unknown CASIA-FASD video name; left out")
                continue
            subject = f"casia_{split}_{path.parent.name}"
            listing.items.append(_item(root, path, int(kind != "bonafide"), kind, split, subject))
    listing.split_info = {"train": "official", "test": "official"}
    _holdout(listing, opts.val_fraction, opts.seed)
    return listing


# ------------------------------------------------------------------------------ Replay-Attack


@dataclass
class NoOptions:
    """The dataset has no options."""


@register_dataset("replay_attack", NoOptions)
def list_replay_attack(root: Path, opts: NoOptions) -> Listing:
    """Replay-Attack: {train,devel,test}/real/*.mov and .../attack/{fixed,hand}/*.mov."""
    listing = Listing(
        task="pad", items=[], methods=["bonafide", "print", "replay_photo", "replay_video"]
    )
    for folder, split in (("train", "train"), ("devel", "val"), ("test", "test")):
        base = root / folder
        if not base.is_dir():
            raise DatasetLayoutError(f"{base}: Replay-Attack folder not found")
        for path in files_under(base, VIDEO_SUFFIXES):
            name = path.stem.lower()
            client = re.search(r"client(\d+)", name)
            if client is None or not (name.startswith("real") or name.startswith("attack")):
                listing.problem(path, "unknown Replay-Attack file name; left out")
                continue
            label = int(name.startswith("attack"))
            if "_print_" in name:
                kind = "print"
            else:
                kind = "replay_video" if "_video_" in name else "replay_photo"
            listing.items.append(_item(root, path, label, kind, split, f"replay_{client.group(1)}"))
    listing.split_info = {"train": "official", "val": "official (devel)", "test": "official"}
    return listing


# ------------------------------------------------------------------------------ MSU-MFSD


@register_dataset("msu_mfsd", HoldoutOptions)
def list_msu_mfsd(root: Path, opts: HoldoutOptions) -> Listing:
    """MSU-MFSD: scene01/{real,attack}/*; train_sub_list.txt / test_sub_list.txt of subject ids."""
    subjects: dict[str, str] = {}
    for split in ("train", "test"):
        path = root / f"{split}_sub_list.txt"
        if not path.is_file():
            raise DatasetLayoutError(f"{path}: MSU-MFSD subject list not found")
        for token in path.read_text(encoding="utf-8").split():
            subjects[f"{int(token):03d}"] = split
    listing = Listing(task="pad", items=[], methods=["bonafide", "printed_photo", "replay_video"])
    for path in files_under(root / "scene01", VIDEO_SUFFIXES):
        name = path.stem.lower()
        client = re.search(r"client(\d+)", name)
        if client is None:
            listing.problem(path, "no client id in the MSU-MFSD file name; left out")
            continue
        subject = f"{int(client.group(1)):03d}"
        split = subjects.get(subject)
        if split is None:
            listing.problem(path, f"subject {subject} in neither subject list; left out")
            continue
        label = int(name.startswith("attack"))
        kind = "printed_photo" if "printed_photo" in name else "replay_video"
        listing.items.append(_item(root, path, label, kind, split, f"msu_{subject}"))
    listing.split_info = {"train": "official", "test": "official"}
    _holdout(listing, opts.val_fraction, opts.seed)
    return listing


# ------------------------------------------------------------------------------ OULU-NPU

OULU_TYPES = {"1": "bonafide", "2": "print", "3": "print", "4": "replay", "5": "replay"}


@dataclass
class OuluOptions:
    protocol: Literal["1", "2", "3", "4"] | None = None  # None: every file, folder splits
    fold: int = 1  # protocols 3 and 4 have six folds


@register_dataset("oulu_npu", OuluOptions)
def list_oulu_npu(root: Path, opts: OuluOptions) -> Listing:
    """OULU-NPU: {Train,Dev,Test}_files/<phone>_<session>_<user>_<type>.avi and Protocols/."""
    listing = Listing(task="pad", items=[], methods=["bonafide", "print", "replay"])
    folder_split = {"Train_files": "train", "Dev_files": "val", "Test_files": "test"}
    files: dict[str, tuple[Path, str]] = {}
    for folder, split in folder_split.items():
        for path in files_under(root / folder, VIDEO_SUFFIXES):
            files[path.stem] = (path, split)
    if not files:
        raise DatasetLayoutError(f"{root}: no OULU-NPU videos in {sorted(folder_split)}")
    wanted: dict[str, str] | None = None
    if opts.protocol is not None:
        pdir = root / "Protocols" / f"Protocol_{opts.protocol}"
        suffix = f"_{opts.fold}" if opts.protocol in ("3", "4") else ""
        wanted = {}
        for name, split in (("Train", "train"), ("Dev", "val"), ("Test", "test")):
            path = pdir / f"{name}{suffix}.txt"
            if not path.is_file():
                raise DatasetLayoutError(f"{path}: OULU-NPU protocol file not found")
            for line in path.read_text(encoding="utf-8").split():
                wanted[line.split(",")[-1].strip()] = split
    for stem, (path, split) in sorted(files.items()):
        parts = stem.split("_")
        if len(parts) != 4 or parts[3] not in OULU_TYPES:
            listing.problem(path, "not an OULU-NPU file name <phone>_<session>_<user>_<type>")
            continue
        if wanted is not None:
            if stem not in wanted:
                continue
            split = wanted[stem]
        kind = OULU_TYPES[parts[3]]
        item = _item(root, path, int(kind != "bonafide"), kind, split, f"oulu_{parts[2]}")
        item.attributes = {"phone": parts[0], "session": parts[1]}
        listing.items.append(item)
    if wanted is not None:
        for stem in sorted(set(wanted) - set(files)):
            listing.missing_video(stem, f"in protocol {opts.protocol} but no video found")
    how = f"official protocol {opts.protocol}" + (
        f" fold {opts.fold}" if opts.protocol in ("3", "4") else ""
    )
    listing.split_info = dict.fromkeys(
        ("train", "val", "test"), how if opts.protocol else "official folders"
    )
    return listing


# ------------------------------------------------------------------------------ HKBU-MARs, SWFFD

BONAFIDE_NAMES = {"real", "bonafide", "bona_fide", "genuine", "live"}
ATTACK_NAMES = {"mask", "masks", "fake", "attack", "spoof", "wax", "wax_figure"}


@dataclass
class SubjectSplitOptions:
    ratios: dict[str, float] = field(default_factory=lambda: {"train": 0.8, "test": 0.2})
    seed: int = 0
    subject_pattern: str = r"^(\d+)"  # subject id in the file name when there is no subject folder


def _subject_split(root: Path, opts: SubjectSplitOptions, method: str, name: str) -> Listing:
    listing = Listing(task="pad", items=[])
    pattern = re.compile(opts.subject_pattern)
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        low = folder.name.lower()
        if low not in BONAFIDE_NAMES | ATTACK_NAMES:
            continue
        label = int(low in ATTACK_NAMES)
        for path in files_under(folder, VIDEO_SUFFIXES | IMAGE_SUFFIXES):
            inner = path.relative_to(folder).parts
            kind = inner[0] if label and len(inner) > 2 else method
            if len(inner) > 1:
                subject = inner[-2]
            else:
                m = pattern.search(path.stem)
                subject = m.group(1) if m else path.stem
            listing.items.append(_item(root, path, label, kind, DERIVED, f"{name}_{subject}"))
    if not listing.items:
        raise DatasetLayoutError(f"{root}: no {name} files under real/ and mask|fake|wax/ folders")
    derive_splits(listing.items, opts.ratios, opts.seed)  # groups: the subject
    listing.methods = ["bonafide", *sorted({i.method for i in listing.items} - {"bonafide"})]
    how = ", ".join(f"{k} {v:g}" for k, v in opts.ratios.items())
    listing.split_info = dict.fromkeys(
        opts.ratios, f"derived: subject-disjoint {how} (seed {opts.seed})"
    )
    return listing


@register_dataset("hkbu_mars", SubjectSplitOptions)
def list_hkbu_mars(root: Path, opts: SubjectSplitOptions) -> Listing:
    """HKBU-MARs: real/ and mask/[<mask type>/]<subject>/ videos; subject-disjoint 8:2 split."""
    return _subject_split(root, opts, "3d_mask", "hkbu")


@register_dataset("swffd", SubjectSplitOptions)
def list_swffd(root: Path, opts: SubjectSplitOptions) -> Listing:
    """SWFFD (wax figure faces): real/ and wax/ images; subject-disjoint 8:2 split."""
    return _subject_split(root, opts, "wax_figure", "swffd")
