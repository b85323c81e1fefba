"""DF40 (Yan et al., NeurIPS 2024, github.com/YZY-stack/DF40): its processed face crops.

Layout (README "Folder Structure"; ``DeepfakeBench_DF40/preprocessing/rearrange.py``)::

    DF40/<method>/<domain>/frames/<video>/*.png      test
    DF40_train/<method>/<domain>/frames/<video>/*.png train (the known methods, FF++ domain)
    <domain>: ff | cdf (README) or ffpp | cdfv2 (the code); the methods generated from their own
              sources (DeepFaceLab, HeyGen, MidJourney, WhichFaceIsReal, the face editors) have
              fake/ and real/ instead, their reals included

DF40 ships fakes only for the FF++ and Celeb-DF domains: their reals are those of the FF++ and
Celeb-DF indexes, joined with ``fairforensics combine``. A folder ``frames/<video>/`` is one
video (its images its frames, read in name order); any other image is one still image. Every
entry carries ``family`` (FS, FR, EFS, FE), ``domain`` (ff, cdf, or the method's own source:
UADFV, VFHQ, FFHQ, CelebA) and ``known`` (``known`` for the 31 methods generated in the FF++
and Celeb-DF domains, ``unknown`` for the other 9, DF40's Protocol 3) as attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from fairforensics.configs.loader import join_problems
from fairforensics.preprocessing.datasets.base import (
    DatasetLayoutError,
    Listing,
    SourceItem,
    dedupe_by_split,
    files_under,
    holdout_val,
    register_dataset,
    rel_of,
)
from fairforensics.preprocessing.index import DatasetIndex
from fairforensics.preprocessing.video import IMAGE_SUFFIXES

#: family -> its methods' folder names (README table and folder structure, in its order)
FAMILIES: dict[str, list[str]] = {
    "FS": ["fsgan", "faceswap", "simswap", "inswap", "blendface", "uniface", "mobileswap", "e4s",
           "facedancer", "deepfacelab"],
    "FR": ["fomm", "facevid2vid", "wav2lip", "MRAA", "one_shot_free", "pirender", "tpsm", "lia",
           "danet", "sadtalker", "mcnet", "hyperreenact", "heygen"],
    "EFS": ["VQGAN", "StyleGAN2", "StyleGAN3", "StyleGANXL", "sd2.1", "ddim", "rddm", "PixArt",
            "DiT", "SiT", "MidJourney", "whichfaceisreal"],
    "FE": ["CollabDiff", "e4e", "stargan", "starganv2", "styleclip"],
}  # fmt: skip
FAMILY_OF = {m: fam for fam, methods in FAMILIES.items() for m in methods}
METHODS = list(FAMILY_OF)
#: the 9 methods made from their own source data (DF40's "unknown" methods, Protocol 3)
OWN_SOURCE = {
    "deepfacelab": "UADFV", "heygen": "VFHQ", "MidJourney": "FFHQ", "whichfaceisreal": "FFHQ",
    "CollabDiff": "CelebA", "e4e": "CelebA", "stargan": "CelebA", "starganv2": "CelebA",
    "styleclip": "CelebA",
}  # fmt: skip
DOMAIN_FOLDERS = {"ff": "ff", "ffpp": "ff", "cdf": "cdf", "cdfv2": "cdf"}
OWN_FOLDERS = {"fake": 1, "real": 0}


def method_info(method: str) -> dict[str, str]:
    """``df40_method`` (the folder name, also on the reals of a method made from its own
    source), ``family`` and ``known`` of a DF40 method."""
    return {"df40_method": method, "family": FAMILY_OF[method],
            "known": "unknown" if method in OWN_SOURCE else "known"}  # fmt: skip


@dataclass
class DF40Options:
    test_dir: str | None = "DF40"  # under the root; null: no test part
    train_dir: str | None = "DF40_train"  # null: no train part
    methods: list[str] | None = None  # null: every method folder (an unknown one is an error)
    domains: list[str] = field(default_factory=lambda: ["ff", "cdf"])  # own-source: always
    val_fraction: float = 0.1  # of DF40_train, held out by identity (the first name part)
    seed: int = 0


@register_dataset("df40", DF40Options)
def list_df40(root: Path, opts: DF40Options) -> Listing:
    """DF40's crops, one item per video folder or still image, split by the part it is in."""
    problems = [f"unknown method {m!r}; allowed: {', '.join(METHODS)}"
                for m in opts.methods or () if m not in FAMILY_OF]  # fmt: skip
    problems += [
        f"unknown domain {d!r}; allowed: ff, cdf" for d in opts.domains if d not in ("ff", "cdf")
    ]
    parts = [(s, root / d) for s, d in (("test", opts.test_dir), ("train", opts.train_dir)) if d]
    problems += [
        f"{p}: DF40 folder not found (dataset.options.{s}_dir)" for s, p in parts if not p.is_dir()
    ]
    if problems:
        raise DatasetLayoutError(join_problems(problems))
    listing = Listing(task="deepfake", items=[])
    for split, part in parts:
        for folder in sorted(p for p in part.iterdir() if p.is_dir()):
            if opts.methods is not None and folder.name not in opts.methods:
                continue
            if folder.name not in FAMILY_OF:
                problems.append(
                    f"{folder}: unknown DF40 method folder; allowed: {', '.join(METHODS)} (or "
                    "list the ones to read in dataset.options.methods)"
                )
                continue
            problems += _list_method(listing, root, folder, split, opts)
    if problems:
        raise DatasetLayoutError(join_problems(problems))
    if not listing.items:
        raise DatasetLayoutError(
            f"{root}: no DF40 crops under {', '.join(str(p) for _, p in parts)}"
        )
    _check_same_split(listing.items)
    listing.items = dedupe_by_split(listing.items, listing)
    listing.methods = ["real", *[m for m in METHODS if any(i.method == m for i in listing.items)]]
    listing.split_info = {"train": f"{opts.train_dir}/", "test": f"{opts.test_dir}/"}
    if any(item.split == "train" for item in listing.items):
        holdout_val(listing.items, opts.val_fraction, opts.seed)
        listing.split_info["val"] = (
            f"derived: {opts.val_fraction:g} of {opts.train_dir}/ held out, disjoint by the "
            f"first part of the name (seed {opts.seed})"
        )
    return listing


