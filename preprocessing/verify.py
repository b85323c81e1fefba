"""Check that a dataset arrived whole (``fairforensics verify``): files a raw dataset's lists or a
processed index name but that are absent, files present but unlisted, files that do not decode,
per-method counts against the published ones, and SHA-256 manifests that two labs compare.

Three kinds of target:

* a raw dataset, through its preprocess config (:func:`verify_raw`): the listing of the
  dataset module (split files, metadata, CSV) against the disk. Unlisted files are the videos
  and images in a folder that holds listed ones but that no list names.
* a processed tree with its JSON index, ours or DeepfakeBench's / DF40's (:func:`verify_index`):
  every frame, landmark and mask file the index names; unlisted files are those of the same
  kinds (suffixes) under the folder the listed files share.
* any folder (:func:`verify_tree`): only the manifest checks.

Decoding is real: a video's first and last frames are read (a truncated file often opens and
fails at its end), an image is decoded, a landmark array loaded. A manifest
(:func:`write_manifest`) is ``sha256sum``'s format, ``<hex>  <path relative to the tree>`` one a
line, sorted, so ``sha256sum -c`` reads it too.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

#: videos per method that the datasets' authors publish, by dataset name (the shipped configs'
#: ``dataset.name``). FaceForensics++ (Roessler et al. 2019, FaceShifter added to it): 1,000
#: source videos and 1,000 fakes of each method; Celeb-DF v2 (Li et al. 2020): 590 Celeb-real
#: and 300 YouTube-real videos, 5,639 Celeb-synthesis videos. Celeb-DF++ and DF40 publish no
#: per-method total that this project records (see :data:`PUBLISHED_TEST_COUNTS`).
_FF_METHODS = ("real", "Deepfakes", "Face2Face", "FaceSwap", "NeuralTextures", "FaceShifter")
_FF_NAMES = ("FF-raw", "FF-c23", "FF-c40")
PUBLISHED_COUNTS: dict[str, dict[str, int]] = {
    **{name: dict.fromkeys(_FF_METHODS, 1000) for name in _FF_NAMES},
    "Celeb-DF-v2": {"real": 890, "Celeb-synthesis": 5639},
}


def _celebdfpp_test() -> dict[str, int]:
    """Celeb-DF++'s test split (its README): Celeb-DF's 178 real test videos, 200 fakes of each
    face-swap and face-reenactment method, 300 of each talking-face method."""
    from fairforensics.preprocessing.datasets.celebdfpp import SCENARIOS

    per = {"FaceSwap": 200, "FaceReenact": 200, "TalkingFace": 300}
    counts = {"real": 178}
    for scenario, (_, methods) in SCENARIOS.items():
        counts.update(dict.fromkeys(methods, per[scenario]))
    return counts


#: videos per method of the published test split: FF++'s official split (140 sources and 140
#: fakes of each method), Celeb-DF v2's test list (178 real, 340 fake), Celeb-DF++'s test list.
PUBLISHED_TEST_COUNTS: dict[str, dict[str, int]] = {
    **{name: dict.fromkeys(_FF_METHODS, 140) for name in _FF_NAMES},
    "Celeb-DF-v2": {"real": 178, "Celeb-synthesis": 340},
    "Celeb-DF-pp": _celebdfpp_test(),
}

#: the kinds of finding, in the order the table shows them
KINDS = {
    "absent": "listed, absent",
    "unlisted": "present, unlisted",
    "unreadable": "unreadable",
    "count": "count differs from the published one",
    "manifest_absent": "in the manifest, absent",
    "manifest_extra": "present, not in the manifest",
    "manifest_changed": "SHA-256 differs from the manifest",
}
SHOWN = 20  # paths listed per kind (all of them are in --json)


@dataclass
class Finding:
    """One file (or method) that differs, with why."""

    kind: str  # a key of KINDS
    path: str
    detail: str = ""


@dataclass
class VerifyReport:
    """What ``fairforensics verify`` found on one target."""

    target: str
    tree: Path  # the folder the paths are relative to
    checked: dict[str, int] = field(default_factory=dict)  # what was looked at, counted
    findings: list[Finding] = field(default_factory=list)
    counts: list[tuple[str, int, int | None]] = field(default_factory=list)  # method, found, pub.
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing differs."""
        return not self.findings

    def add(self, kind: str, paths: Iterable[str], detail: str = "") -> None:
        """Record a finding of ``kind`` for each path."""
        self.findings += [Finding(kind, p, detail) for p in paths]

    def table(self) -> str:
        """The Markdown table of what was checked and what differs, then the paths of each kind
        (the first :data:`SHOWN`) and the per-method counts."""
        by_kind = Counter(f.kind for f in self.findings)
        lines = [f"verify {self.target} (paths relative to {self.tree})", ""]
        lines += ["| check | files |", "|---|---:|"]
        lines += [f"| {what} | {n:,} |" for what, n in self.checked.items()]
        lines += [f"| **{KINDS[k]}** | {by_kind[k]:,} |" for k in KINDS if k in by_kind]
        for kind in KINDS:
            found = [f for f in self.findings if f.kind == kind]
            if not found:
                continue
            lines += ["", f"{KINDS[kind]} ({len(found):,}):"]
            lines += [f"  {f.path}" + (f": {f.detail}" if f.detail else "") for f in found[:SHOWN]]
            if len(found) > SHOWN:
                lines.append(f"  ... and {len(found) - SHOWN:,} more (all of them: --json FILE)")
        if self.counts:
            lines += ["", "| method | videos | published |", "|---|---:|---:|"]
            lines += [
                f"| {m} | {n:,} | {'-' if p is None else f'{p:,}'} |" for m, n, p in self.counts
            ]
        lines += [""] + [f"note: {n}" for n in self.notes]
        verdict = "OK: nothing differs" if self.ok else f"DIFFERS: {len(self.findings):,} findings"
        return "\n".join([*lines, verdict, ""])

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "tree": str(self.tree),
            "ok": self.ok,
            "checked": self.checked,
            "findings": [f.__dict__ for f in self.findings],
            "counts": [{"method": m, "videos": n, "published": p} for m, n, p in self.counts],
            "notes": self.notes,
        }


