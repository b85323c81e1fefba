"""The dataset index: one JSON file per dataset that every later stage reads.

Schema version 4 (all paths are POSIX paths relative to the directory of the index file)::

    {
      "schema_version": 4,                 # 3: without source_root and videos_pending; 2: nor
                                           # the counts and crop; 1: nor "clips"
      "dataset": "FF-c23",                 # name used by --train-data / --test-data
      "task": "deepfake" | "pad",
      "methods": ["real", "Deepfakes", ...],   # optional; derived from videos when absent
      "split_info": {"val": "official"},   # optional: how each split was made (derived splits)
      "videos_listed": 6000,               # optional (version 3): videos the dataset's own lists
                                           # (split files, metadata) name
      "videos_found": 42,                  # optional (version 3): of those, present on disk; the
                                           # index is partial when fewer than listed
      "crop": {"method": "template", "scale": 1.3, "size": 256},   # optional (version 3): how
                                           # the faces were cropped (configs.crop.CropSpec)
      "preprocess": {"sampling": {...}, "face": {...}, "align": {...}, ...},   # optional: the
                                           # face-crop settings that made it (FaceSettings)
      "source_root": "/data/raw/FF++",     # optional (version 4): the absolute path of the raw
                                           # dataset it was made from (dataset.root); "source"
                                           # paths are relative to it. Absent: unknown
      "videos_pending": 4,                 # optional (version 4): videos listed and found but
                                           # not preprocessed yet, because the run was
                                           # interrupted; the index is then incomplete and
                                           # commands refuse it unless --allow-partial
      "videos": [
        {
          "id": "000_003",                 # unique together with "method"
          "label": 1,                      # 0 real / bona fide, 1 fake / attack
          "method": "Deepfakes",           # manipulation method or attack type; "real" for label 0
          "split": "train" | "val" | "test",
          "frames": ["Deepfakes/000_003/frames/000.png", ...],   # ordered
          "landmarks": ["Deepfakes/000_003/landmarks/000.npy", ...] | null,  # 68x2 per frame
          "masks": ["Deepfakes/000_003/masks/000.png", ...] | null,
          "attributes": {"gender": "female", ...},   # groups for fairness; may be empty
          "identity": "000",               # optional: subject id (identity-disjoint splits, pairs)
          "source": "manipulated_sequences/Deepfakes/c23/videos/000_003.mp4",   # optional
          "frame_indices": [0, 8, ...],    # optional: frame numbers in the source video
          "clips": [[0, 16], [16, 16], ...]  # optional (version 2): runs of consecutive source
                                           # frames, as [first position in "frames", length]
        }, ...
      ]
    }

``clips`` is written by ``sampling.mode: clips`` (one crop per clip, for video detectors); the
clips are sorted, do not overlap and lie inside ``frames``. Older versions are still read
(their crop and completeness are unknown), and an index is written with the lowest version
that holds what it records, so tools that know only version 1 keep reading indexes without
clips, counts or crop. Use :func:`read_index` / :func:`write_index` (atomic) and
:func:`validate_index`; :func:`check_complete` refuses an incomplete index.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path, PurePosixPath
from typing import Any

from fairforensics.configs.crop import CropSpec, crop_from_mapping
from fairforensics.configs.loader import ConfigError
from fairforensics.preprocessing.files import atomic_write_text, jsonable

SCHEMA_VERSION = 4
SCHEMA_VERSIONS = (1, 2, 3, 4)  # what the reader accepts; 2 adds "clips", 3 the counts and
# crop, 4 source_root and videos_pending
SPLITS = ("train", "val", "test")
ALL_SPLITS = "all"  # a split argument that means every video of the index
SPLIT_CHOICES = (*SPLITS, ALL_SPLITS)  # what a command's --split accepts
TASKS = ("deepfake", "pad")


class DatasetIndexError(ValueError):
    """A dataset index file is malformed; the message names the file and the problem."""


class IncompleteIndexError(DatasetIndexError):
    """An index that an interrupted preprocessing run wrote, used without ``allow_partial``."""


@dataclass
class VideoEntry:
    """One video (or image) of a dataset index."""

    id: str
    label: int
    method: str
    split: str
    frames: list[str]
    landmarks: list[str] | None = None
    masks: list[str] | None = None
    attributes: dict[str, str] = field(default_factory=dict)
    identity: str | None = None
    source: str | None = None
    frame_indices: list[int] | None = None
    clips: list[list[int]] | None = None

    @property
    def key(self) -> tuple[str, str]:
        """Unique key of the video inside its dataset (FF++ fake ids repeat across methods)."""
        return (self.method, self.id)

    def to_json(self) -> dict[str, Any]:
        """The video as the index's JSON object (copies of its lists and attributes)."""
        out: dict[str, Any] = {}
        for k in _FIELDS:
            v = getattr(self, k)
            if v is None and k not in _REQUIRED:
                continue
            if k == "clips":
                v = [list(c) for c in v]
            elif isinstance(v, (list, dict)):
                v = v.copy()
            out[k] = v
        return out


