"""Import DeepfakeBench's own dataset JSON files, so its users keep their preprocessed frames.

Their schema (``preprocessing/rearrange.py`` of DeepfakeBench)::

    {"<dataset>": {"<label name>": {"train"|"val"|"test": {["<comp>":] {"<video>": {
        "label": "<label name>", "frames": ["<path>/frames/000.png", ...]}}}}}}

Label names containing ``real`` (FF-real, CelebDFv2_real, DFD_real, ...) are bona fide unless
``label_map`` says otherwise. A video's frames named by number (``012.png``) are sorted by it,
as DeepfakeBench does before cutting clips of consecutive entries. Landmarks and masks are taken from the sibling ``landmarks/``
(``.npy``) and ``masks/`` folders when every file exists. A video listed in several splits is
kept in one only (test > val > train), never copied into train. Every frame must exist under
``data_root`` (a wrong root is an error naming it and examples); ``allow_missing_frames`` drops
the missing ones instead, logs them and records the count in ``split_info["missing_frames"]``.

The index is named after what the user calls the dataset (``dataset``; :func:`read_any_index`
passes the file's stem, the name ``<data_root>/<name>.json`` was found by), not the JSON's
top-level key, so predictions files carry that name. An attributes CSV (``attributes``) adds
fairness attributes at import time: its ``attributes_key`` column holds ``<label name>/<video>``
(``FF-DF/000_003``), ``<method>/<video>`` or the video id alone; a video without a row is
counted and logged, and a CSV that matches no video is an error.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from fairforensics.preprocessing.attributes import read_attributes_csv
from fairforensics.preprocessing.datasets.base import DatasetLayoutError
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, read_index

logger = logging.getLogger(__name__)

SPLIT_NAMES = {"train": "train", "val": "val", "validation": "val", "test": "test"}
_PRECEDENCE = ("test", "val", "train")


def _label_of(name: str, label_map: dict[str, int] | None) -> int:
    if label_map and name in label_map:
        return int(label_map[name])
    return 0 if "real" in name.lower() else 1


def _to_relative(path: str, data_root: Path, strip_prefix: str | None) -> str:
    text = path.replace("\\", "/")
    if strip_prefix:
        prefix = strip_prefix.replace("\\", "/").rstrip("/") + "/"
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if PurePosixPath(text).is_absolute() or PureWindowsPath(text).drive:
        try:
            text = Path(text).relative_to(data_root.resolve()).as_posix()
        except ValueError:
            raise DatasetLayoutError(
                f"frame path {path!r} is absolute and not under {data_root}; pass strip_prefix"
            ) from None
    return text.removeprefix("./")


def _frame_order(frames: list[str]) -> list[str]:
    """Frames by number when every file is named by one (``012.png``), as DeepfakeBench sorts
    them before cutting clips of consecutive entries; otherwise as listed."""
    stems = [PurePosixPath(f).stem for f in frames]
    if all(s.isdigit() for s in stems):
        return [f for _, f in sorted(zip((int(s) for s in stems), frames, strict=True))]
    return frames


def _sibling(frames: list[str], folder: str, suffix: str, root: Path) -> list[str] | None:
    out = []
    for f in frames:
        p = PurePosixPath(f)
        parts = list(p.parts)
        if "frames" not in parts:
            return None
        parts[len(parts) - 1 - parts[::-1].index("frames")] = folder
        q = PurePosixPath(*parts).with_suffix(suffix)
        if not (root / q).is_file():
            return None
        out.append(str(q))
    return out


def import_deepfakebench_json(
    json_path: str | Path,
    data_root: str | Path,
    *,
    dataset: str | None = None,
    compression: str = "c23",
    label_map: dict[str, int] | None = None,
    strip_prefix: str | None = None,
    task: str = "deepfake",
    attributes: str | Path | None = None,
    attributes_key: str = "video",
    allow_missing_frames: bool = False,
    check_frames: bool = True,
) -> DatasetIndex:
    """A :class:`DatasetIndex` rooted at ``data_root`` from a DeepfakeBench JSON file.

    ``dataset`` names the index (default: the JSON's top-level key); ``attributes`` is an
    optional CSV of per-video attributes keyed by its ``attributes_key`` column (module doc).
    ``check_frames=False`` keeps every listed frame unchecked (``fairforensics verify``).
    """
    json_path, data_root = Path(json_path), Path(data_root)
    try:
        data = json.loads(json_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetLayoutError(f"{json_path}: cannot read DeepfakeBench JSON: {exc}") from None
    if not isinstance(data, dict) or len(data) != 1:
        raise DatasetLayoutError(f"{json_path}: expected one top-level dataset name")
    ((name, labels),) = data.items()
    if not isinstance(labels, dict):
        raise DatasetLayoutError(f"{json_path}: {name!r} must map label names to splits")
    entries: dict[tuple[str, str], VideoEntry] = {}
    label_names: dict[tuple[str, str], str] = {}
    dropped = 0
    for label_name, splits in labels.items():
        label = _label_of(label_name, label_map)
        method = "real" if label == 0 else label_name
        for split_name, level in (splits or {}).items():
            split = SPLIT_NAMES.get(split_name)
            if split is None:
                logger.warning(
                    "%s: %s/%s: unknown split, skipped", json_path, label_name, split_name
                )
                continue
            videos = _videos_of(level, compression)
            for vid, info in videos.items():
                frames = _frame_order(
                    [_to_relative(f, data_root, strip_prefix) for f in info.get("frames") or []]
                )
                if not frames:
                    logger.warning("%s: video %s has no frames; skipped", json_path, vid)
                    continue
                entry = VideoEntry(
                    id=str(vid), label=label, method=method, split=split, frames=frames,
                    landmarks=_sibling(frames, "landmarks", ".npy", data_root),
                    masks=_sibling(frames, "masks", ".png", data_root),
                )  # fmt: skip
                key = entry.key
                if key in entries:
                    old = entries[key]
                    if _PRECEDENCE.index(split) < _PRECEDENCE.index(old.split):
                        entries[key] = entry
                        label_names[key] = label_name
                    dropped += 1
                    continue
                entries[key] = entry
                label_names[key] = label_name
    if not entries:
        raise DatasetLayoutError(f"{json_path}: no video with frames (compression {compression!r})")
    info = {"source": f"DeepfakeBench JSON {json_path.name}"}
    missing = (
        _drop_missing_frames(entries, json_path, data_root, allow_missing_frames)
        if check_frames
        else None
    )
    if missing:
        info["missing_frames"] = missing
    if dropped:
        info["dedup"] = (
            f"{dropped} repeated listings dropped; each video kept once (test > val > train)"
        )
        logger.warning("%s: %s", json_path, info["dedup"])
    videos = list(entries.values())
    if attributes is not None:
        _attach_attributes(videos, label_names, Path(attributes), attributes_key)
    return DatasetIndex(
        dataset=dataset or name, task=task, videos=videos, root=data_root,
        split_info={**{s: "deepfakebench" for s in ("train", "val", "test")}, **info},
    )  # fmt: skip


def _attach_attributes(
    videos: list[VideoEntry], label_names: dict[tuple[str, str], str], csv_path: Path, key: str
) -> None:
    """Add each video's row of ``csv_path`` (module doc) to its ``attributes``."""
    try:
        table = read_attributes_csv(csv_path, key)
    except (OSError, ValueError) as exc:
        raise DatasetLayoutError(str(exc)) from None
    hits = 0
    for v in videos:
        keys = (f"{label_names[v.key]}/{v.id}", f"{v.method}/{v.id}", v.id)
        row = next((table[k] for k in keys if k in table), None)
        if row is not None:
            v.attributes.update(row)
            hits += 1
    if hits == 0:
        raise DatasetLayoutError(
            f"{csv_path}: no {key!r} value matches a video (use <label name>/<video>, "
            f"<method>/<video> or the video id, e.g. {label_names[videos[0].key]}/{videos[0].id})"
        )
    if hits < len(videos):
        logger.warning(
            "%s: %d of %d videos have no attributes row", csv_path, len(videos) - hits, len(videos)
        )
    logger.info("%s: attributes for %d of %d videos", csv_path, hits, len(videos))


def _drop_missing_frames(
    entries: dict[tuple[str, str], VideoEntry], json_path: Path, data_root: Path, allow: bool
) -> str | None:
    """Check that every frame exists; raise, or (``allow``) drop the missing ones and say so."""
    total = sum(len(v.frames) for v in entries.values())
    missing: list[str] = []
    for key, v in list(entries.items()):
        keep = [i for i, f in enumerate(v.frames) if (data_root / f).is_file()]
        if len(keep) == len(v.frames):
            continue
        kept = set(keep)
        missing += [f for i, f in enumerate(v.frames) if i not in kept]
        if not allow:
            continue
        if not keep:
            del entries[key]
            continue
        v.frames = [v.frames[i] for i in keep]
        v.landmarks = None if v.landmarks is None else [v.landmarks[i] for i in keep]
        v.masks = None if v.masks is None else [v.masks[i] for i in keep]
    if not missing:
        return None
    examples = ", ".join(missing[:3])
    if not allow:
        raise DatasetLayoutError(
            f"{json_path}: {len(missing)} of {total} frames not found under --data-root "
            f"{data_root} (e.g. {examples}); pass the folder the JSON's frame paths start from "
            "(and --strip-prefix for absolute paths), or --allow-missing-frames to drop them"
        )
    note = f"{len(missing)} of {total} frames not found under {data_root} were dropped"
    logger.warning("%s: %s (e.g. %s)", json_path, note, examples)
    if not entries:
        raise DatasetLayoutError(f"{json_path}: no frame found under {data_root} (e.g. {examples})")
    return note


def _videos_of(level: Any, compression: str) -> dict[str, dict[str, Any]]:
    """The ``video -> info`` mapping under a split, with or without a compression level."""
    if not isinstance(level, dict) or not level:
        return {}
    first = next(iter(level.values()))
    if isinstance(first, dict) and "frames" in first:
        return level
    inner = level.get(compression)
    return inner if isinstance(inner, dict) else {}


def read_any_index(
    path: str | Path, data_root: str | Path | None = None, **kwargs: Any
) -> DatasetIndex:
    """Read our index, or import a DeepfakeBench JSON (``data_root``: what its paths start from).

    An imported JSON is named after the file (``FF-c23.json`` -> ``FF-c23``) unless ``dataset``
    is given.
    """
    path = Path(path)
    try:
        head = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetLayoutError(f"{path}: cannot read: {exc}") from None
    if isinstance(head, dict) and "schema_version" in head:
        return read_index(path)
    kwargs.setdefault("dataset", path.stem)
    return import_deepfakebench_json(path, data_root or path.parent, **kwargs)


def rebase_index(index: DatasetIndex, new_root: str | Path) -> None:
    """Make every path of ``index`` relative to ``new_root`` (an ancestor of ``index.root``)."""
    new_root = Path(new_root).resolve()
    try:
        prefix = Path(index.root).resolve().relative_to(new_root).as_posix()
    except ValueError:
        raise DatasetLayoutError(
            f"the index must be written in {index.root} or a folder above it, not {new_root}"
        ) from None
    if prefix == ".":
        return

    def move(paths: list[str] | None) -> list[str] | None:
        return None if paths is None else [f"{prefix}/{p}" for p in paths]

    for v in index.videos:
        v.frames = move(v.frames) or []
        v.landmarks, v.masks = move(v.landmarks), move(v.masks)
    index.root = new_root