def scan_tree(root: str | Path, *, skip: Iterable[str | Path] = ()) -> list[str]:
    """Every regular file under ``root`` as a sorted POSIX path relative to it (``os.scandir``:
    one ``stat`` a directory entry at most, so 100k files list in about a second)."""
    skipped = {str(Path(p).resolve()) for p in skip}
    out: list[str] = []
    stack = [(str(Path(root).resolve()), "")]
    while stack:
        folder, prefix = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                rel = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, rel + "/"))
                elif entry.is_file() and entry.path not in skipped:
                    out.append(rel)
    out.sort()
    return out


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """The SHA-256 of a file, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _map(fn: Callable[[str], Any], items: list[str], workers: int, desc: str, bar: bool) -> list:
    """``fn`` over ``items`` in ``workers`` threads (hashing and decoding release the GIL), in
    order, in chunks (one task a file costs more than hashing an empty one), with a progress bar
    on a terminal."""
    size = 64
    chunks = [items[i : i + size] for i in range(0, len(items), size)]
    out: list = []
    with (
        ThreadPoolExecutor(max(1, workers)) as pool,
        tqdm(total=len(items), desc=desc, unit="file", disable=None if bar else True) as pbar,
    ):
        for done in pool.map(lambda chunk: [fn(x) for x in chunk], chunks):
            out += done
            pbar.update(len(done))
    return out


def hash_tree(
    root: str | Path, files: list[str], *, workers: int = 4, progress: bool = True
) -> dict[str, str]:
    """``{relative path: SHA-256}`` of ``files`` under ``root``."""
    base = str(root)
    digests = _map(
        lambda rel: sha256_file(os.path.join(base, rel)), files, workers, "hashing", progress
    )
    return dict(zip(files, digests, strict=True))


def write_manifest(
    root: str | Path, out: str | Path, *, workers: int = 4, progress: bool = True
) -> int:
    """Write the SHA-256 manifest of every file under ``root`` (``out`` itself left out) to
    ``out``, atomically; returns the number of files."""
    from fairforensics.preprocessing.files import atomic_write_text

    files = scan_tree(root, skip=[out])
    digests = hash_tree(root, files, workers=workers, progress=progress)
    atomic_write_text(out, "".join(f"{digests[f]}  {f}\n" for f in files))
    return len(files)


def read_manifest(path: str | Path) -> dict[str, str]:
    """``{relative path: SHA-256}`` of a manifest; a malformed line is a ``ValueError`` naming
    it."""
    out: dict[str, str] = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        digest, sep, rel = line.partition("  ")
        rel = rel[1:] if rel.startswith("*") else rel  # sha256sum's binary mark
        if not sep or len(digest) != 64 or not rel or any(c not in _HEX for c in digest.lower()):
            raise ValueError(f"{path} line {n}: expected '<sha256 hex>  <relative path>'")
        out[rel] = digest.lower()
    return out


_HEX = frozenset("0123456789abcdef")


def compare_manifest(
    report: VerifyReport,
    manifest: str | Path,
    *,
    files: list[str] | None = None,
    workers: int = 4,
    progress: bool = True,
) -> None:
    """Add to ``report`` the files of ``manifest`` that are absent from its tree, the tree's files
    that the manifest does not name, and those whose SHA-256 differs."""
    expected = read_manifest(manifest)
    present = scan_tree(report.tree, skip=[manifest]) if files is None else files
    have = set(present)
    report.add("manifest_absent", sorted(set(expected) - have))
    report.add("manifest_extra", [f for f in present if f not in expected])
    common = [f for f in present if f in expected]
    digests = hash_tree(report.tree, common, workers=workers, progress=progress)
    report.add("manifest_changed", [f for f in common if digests[f] != expected[f]])
    report.checked["files hashed against the manifest"] = len(common)


# ---------------------------------------------------------------- decoding


def decode_problem(path: str | Path) -> str | None:
    """Why ``path`` does not decode, or None: a video's first and last frames are read, an image
    (or a folder of frames' first image) decoded, a ``.npy`` array loaded."""
    import cv2
    import numpy as np

    from fairforensics.preprocessing.video import VIDEO_SUFFIXES, frame_files, is_image

    path = Path(path)
    try:
        if path.is_dir():
            images = frame_files(path)
            if not images:
                return "a folder of frames without an image"
            path = images[0]
        if path.suffix.lower() == ".npy":
            np.load(path, allow_pickle=False)
            return None
        if is_image(path):
            return (
                None
                if cv2.imread(str(path), cv2.IMREAD_UNCHANGED) is not None
                else "the image does not decode"
            )
        if path.suffix.lower() in VIDEO_SUFFIXES:
            return _video_problem(path)
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _video_problem(path: Path) -> str | None:
    import cv2

    cap = cv2.VideoCapture(str(path))
    try:
        if not cap.isOpened():
            return "the video does not open"
        ok, _ = cap.read()
        if not ok:
            return "its first frame does not decode"
        total = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        if total > 1:
            cap.set(cv2.CAP_PROP_POS_FRAMES, total - 1)
            ok, _ = cap.read()
            if not ok:
                return f"its last frame ({total - 1}) does not decode (truncated?)"
        return None
    finally:
        cap.release()


def check_decoding(
    report: VerifyReport, paths: list[str], *, workers: int = 4, progress: bool = True
) -> None:
    """Decode every path (relative to the report's tree) and add the unreadable ones."""
    tree = report.tree
    problems = _map(lambda rel: decode_problem(tree / rel), paths, workers, "decoding", progress)
    for rel, why in zip(paths, problems, strict=True):
        if why:
            report.add("unreadable", [rel], why)
    report.checked["files decoded"] = len(paths)


# ---------------------------------------------------------------- targets


def _rel(path: str | Path, root: Path) -> str:
    return Path(os.path.relpath(path, root)).as_posix()


def _counts(report: VerifyReport, dataset: str, videos: Iterable[tuple[str, str]]) -> None:
    """Per-method video counts (``videos``: method and split of each), in all and in the test
    split, against the published ones where :data:`PUBLISHED_COUNTS` /
    :data:`PUBLISHED_TEST_COUNTS` have the dataset (a published method that is not there at all
    is not an error: configs choose their methods)."""
    pairs = list(videos)
    for published, what in ((PUBLISHED_COUNTS, ""), (PUBLISHED_TEST_COUNTS, " (test split)")):
        known = published.get(dataset)
        found = Counter(m for m, split in pairs if not what or split == "test")
        if known is None and what:
            continue
        for method in sorted(found, key=lambda m: (m != "real", m)):
            pub = None if known is None else known.get(method)
            report.counts.append((method + what, found[method], pub))
            if pub is not None and found[method] != pub:
                report.add("count", [method + what], f"{found[method]:,} videos, published {pub:,}")
    if dataset not in PUBLISHED_COUNTS:
        test = " (the test split's are checked)" if dataset in PUBLISHED_TEST_COUNTS else ""
        report.notes.append(
            f"no published per-method totals known for {dataset!r} (known: "
            f"{', '.join(PUBLISHED_COUNTS)}): the totals are shown unchecked{test}"
        )


def verify_raw(
    cfg: Any, *, decode: bool = True, workers: int = 4, progress: bool = True
) -> VerifyReport:
    """Verify a raw dataset through its preprocess config (``PreprocessConfig``): the files its
    lists name against the disk, unlisted media in the listed folders, decoding, counts."""
    from fairforensics.preprocessing.datasets import build_listing
    from fairforensics.preprocessing.video import IMAGE_SUFFIXES, VIDEO_SUFFIXES

    ds = cfg.dataset
    root = Path(ds.root).resolve()
    listing = build_listing(ds.type, root, ds.options)
    report = VerifyReport(f"raw dataset {ds.name} ({ds.type})", root)
    listed = {item.path.resolve() for item in listing.items}
    absent = [Path(p).resolve() for p in listing.missing_paths]
    report.add("absent", sorted(_rel(p, root) for p in absent))
    media = VIDEO_SUFFIXES | IMAGE_SUFFIXES
    folders = {p.parent for p in listed} | {p.parent for p in absent}
    unlisted: list[str] = []
    for folder in sorted(folders):
        if not folder.is_dir():
            continue
        with os.scandir(folder) as entries:
            for entry in entries:
                path = Path(entry.path)
                if entry.is_file() and path.suffix.lower() in media and path not in listed:
                    unlisted.append(_rel(path, root))
    report.add("unlisted", sorted(unlisted))
    report.checked["videos listed"] = listing.videos_listed
    report.checked["videos present"] = listing.videos_found
    if decode:
        check_decoding(
            report, sorted(_rel(p, root) for p in listed), workers=workers, progress=progress
        )
    _counts(report, ds.name, ((item.method, item.split) for item in listing.items))
    return report


def verify_index(
    path: str | Path,
    data_root: str | Path | None = None,
    *,
    source_root: str | Path | None = None,
    decode: bool = True,
    workers: int = 4,
    progress: bool = True,
) -> VerifyReport:
    """Verify a processed tree through its JSON index (ours, or DeepfakeBench's / DF40's with
    ``data_root`` the folder its paths start from); the videos' source files too, under
    ``source_root`` or the ``source_root`` the index records."""
    from fairforensics.preprocessing.datasets.deepfakebench import import_deepfakebench_json
    from fairforensics.preprocessing.index import read_index

    path = Path(path)
    head = _json_head(path)
    if "schema_version" in head:
        index = read_index(path)
        kind = "dataset index"
    else:
        index = import_deepfakebench_json(
            path, data_root or path.parent, dataset=path.stem, check_frames=False
        )
        kind = "DeepfakeBench JSON"
    root = Path(index.root).resolve()
    report = VerifyReport(f"{kind} {path}", root)
    listed = sorted({rel for v in index.videos for rel in _files_of(v)})
    base = _common_folder(listed)
    present = [f"{base}{rel}" for rel in scan_tree(root / base)] if (root / base).is_dir() else []
    have = set(present)
    report.add("absent", [rel for rel in listed if rel not in have])
    suffixes = {os.path.splitext(rel)[1].lower() for rel in listed}
    wanted = set(listed)
    report.add(
        "unlisted",
        [f for f in present if f not in wanted and os.path.splitext(f)[1].lower() in suffixes],
    )
    report.checked["files listed"] = len(listed)
    report.checked[f"files present under {base or './'}"] = len(present)
    if decode:
        check_decoding(
            report, [rel for rel in listed if rel in have], workers=workers, progress=progress
        )
    if index.incomplete:
        report.notes.append(f"the index is incomplete: {index.incomplete}")
    _check_sources(report, index, source_root, decode=decode, workers=workers, progress=progress)
    _counts(report, index.dataset, ((v.method, v.split) for v in index.videos))
    return report


def _check_sources(
    report: VerifyReport,
    index: Any,
    source_root: str | Path | None,
    *,
    decode: bool,
    workers: int,
    progress: bool,
) -> None:
    """The videos' source files (``source``, relative to the source root): absent ones, and
    with ``decode`` the unreadable ones; a note when there is no source root to look in."""
    sources = sorted({v.source for v in index.videos if v.source})
    given = source_root is not None
    source_root = source_root if given else index.source_root
    if not sources:
        return
    if source_root is None or not Path(source_root).is_dir():
        where = (
            f"the source root {source_root} it records is not here"
            if source_root
            else ("it records no source root")
        )
        report.notes.append(
            f"the index names {len(sources):,} source videos, but {where}: not checked "
            "(--source-root DIR checks them)"
        )
        return
    base = Path(source_root).resolve()
    absent = [rel for rel in sources if not (base / rel).exists()]
    report.add("absent", [f"{base}/{rel}" for rel in absent], "source video")
    report.checked[f"source videos under {base}"] = len(sources)
    if decode:
        gone = set(absent)
        here = [rel for rel in sources if rel not in gone]
        problems = _map(lambda rel: decode_problem(base / rel), here, workers, "decoding", progress)
        for rel, why in zip(here, problems, strict=True):
            if why:
                report.add("unreadable", [f"{base}/{rel}"], f"source video: {why}")
        report.checked["source videos decoded"] = len(here)


def _json_head(path: Path) -> dict[str, Any]:
    import json

    from fairforensics.preprocessing.index import DatasetIndexError

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetIndexError(f"{path}: cannot read the JSON index: {exc}") from None
    if not isinstance(data, dict):
        raise DatasetIndexError(f"{path}: not a dataset index (the top level is no object)")
    return data


def _files_of(video: Any) -> list[str]:
    """Every file a video of an index names: frames, landmarks, masks."""
    return [*video.frames, *(video.landmarks or []), *(video.masks or [])]


def _common_folder(rels: list[str]) -> str:
    """The folder every path of ``rels`` lies in, as ``"a/b/"`` (``""``: the root)."""
    parents = {r.rpartition("/")[0] for r in rels}
    common = os.path.commonpath(sorted(parents)) if parents else ""
    return "" if common in ("", ".") else f"{common}/"


def verify_tree(root: str | Path) -> VerifyReport:
    """A report on a plain folder (only the manifest checks apply)."""
    root = Path(root).resolve()
    return VerifyReport(f"folder {root}", root)


__all__ = [
    "KINDS",
    "PUBLISHED_COUNTS",
    "PUBLISHED_TEST_COUNTS",
    "Finding",
    "VerifyReport",
    "check_decoding",
    "compare_manifest",
    "decode_problem",
    "hash_tree",
    "read_manifest",
    "scan_tree",
    "sha256_file",
    "verify_index",
    "verify_raw",
    "verify_tree",
    "write_manifest",
]