_REQUIRED = ("id", "label", "method", "split", "frames", "landmarks", "masks", "attributes")
_OPTIONAL = ("identity", "source", "frame_indices", "clips")
_FIELDS = tuple(f.name for f in fields(VideoEntry))


@dataclass
class DatasetIndex:
    """A whole dataset index; ``root`` is the directory that relative paths start from."""

    dataset: str
    task: str
    videos: list[VideoEntry]
    root: Path = Path(".")
    methods: list[str] | None = None
    split_info: dict[str, str] = field(default_factory=dict)
    videos_listed: int | None = None  # videos the dataset's lists name (None: unknown)
    videos_found: int | None = None  # of those, present on disk when it was preprocessed
    crop: CropSpec | None = None  # how its faces were cropped (None: unknown)
    #: the face-crop settings that made the index (``FaceSettings.to_json()``), when known
    preprocess: dict[str, Any] | None = None
    source_root: str | None = None  # the raw dataset's folder it was made from (None: unknown)
    videos_pending: int | None = None  # videos an interrupted run did not preprocess yet

    @property
    def incomplete(self) -> str | None:
        """``"3 videos preprocessed, 4 not yet (interrupted run)"`` when the preprocessing run
        that wrote the index was interrupted, else None."""
        if not self.videos_pending:
            return None
        return (
            f"{len(self.videos):,} videos preprocessed, {self.videos_pending:,} not yet "
            "(interrupted run)"
        )

    @property
    def partial(self) -> str | None:
        """``"42 of 6,000 listed videos"`` when videos the dataset lists were missing, with
        :attr:`incomplete` when the run was interrupted; else None."""
        parts = [self.incomplete] if self.incomplete else []
        listed, found = self.videos_listed, self.videos_found
        if listed is not None and found is not None and found < listed:
            parts.append(f"{found:,} of {listed:,} listed videos")
        return "; ".join(parts) or None

    @property
    def label(self) -> str:
        """The name tables and reports show: ``"FF-c23"``, or ``"FF-c23 (partial: 42 of 6,000
        listed videos)"``."""
        return dataset_label(self.dataset, self.partial)

    def split(self, *names: str) -> list[VideoEntry]:
        """The videos of the given splits (``"all"``: every video), in index order; a name not
        in :data:`SPLIT_CHOICES` is a ``ValueError`` that lists them."""
        unknown = [n for n in names if n not in SPLIT_CHOICES]
        if unknown:
            raise ValueError(
                f"unknown split {unknown[0]!r}; valid splits: {', '.join(SPLIT_CHOICES)}"
            )
        if ALL_SPLITS in names:
            return list(self.videos)
        return [v for v in self.videos if v.split in names]

    def resolve(self, relative: str) -> Path:
        """Absolute path of a path stored in the index."""
        return self.root / relative

    @property
    def method_names(self) -> list[str]:
        """``methods`` if given, else the sorted methods found in the videos (``real`` first)."""
        if self.methods:
            return list(self.methods)
        found = sorted({v.method for v in self.videos} - {"real"})
        return (["real"] if any(v.label == 0 for v in self.videos) else []) + found

    @property
    def attribute_names(self) -> list[str]:
        """Every attribute key used by at least one video, sorted."""
        return sorted({k for v in self.videos for k in v.attributes})

    def to_json(self) -> dict[str, Any]:
        counts = {"videos_listed": self.videos_listed, "videos_found": self.videos_found}
        counts = {k: v for k, v in counts.items() if v is not None}
        latest = {"source_root": self.source_root, "videos_pending": self.videos_pending or None}
        latest = {k: v for k, v in latest.items() if v is not None}
        if latest:
            version = 4
        elif counts or self.crop is not None:
            version = 3
        else:
            version = 2 if any(v.clips is not None for v in self.videos) else 1
        data: dict[str, Any] = {
            "schema_version": version,
            "dataset": self.dataset,
            "task": self.task,
        }
        if self.methods:
            data["methods"] = list(self.methods)
        if self.split_info:
            data["split_info"] = dict(self.split_info)
        data.update(counts)
        if self.crop is not None:
            data["crop"] = self.crop.to_json()
        if self.preprocess is not None:
            data["preprocess"] = self.preprocess
        data.update(latest)
        data["videos"] = [v.to_json() for v in self.videos]
        return data


