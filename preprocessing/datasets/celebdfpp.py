"""Celeb-DF++ (Li et al. 2025, github.com/OUC-VAS/Celeb-DF-PP), the authors' video layout::

    Celeb-real/id0_0000.mp4   YouTube-real/00000.mp4          real (Celeb-DF's, unchanged)
    Celeb-synthesis/<scenario>/<method>/id0_id1_0000.mp4      22 methods in three scenarios
    List_of_testing_videos.txt    "<1 real | 0 fake> <path>" (178 real; 200 per FaceSwap and
                                  FaceReenact method, 300 per TalkingFace method)

Celeb-DF's own fakes lie in ``FaceSwap/Celeb-DF`` (README) or ``FaceSwap/Celeb-DF-v2`` (the
authors' ``rearrange.py``); both are read as the method ``Celeb-DF``. Every fake carries its
``scenario`` and ``family`` (FS, FR, TF) as attributes. Test = the list; train = the rest.

The authors' code (``rearrange.py``, branch ``Celeb-DF-v3``) uses the test list as the
validation set too. Here ``validation: holdout`` (default) holds a fraction of train out as
validation, disjoint by identity (the first ``idN`` of a name: the person of the source video;
YouTube-real videos, which name none, are each their own group); ``validation: test`` keeps the
authors' choice by leaving val empty: train then selects on the test list with
``train.selection: test-top3``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fairforensics.configs.loader import join_problems
from fairforensics.preprocessing.datasets.base import (
    DatasetLayoutError,
    Listing,
    SourceItem,
    files_under,
    holdout_val,
    register_dataset,
    rel_of,
)
from fairforensics.preprocessing.datasets.deepfake import read_celebdf_test_list
from fairforensics.preprocessing.video import VIDEO_SUFFIXES

#: scenario -> (family, its methods), in the authors' order
SCENARIOS: dict[str, tuple[str, list[str]]] = {
    "FaceSwap": ("FS", ["Celeb-DF", "BlendFace", "GHOST", "HifiFace", "InSwapper",
                        "MobileFaceSwap", "SimSwap", "UniFace"]),
    "FaceReenact": ("FR", ["DaGAN", "FSRT", "HyperReenact", "LIA", "LivePortrait", "MCNET",
                           "TPSMM"]),
    "TalkingFace": ("TF", ["AniTalker", "EchoMimic", "EDTalk", "FLOAT", "IP_LAP",
                           "Real3DPortrait", "SadTalker"]),
}  # fmt: skip
METHODS = [m for _, methods in SCENARIOS.values() for m in methods]
SCENARIO_OF = {m: s for s, (_, methods) in SCENARIOS.items() for m in methods}
#: other folder names of a method (README ``Celeb-DF``, the authors' code ``Celeb-DF-v2``)
FOLDER_ALIASES = {"Celeb-DF": ("Celeb-DF", "Celeb-DF-v2")}
REAL_FOLDERS = ("Celeb-real", "YouTube-real")
FAKE_FOLDER = "Celeb-synthesis"


@dataclass
class CelebDFPPOptions:
    test_list: str = "List_of_testing_videos.txt"
    methods: list[str] = field(default_factory=lambda: list(METHODS))  # a partial download
    validation: Literal["holdout", "test"] = "holdout"
    val_fraction: float = 0.1
    seed: int = 0


def _canonical(rel_file: str) -> str:
    """A listed path with the method folder's alias replaced by the method's name."""
    parts = rel_file.split("/")
    if len(parts) == 4 and parts[0] == FAKE_FOLDER:
        for method, aliases in FOLDER_ALIASES.items():
            if parts[2] in aliases:
                parts[2] = method
    return "/".join(parts)


def _method_folders(root: Path, opts: CelebDFPPOptions) -> dict[str, Path]:
    """The folder of every selected method; an unknown folder or a missing method is an error."""
    problems = [f"unknown method {m!r}; allowed: {', '.join(METHODS)}"
                for m in opts.methods if m not in SCENARIO_OF]  # fmt: skip
    known = {name: m for m in METHODS for name in FOLDER_ALIASES.get(m, (m,))}
    base = root / FAKE_FOLDER
    found: dict[str, Path] = {}
    for scenario in sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []:
        if scenario.name not in SCENARIOS:
            problems.append(f"{scenario}: unknown scenario folder; allowed: {', '.join(SCENARIOS)}")
            continue
        for folder in sorted(p for p in scenario.iterdir() if p.is_dir()):
            method = known.get(folder.name)
            if method is None or SCENARIO_OF[method] != scenario.name:
                allowed = SCENARIOS[scenario.name][1]
                problems.append(f"{folder}: unknown method folder; allowed: {', '.join(allowed)}")
            elif method in found:
                problems.append(f"{folder}: {method} found twice (also {found[method]})")
            else:
                found[method] = folder
    missing = [m for m in opts.methods if m in SCENARIO_OF and m not in found]
    if missing:
        problems.append(
            f"{base}: no folder <scenario>/<method> for {', '.join(missing)}; to list only the "
            "methods downloaded, set dataset.options.methods, e.g. "
            f'--set "dataset.options.methods=[{", ".join(m for m in METHODS if m in found)}]"'
        )
    if problems:
        raise DatasetLayoutError(join_problems(problems))
    return {m: found[m] for m in opts.methods}


@register_dataset("celebdfpp", CelebDFPPOptions)
def list_celebdfpp(root: Path, opts: CelebDFPPOptions) -> Listing:
    """Celeb-DF++: test = the official list; train = the rest; val per ``opts.validation``."""
    test = {_canonical(k): v for k, v in read_celebdf_test_list(root / opts.test_list).items()}
    folders = _method_folders(root, opts)
    listing = Listing(task="deepfake", items=[], methods=["real", *opts.methods])
    sources = [(root / f, "real", None) for f in REAL_FOLDERS]
    sources += [(folder, m, SCENARIO_OF[m]) for m, folder in folders.items()]
    for folder, method, scenario in sources:
        label = int(scenario is not None)
        for path in files_under(folder, VIDEO_SUFFIXES):
            rel_file = _canonical(path.relative_to(root).as_posix())
            split = "test" if rel_file in test else "train"
            if split == "test" and test.pop(rel_file) != label:
                listing.problem(
                    path, f"label in {opts.test_list} disagrees with its folder; folder kept"
                )
            attributes = {}
            if scenario is not None:
                attributes = {"scenario": scenario, "family": SCENARIOS[scenario][0]}
            listing.items.append(
                SourceItem(
                    id=path.stem, label=label, method=method, split=split, path=path,
                    rel=rel_of(path, root), identity=_identity(path.stem),
                    attributes=attributes,
                )
            )  # fmt: skip
    wanted = {f"{FAKE_FOLDER}/{SCENARIO_OF[m]}/{m}" for m in opts.methods}
    for rel_file in sorted(test):  # the listed videos not found, of the selected methods
        if rel_file.split("/")[0] in REAL_FOLDERS or rel_file.rsplit("/", 1)[0] in wanted:
            listing.missing_video(root / rel_file, f"listed in {opts.test_list} but not found")
    if not listing.items:
        raise DatasetLayoutError(
            f"{root}: no Celeb-DF++ videos under {', '.join(REAL_FOLDERS)}, {FAKE_FOLDER}"
        )
    listing.split_info = {"train": f"every video not in {opts.test_list}",
                          "test": f"official ({opts.test_list})"}  # fmt: skip
    if opts.validation == "holdout":
        holdout_val(listing.items, opts.val_fraction, opts.seed)
        listing.split_info["val"] = (
            f"derived: {opts.val_fraction:g} of train held out, disjoint by identity "
            f"(seed {opts.seed})"
        )
    else:
        listing.split_info["val"] = (
            f"none: as the authors' code, {opts.test_list} doubles as validation "
            "(train.selection: test-top3)"
        )
    return listing


def _identity(stem: str) -> str | None:
    """``id3`` of ``id3_0001`` and ``id3_id7_0001`` (the source video's person); YouTube-real's
    numbered videos name none."""
    first = stem.split("_")[0]
    return first if first.startswith("id") else None
