"""Celeb-DF v1/v2, DFDC, DFDC-P, DeeperForensics-1.0 and UADFV, official layouts.

How each split is made follows DeepfakeBench Appendix A.3, except that no video is ever copied
into two splits: where DeepfakeBench duplicates the test set as validation (Celeb-DF, DFDC,
DFDC-P) or all data into every split (UADFV), a validation set is held out of train,
group-disjoint (same subject or same source video stay together), and ``split_info`` says so.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fairforensics.preprocessing.datasets.base import (
    DERIVED,
    DatasetLayoutError,
    Listing,
    SourceItem,
    dedupe_by_split,
    derive_splits,
    files_under,
    holdout_val,
    read_json_file,
    register_dataset,
    rel_of,
)
from fairforensics.preprocessing.video import VIDEO_SUFFIXES


def _holdout_note(fraction: float, seed: int, group: str) -> str:
    return f"derived: {fraction:g} of train held out, disjoint by {group} (seed {seed})"


# --------------------------------------------------------------------------- Celeb-DF


@dataclass
class CelebDFOptions:
    test_list: str = "List_of_testing_videos.txt"
    val_fraction: float = 0.1
    seed: int = 0


CELEB_FOLDERS = {"Celeb-real": 0, "YouTube-real": 0, "Celeb-synthesis": 1}


def read_celebdf_test_list(test_file: Path) -> dict[str, int]:
    """``{path: label}`` of a Celeb-DF(-v1, -v2, ++) ``List_of_testing_videos.txt`` (its lines
    ``<1|0> <path>`` use 1 for real; the labels returned use 1 for fake)."""
    if not test_file.is_file():
        raise DatasetLayoutError(f"{test_file}: Celeb-DF test list not found")
    test: dict[str, int] = {}
    for n, line in enumerate(test_file.read_text(encoding="utf-8").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2 or parts[0] not in ("0", "1"):
            raise DatasetLayoutError(f"{test_file} line {n}: expected '<0|1> <path>', got {line!r}")
        test[parts[1].replace("\\", "/")] = 1 - int(parts[0])  # the list uses 1 for real
    return test


@register_dataset("celebdf", CelebDFOptions)
def list_celebdf(root: Path, opts: CelebDFOptions) -> Listing:
    """Celeb-DF: test = the official test list; train = every other video; val held out of train."""
    test_file = root / opts.test_list
    test = read_celebdf_test_list(test_file)
    listing = Listing(task="deepfake", items=[], methods=["real", "Celeb-synthesis"])
    seen: set[str] = set()
    for folder, label in CELEB_FOLDERS.items():
        for path in files_under(root / folder, VIDEO_SUFFIXES):
            rel_file = path.relative_to(root).as_posix()
            seen.add(rel_file)
            split = "test" if rel_file in test else "train"
            if split == "test" and test[rel_file] != label:
                listing.problem(
                    path, f"label in {test_file.name} disagrees with its folder; folder kept"
                )
            stem = path.stem
            identity = stem.split("_")[0] if folder != "YouTube-real" else None
            listing.items.append(
                SourceItem(
                    id=stem,
                    label=label,
                    method="real" if label == 0 else "Celeb-synthesis",
                    split=split,
                    path=path,
                    rel=rel_of(path, root),
                    identity=identity,
                )
            )
    for rel_file in sorted(set(test) - seen):
        listing.missing_video(root / rel_file, f"listed in {test_file.name} but not found")
    if not listing.items:
        raise DatasetLayoutError(f"{root}: no Celeb-DF videos under {sorted(CELEB_FOLDERS)}")
    holdout_val(listing.items, opts.val_fraction, opts.seed)
    listing.split_info = {
        "train": f"every video not in {opts.test_list}",
        "val": _holdout_note(opts.val_fraction, opts.seed, "identity"),
        "test": f"official ({opts.test_list})",
    }
    return listing


# --------------------------------------------------------------------------- DFDC


@dataclass
class DFDCOptions:
    # holds labels.csv and the test videos (directly or in videos/); null: the train parts only
    test_dir: str | None = "test"
    val_fraction: float = 0.1
    seed: int = 0


@register_dataset("dfdc", DFDCOptions)
def list_dfdc(root: Path, opts: DFDCOptions) -> Listing:
    """DFDC: train from every part's metadata.json, test from the test set's labels.csv."""
    listing = Listing(task="deepfake", items=[], methods=["real", "DFDC"])
    parts = sorted(p for p in root.iterdir() if p.is_dir() and (p / "metadata.json").is_file())
    if not parts:
        raise DatasetLayoutError(f"{root}: no dfdc_train_part_*/metadata.json found")
    test_dir = root / opts.test_dir if opts.test_dir is not None else None
    if test_dir is not None and not (test_dir / "labels.csv").is_file():
        raise DatasetLayoutError(
            f"{test_dir / 'labels.csv'}: DFDC test labels not found; put the test set's "
            "labels.csv (header filename,label; label 1 = fake, 0 = real; it comes with the DFDC "
            f"test set) in {test_dir} beside the test videos (or their videos/ folder), or set "
            "dataset.options.test_dir to the folder that has it (null: train parts only, no test)"
        )
    for part in parts:
        try:
            meta = json.loads((part / "metadata.json").read_text(encoding="utf-8"))
        except ValueError as exc:
            listing.problem(part / "metadata.json", f"not valid JSON ({exc}); part skipped")
            continue
        for name, info in sorted(meta.items()):
            label_name = str(info.get("label", "")).upper()
            if label_name not in ("REAL", "FAKE"):
                listing.problem(part / name, f"label {info.get('label')!r} is not REAL/FAKE")
                continue
            label = int(label_name == "FAKE")
            original = Path(info.get("original") or name).stem
            _add_video(listing, root, part / name, label, "train", "DFDC", original)
    if test_dir is not None:
        labels = test_dir / "labels.csv"
        with labels.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if not {"filename", "label"} <= set(reader.fieldnames or ()):
                raise DatasetLayoutError(
                    f"{labels}: header {','.join(reader.fieldnames or ())!r} lacks the columns "
                    "filename,label of DFDC's test labels.csv"
                )
            for row in reader:
                name, value = row.get("filename"), row.get("label")
                if not name or value not in ("0", "1"):
                    listing.problem(labels, f"bad row {row}")
                    continue
                path = (
                    test_dir / name if (test_dir / name).is_file() else test_dir / "videos" / name
                )
                _add_video(listing, root, path, int(value), "test", "DFDC", None)
    holdout_val(listing.items, opts.val_fraction, opts.seed)
    listing.split_info = {
        "train": "official (train parts)",
        "val": _holdout_note(opts.val_fraction, opts.seed, "source video"),
        "test": f"official ({opts.test_dir}/labels.csv)" if test_dir else "none (test_dir: null)",
    }
    return listing


def _add_video(
    listing: Listing, root: Path, path: Path, label: int, split: str, method: str, group: str | None
) -> None:
    if not path.is_file():
        listing.missing_video(path, "listed in the metadata but not found")
        return
    listing.items.append(
        SourceItem(
            id=path.stem,
            label=label,
            method="real" if label == 0 else method,
            split=split,
            path=path,
            rel=rel_of(path, root),
            identity=group,
        )
    )


@dataclass
class DFDCPOptions:
    metadata: str = "dataset.json"
    val_fraction: float = 0.1
    seed: int = 0


@register_dataset("dfdcp", DFDCPOptions)
def list_dfdcp(root: Path, opts: DFDCPOptions) -> Listing:
    """DFDC preview: dataset.json gives label and set; the method is the top folder."""
    meta_file = root / opts.metadata
    meta = read_json_file(meta_file, "DFDC-P metadata")
    listing = Listing(task="deepfake", items=[])
    for rel_file, info in sorted(meta.items()):
        label_name, split = str(info.get("label", "")).lower(), info.get("set")
        if label_name not in ("real", "fake") or split not in ("train", "test"):
            listing.problem(root / rel_file, f"bad label/set {info.get('label')!r}/{split!r}")
            continue
        path = root / rel_file
        label = int(label_name == "fake")
        method = rel_file.split("/")[0] if label else "real"
        target = info.get("target_id")
        _add_video(listing, root, path, label, split, method, str(target) if target else None)
    for item in listing.items:
        item.id = rel_of(item.path, root).replace("/", "__")
    listing.methods = ["real", *sorted({i.method for i in listing.items} - {"real"})]
    holdout_val(listing.items, opts.val_fraction, opts.seed)
    listing.split_info = {
        "train": "official (set=train)",
        "val": _holdout_note(opts.val_fraction, opts.seed, "target id"),
        "test": "official (set=test)",
    }
    return listing


# --------------------------------------------------------------------------- DeeperForensics-1.0


@dataclass
class DeeperForensicsOptions:
    perturbation: str = "end_to_end"  # a folder of manipulated_videos/
    splits_dir: str = "lists/splits"
    real_dir: str | None = None  # FF++ original_sequences/youtube/<comp>/videos (absolute or rel)


@register_dataset("deeperforensics", DeeperForensicsOptions)
def list_deeperforensics(root: Path, opts: DeeperForensicsOptions) -> Listing:
    """DF-1.0: one perturbation variant is one fake method; reals are FF++ youtube sources."""
    fake_dir = root / "manipulated_videos" / opts.perturbation
    if not fake_dir.is_dir():
        raise DatasetLayoutError(f"{fake_dir}: DeeperForensics perturbation folder not found")
    split_of: dict[str, str] = {}
    for split in ("train", "val", "test"):
        path = root / opts.splits_dir / f"{split}.txt"
        if not path.is_file():
            raise DatasetLayoutError(f"{path}: DeeperForensics split file not found")
        for line in path.read_text(encoding="utf-8").split():
            split_of[Path(line).stem] = split
    listing = Listing(task="deepfake", items=[], methods=["real", opts.perturbation])
    real_split: dict[str, list[str]] = {}
    fakes = files_under(fake_dir, VIDEO_SUFFIXES)
    for stem in sorted(set(split_of) - {path.stem for path in fakes}):
        listing.missing_video(fake_dir / stem, "listed in the split files but not found")
    for path in fakes:
        split = split_of.get(path.stem)
        if split is None:
            listing.problem(path, "not in any split file; left out")
            continue
        target = path.stem.split("_")[0]
        real_split.setdefault(target, []).append(split)
        listing.items.append(
            SourceItem(
                path.stem, 1, opts.perturbation, split, path, rel_of(path, root), identity=target
            )
        )
    if opts.real_dir:
        real_dir = Path(opts.real_dir)
        real_dir = real_dir if real_dir.is_absolute() else root / real_dir
        if not real_dir.is_dir():
            raise DatasetLayoutError(f"{real_dir}: real videos folder not found")
        for path in files_under(real_dir, VIDEO_SUFFIXES):
            for split in real_split.get(path.stem, []):
                rel = "real/" + path.stem
                listing.items.append(
                    SourceItem(path.stem, 0, "real", split, path, rel, identity=path.stem)
                )
        listing.items = dedupe_by_split(listing.items, listing)
    listing.split_info = {
        s: "official lists; a real video takes the split of its fakes (test > val > train)"
        for s in ("train", "val", "test")
    }
    return listing


# --------------------------------------------------------------------------- UADFV


@dataclass
class UADFVOptions:
    split: Literal["test", "derived"] = "test"  # all videos in test (cross-domain use), or derived
    ratios: dict[str, float] = field(
        default_factory=lambda: {"train": 0.7, "val": 0.15, "test": 0.15}
    )
    seed: int = 0


@register_dataset("uadfv", UADFVOptions)
def list_uadfv(root: Path, opts: UADFVOptions) -> Listing:
    """UADFV: real/NNNN.mp4 and fake/NNNN_fake.mp4; a real and its fake stay in one split."""
    listing = Listing(task="deepfake", items=[], methods=["real", "UADFV"])
    for folder, label in (("real", 0), ("fake", 1)):
        for path in files_under(root / folder, VIDEO_SUFFIXES):
            pair = path.stem.removesuffix("_fake")
            split = "test" if opts.split == "test" else DERIVED
            listing.items.append(
                SourceItem(path.stem, label, "UADFV" if label else "real", split, path,
                           rel_of(path, root), identity=pair)
            )  # fmt: skip
    if not listing.items:
        raise DatasetLayoutError(f"{root}: no videos under real/ and fake/")
    derive_splits(listing.items, opts.ratios, opts.seed)  # groups: the real/fake pair
    note = "every video in test (cross-domain evaluation)"
    if opts.split == "derived":
        note = f"derived: by real/fake pair ({opts.ratios}, seed {opts.seed})"
    listing.split_info = dict.fromkeys(("train", "val", "test"), note)
    return listing