def dataset_label(name: str, partial: str | None) -> str:
    """``name``, with ``(partial: ...)`` when ``partial`` says how much of it is there."""
    return f"{name} (partial: {partial})" if partial else name


def _check_rel_path(value: Any, where: str, errors: list[str]) -> None:
    if not isinstance(value, str) or not value:
        errors.append(f"{where}: expected a non-empty relative path string, got {value!r}")
        return
    if "\\" in value or value.startswith("/"):
        errors.append(f"{where}: path {value!r} must be relative to the index, with '/'")
    elif len(value) > 1 and value[1] == ":":
        errors.append(f"{where}: path {value!r} looks like a Windows absolute path")


def _check_paths(items: list[Any], where: str, errors: list[str]) -> None:
    """Check every path of a list: a few C-speed scans of the list joined by NUL, item by item
    only when they find something that may be wrong (an empty, absolute or Windows path)."""
    try:
        joined = "\x00".join(items)
    except TypeError:
        joined = ""
    if (
        joined
        and ":" not in joined
        and "\\" not in joined
        and "\x00/" not in joined
        and "\x00\x00" not in joined
        and not joined.startswith(("/", "\x00"))
        and not joined.endswith("\x00")
    ):
        return
    for i, item in enumerate(items):
        _check_rel_path(item, f"{where}[{i}]", errors)


def _check_path_list(value: Any, where: str, n_frames: int, errors: list[str]) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        errors.append(f"{where}: expected a list of paths or null, got {type(value).__name__}")
        return
    if len(value) != n_frames:
        errors.append(f"{where}: has {len(value)} entries but the video has {n_frames} frames")
    _check_paths(value, where, errors)