def _list_method(
    listing: Listing, root: Path, folder: Path, split: str, opts: DF40Options
) -> list[str]:
    """Add the crops of one method folder; return the layout problems."""
    method = folder.name
    subs = sorted(p for p in folder.iterdir() if p.is_dir())
    allowed = OWN_FOLDERS if method in OWN_SOURCE else DOMAIN_FOLDERS
    odd = [p.name for p in subs if p.name not in allowed]
    if odd:
        return [f"{folder}: unknown folder(s) {', '.join(odd)}; allowed: {', '.join(allowed)}"]
    for sub in subs:
        if method in OWN_SOURCE:
            label, domain = OWN_FOLDERS[sub.name], OWN_SOURCE[method]
        else:
            label, domain = 1, DOMAIN_FOLDERS[sub.name]
            if domain not in opts.domains:
                continue
        attributes = {**method_info(method), "domain": domain}
        for path, rel in _videos(sub, root):
            name = path.name if path.is_dir() else path.stem
            name = f"{method}-{name}" if method in OWN_SOURCE else name  # reals of several
            listing.items.append(
                SourceItem(
                    id=name, label=label, method=method if label else "real", split=split,
                    path=path, rel=rel, identity=_identity(domain, method, name),
                    attributes=dict(attributes),
                )
            )  # fmt: skip
    return []


def _videos(folder: Path, root: Path) -> list[tuple[Path, str]]:
    """``(path, output folder)``: each ``frames/<video>/`` folder holding images, and every
    other image under ``folder``."""
    in_videos: set[Path] = set()
    out = []
    for frames in sorted(folder.rglob("frames")):
        for video in sorted(p for p in frames.iterdir() if p.is_dir()):
            images = files_under(video, IMAGE_SUFFIXES)
            if images:
                in_videos.update(images)
                out.append((video, video.relative_to(root).as_posix()))
    out += [(p, rel_of(p, root)) for p in files_under(folder, IMAGE_SUFFIXES) if p not in in_videos]
    return out


def _check_same_split(items: list[SourceItem]) -> None:
    """Two crops of one method with one name in one split (e.g. ``ff/0001.png`` and
    ``cdf/0001.png``) would be one video: an error naming both."""
    seen: dict[tuple[str, str, str], Path] = {}
    for item in items:
        key = (item.method, item.id, item.split)
        if key in seen:
            raise DatasetLayoutError(
                f"{item.path}: same {item.method} video name {item.id!r} as {seen[key]}"
            )
        seen[key] = item.path


def _identity(domain: str, method: str, name: str) -> str:
    """The group a validation hold-out keeps together: the first part of an FF++ or Celeb-DF
    name (``000`` of ``000_003``, ``id0`` of ``id0_id1_0000``), else the file itself."""
    if domain in ("ff", "cdf"):
        return f"{domain}:{name.split('_')[0]}"
    return f"{method}:{name}"


#: label-name and folder spellings of DF40's JSON files and code -> the method's folder name
ALIASES = {
    "mraa": "MRAA", "pixart": "PixArt", "whichisreal": "whichfaceisreal",
    "Collaborative_Diffusion": "CollabDiff", "one_shot_free": "one_shot_free",
}  # fmt: skip
_REAL_DOMAINS = {"original_sequences": "ff", "Celeb-real": "cdf", "YouTube-real": "cdf"}


def annotate_df40(index: DatasetIndex) -> int:
    """Give every entry of an index imported from DF40's JSON files (DeepfakeBench format) its
    DF40 method, ``family``, ``domain`` and ``known``, read from its frame paths
    (``<method>/<domain>/frames/<video>/``; reals: FF++'s ``original_sequences`` -> ff,
    Celeb-DF's ``Celeb-real``/``YouTube-real`` -> cdf, ``<method>/real`` -> the method's
    source). A fake whose paths name no DF40 method keeps the label name's method
    (``simswap_Fake`` -> simswap) when that is one, else is an error. Returns how many entries
    have a DF40 method."""
    named = 0
    for video in index.videos:
        parts = PurePosixPath(video.frames[0]).parts
        method = next((_method_name(p) for p in parts if _method_name(p)), None)
        if method is None and video.label == 1:
            method = _method_name(video.method.removesuffix("_Fake"))
            if method is None:
                raise DatasetLayoutError(
                    f"{index.dataset}: {video.method}/{video.id}: no DF40 method in its label "
                    f"name or frame paths ({video.frames[0]}); allowed: {', '.join(METHODS)}"
                )
        domain = next((_REAL_DOMAINS[p] for p in parts if p in _REAL_DOMAINS), None)
        if method is not None:
            at = next((k for k, p in enumerate(parts) if _method_name(p) == method), None)
            after = parts[at + 1 :] if at is not None else ()  # a method from the label name
            domain = OWN_SOURCE.get(method) or next(
                (DOMAIN_FOLDERS[p] for p in after if p in DOMAIN_FOLDERS), domain
            )
            video.attributes.update(method_info(method))
            named += 1
        if video.label == 1:
            video.method = method
        if domain is not None:
            video.attributes["domain"] = domain
    return named


def _method_name(text: str) -> str | None:
    name = ALIASES.get(text, text)
    return name if name in FAMILY_OF else None