def validate_index(
    data: Any, source: str = "<index>", root: Path | None = None, check_files: bool = False
) -> list[str]:
    """Every problem of a raw index mapping, as messages; empty when the index is valid.

    With ``check_files`` (and ``root``), every frame, landmark and mask file must exist.
    """
    errors: list[str] = []
    if not isinstance(data, dict):
        return [f"{source}: the top level must be a JSON object"]
    version = data.get("schema_version")
    if version not in SCHEMA_VERSIONS or isinstance(version, bool):
        allowed = " or ".join(map(str, SCHEMA_VERSIONS))
        errors.append(f"{source}: schema_version must be {allowed}, got {version!r}")
    if not isinstance(data.get("dataset"), str) or not data.get("dataset"):
        errors.append(f"{source}: 'dataset' must be a non-empty string")
    if data.get("task") not in TASKS:
        errors.append(f"{source}: 'task' must be one of {TASKS}, got {data.get('task')!r}")
    known_top = {
        "schema_version",
        "dataset",
        "task",
        "methods",
        "split_info",
        "preprocess",
        "videos",
    }
    known_top |= set(_VERSION_3) | set(_VERSION_4)
    for key in sorted(set(data) - known_top):
        errors.append(f"{source}: unknown top-level key {key!r}; allowed: {sorted(known_top)}")
    errors.extend(_version_3_errors(data, version, source))
    errors.extend(_version_4_errors(data, version, source))
    if data.get("preprocess") is not None and not isinstance(data["preprocess"], dict):
        errors.append(f"{source}: 'preprocess' must be an object (the face-crop settings)")
    videos = data.get("videos")
    if not isinstance(videos, list):
        errors.append(f"{source}: 'videos' must be a list")
        return errors
    seen: set[tuple[str, str]] = set()
    for n, video in enumerate(videos):
        where = f"{source}: videos[{n}]"
        if not isinstance(video, dict):
            errors.append(f"{where}: must be an object")
            continue
        if isinstance(video.get("id"), str):
            where = f"{source}: video {video.get('method')}/{video['id']}"
        missing = [k for k in _REQUIRED if k not in video]
        if missing:
            errors.append(f"{where}: missing keys {missing}")
            continue
        unknown = sorted(set(video) - set(_REQUIRED) - set(_OPTIONAL))
        if unknown:
            errors.append(f"{where}: unknown keys {unknown}")
        if not isinstance(video["id"], str) or not video["id"]:
            errors.append(f"{where}: 'id' must be a non-empty string")
        if video["label"] not in (0, 1) or isinstance(video["label"], bool):
            errors.append(f"{where}: 'label' must be 0 (real/bona fide) or 1 (fake/attack)")
        if not isinstance(video["method"], str) or not video["method"]:
            errors.append(f"{where}: 'method' must be a non-empty string")
        if video["split"] not in SPLITS:
            errors.append(f"{where}: 'split' must be one of {SPLITS}, got {video['split']!r}")
        frames = video["frames"]
        if not isinstance(frames, list) or not frames:
            errors.append(f"{where}: 'frames' must be a non-empty list")
            frames = []
        _check_paths(frames, f"{where}: frames", errors)
        _check_path_list(video["landmarks"], f"{where}: landmarks", len(frames), errors)
        _check_path_list(video["masks"], f"{where}: masks", len(frames), errors)
        attrs = video["attributes"]
        if not isinstance(attrs, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in attrs.items()
        ):
            errors.append(f"{where}: 'attributes' must map strings to strings")
        indices = video.get("frame_indices")
        if indices is not None and (
            not isinstance(indices, list)
            or len(indices) != len(frames)
            or not all(isinstance(i, int) for i in indices)
        ):
            errors.append(f"{where}: 'frame_indices' must list one integer per frame")
        if video.get("clips") is not None:
            if version == 1:
                errors.append(f"{where}: 'clips' needs schema_version 2")
            errors.extend(f"{where}: {e}" for e in _clip_errors(video["clips"], len(frames)))
        key = (video["method"], video["id"])
        if key in seen:
            errors.append(f"{where}: duplicate video (method {key[0]!r}, id {key[1]!r})")
        seen.add(key)
    if check_files and root is not None and not errors:
        errors.extend(_missing_files(videos, source, root))
    return errors


def _missing_files(videos: list[dict[str, Any]], source: str, root: Path) -> list[str]:
    """A message for each frame, landmark or mask file not found under ``root`` of the first
    video of a valid index that misses any."""
    errors: list[str] = []
    base = str(root)
    isfile = os.path.isfile
    for video in videos:
        for kind in ("frames", "landmarks", "masks"):
            for rel in video[kind] or []:
                if not isfile(f"{base}/{rel}"):
                    where = f"{source}: video {video['method']}/{video['id']}"
                    errors.append(f"{where}: {kind} file {rel!r} does not exist under {root}")
        if errors:
            break
    return errors


_VERSION_3 = ("videos_listed", "videos_found", "crop")


def _version_3_errors(data: dict[str, Any], version: Any, source: str) -> list[str]:
    """Problems of the top-level keys that schema version 3 adds."""
    present = [k for k in _VERSION_3 if k in data]
    if present and version in (1, 2):
        return [f"{source}: {', '.join(repr(k) for k in present)} needs schema_version 3"]
    errors = []
    for key in ("videos_listed", "videos_found"):
        value = data.get(key)
        if key in data and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            errors.append(f"{source}: {key!r} must be an integer >= 0, got {value!r}")
    if not errors and ("videos_listed" in data) != ("videos_found" in data):
        errors.append(f"{source}: 'videos_listed' and 'videos_found' go together")
    elif not errors and data.get("videos_found", 0) > data.get("videos_listed", 0):
        errors.append(f"{source}: 'videos_found' is more than 'videos_listed'")
    if "crop" in data:
        try:
            crop_from_mapping(data["crop"], f"{source}: crop")
        except ConfigError as exc:
            errors.append(str(exc))
    return errors


_VERSION_4 = ("source_root", "videos_pending")


def _version_4_errors(data: dict[str, Any], version: Any, source: str) -> list[str]:
    """Problems of the top-level keys that schema version 4 adds."""
    present = [k for k in _VERSION_4 if k in data]
    if present and version in (1, 2, 3):
        return [f"{source}: {', '.join(repr(k) for k in present)} needs schema_version 4"]
    errors = []
    root = data.get("source_root")
    if "source_root" in data and (not isinstance(root, str) or not root):
        errors.append(f"{source}: 'source_root' must be a non-empty path string, got {root!r}")
    pending = data.get("videos_pending")
    if "videos_pending" in data and (
        isinstance(pending, bool) or not isinstance(pending, int) or pending < 0
    ):
        errors.append(f"{source}: 'videos_pending' must be an integer >= 0, got {pending!r}")
    return errors


def _clip_errors(clips: Any, n_frames: int) -> list[str]:
    """Problems of a video's ``clips``: sorted, non-overlapping [start, length] inside frames."""
    shape = "'clips' must be a list of [first position, length] pairs of integers"
    if not isinstance(clips, list) or not all(
        isinstance(c, list)
        and len(c) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in c)
        for c in clips
    ):
        return [shape]
    end = 0
    for n, (start, length) in enumerate(clips):
        if length < 1 or start < end or start + length > n_frames:
            return [
                f"'clips'[{n}] = [{start}, {length}]: clips must be sorted, non-overlapping, "
                f"at least one frame long and inside the {n_frames} frames"
            ]
        end = start + length
    return []


def index_from_json(data: dict[str, Any], root: Path, source: str = "<index>") -> DatasetIndex:
    """Build a :class:`DatasetIndex` from a validated mapping (raises on any problem)."""
    errors = validate_index(data, source)
    if errors:
        shown = "\n  ".join(errors[:20])
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise DatasetIndexError(f"invalid dataset index:\n  {shown}{more}")
    videos = [VideoEntry(**v) for v in data["videos"]]
    return DatasetIndex(
        dataset=data["dataset"],
        task=data["task"],
        videos=videos,
        root=root,
        methods=data.get("methods"),
        split_info=dict(data.get("split_info") or {}),
        videos_listed=data.get("videos_listed"),
        videos_found=data.get("videos_found"),
        crop=crop_from_mapping(data.get("crop"), f"{source}: crop"),
        preprocess=data.get("preprocess"),
        source_root=data.get("source_root"),
        videos_pending=data.get("videos_pending"),
    )


def read_index(path: str | Path, check_files: bool = False) -> DatasetIndex:
    """Read and validate an index file; paths resolve against the file's directory."""
    path = Path(path)
    if not path.is_file():
        raise DatasetIndexError(f"{path}: dataset index not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetIndexError(f"{path}: not valid JSON: {exc}") from None
    root = path.resolve().parent
    index = index_from_json(data, root, source=str(path))
    if check_files:  # the structure is valid: only the files are left to check
        errors = _missing_files(data["videos"], str(path), root)
        if errors:
            raise DatasetIndexError(
                "dataset index points to missing files:\n  " + "\n  ".join(errors[:20])
            )
    return index


def check_complete(
    index: DatasetIndex | str | Path, *, allow_partial: bool = False, source: str | None = None
) -> str | None:
    """Raise :class:`IncompleteIndexError`, one line naming the file, when an interrupted
    preprocessing run wrote the index (a :class:`DatasetIndex`, or the path of an index file,
    read without validation), unless ``allow_partial``; then return what it lacks (tables name
    it partial). None for a complete index."""
    if isinstance(index, DatasetIndex):
        pending, done = index.videos_pending, len(index.videos)
        source = source or f"{index.root}/{index.dataset}.json"
    else:
        source = source or str(index)
        try:
            data = json.loads(Path(index).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # not there or not JSON: the reader says so
        if not isinstance(data, dict):
            return None
        pending, done = data.get("videos_pending"), len(data.get("videos") or [])
    if not isinstance(pending, int) or isinstance(pending, bool) or pending <= 0:
        return None
    if allow_partial:
        return f"{done:,} videos preprocessed, {pending:,} not yet (interrupted run)"
    raise IncompleteIndexError(
        f"{source}: incomplete dataset index: its preprocessing run was interrupted with "
        f"{done:,} videos done and {pending:,} not yet; re-run the same preprocess command to "
        "finish it, or pass --allow-partial to use what it holds (tables then name it partial)"
    )


def write_index(index: DatasetIndex, path: str | Path) -> None:
    """Validate and atomically write an index; its paths must be relative to ``path``'s folder."""
    data = index.to_json()
    errors = validate_index(data, str(path))
    if errors:
        raise DatasetIndexError(
            "refusing to write an invalid index:\n  " + "\n  ".join(errors[:20])
        )
    videos = data.pop("videos")  # valid: JSON values already, no NaN to replace
    text = json.dumps({**jsonable(data), "videos": videos}, indent=1, ensure_ascii=False,
                      allow_nan=False, default=str)  # fmt: skip
    atomic_write_text(path, text + "\n")  # as write_json writes it, without a pass per path


def rebase_index(index: DatasetIndex, new_root: str | Path) -> DatasetIndex:
    """The same index with every path made relative to ``new_root`` instead of ``index.root``.

    A path without ``.``, ``..`` or empty parts gets the relative path between the two roots
    as a prefix (string operations); other paths, and paths that enter ``new_root`` from an
    ``index.root`` above it, go through :func:`os.path.relpath` one by one."""
    new_root = Path(new_root).resolve()
    old_root = Path(index.root).resolve()
    head = os.path.relpath(old_root, new_root).replace(os.sep, "/")
    head = "" if head == "." else head + "/"
    below = os.path.relpath(new_root, old_root).replace(os.sep, "/")
    entering = None if below == "." or below.split("/")[0] == ".." else below.split("/")[0]

    def move(rel: str) -> str:
        return PurePosixPath(Path(os.path.relpath(old_root / rel, new_root)).as_posix()).as_posix()

    def moves(items: list[str] | None) -> list[str] | None:
        if items is None:
            return None
        try:
            joined = "\x00" + "\x00".join(items) + "\x00"
        except TypeError:
            return [move(p) for p in items]
        if _UNCLEAN_PART.search(joined) or (
            entering is not None
            and (f"\x00{entering}/" in joined or f"\x00{entering}\x00" in joined)
        ):
            return [move(p) for p in items]
        return [head + p for p in items]

    videos = [
        replace(v, frames=moves(v.frames), landmarks=moves(v.landmarks), masks=moves(v.masks))
        for v in index.videos
    ]
    return replace(index, videos=videos, root=new_root)


# an empty, ``.`` or ``..`` part of a path, in paths joined (and framed) by NUL
_UNCLEAN_PART = re.compile(r"[/\x00]\.{0,2}(?=[/\x00])")
