"""A benchmark definition: the test sets a board ranks on, each with its index's SHA-256 and its
test items (method, video id, frames scored), so that a bundle scored on other items is refused.

File format (JSON, ``configs/benchmarks/<name>.json`` when shipped)::

    {"format": "fairforensics-benchmark/1", "name": ..., "description": ..., "source": ...,
     "test_sets": [{"name": "FF-c23", "index_sha256": "<hex>" | null, "split": "test",
                    "frame_num": 32 | null, "items": [[method, video_id, frames | null], ...] | null,
                    "note": ...}, ...]}

A null is *not pinned*: the checks compare only what is pinned. ``index_sha256`` null: any
index of these items is the benchmark's; ``items`` null: any videos; an item's ``frames`` null:
any number of rows for that video. The shipped definitions pin what the project publishes
without the data (FF++'s official test ids); ``fairforensics board define`` pins everything
from the indexes at hand.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fairforensics.configs.loader import CONFIG_DIR
from fairforensics.evaluation.provenance import file_sha256
from fairforensics.preprocessing.files import atomic_write_text

DEFINITION_FORMAT = "fairforensics-benchmark/1"
SHIPPED_DIR = CONFIG_DIR / "benchmarks"


@dataclass(frozen=True)
class SetItems:
    """A test set's videos as arrays (frames -1 where not pinned)."""

    method: np.ndarray  # object array of str
    video_id: np.ndarray  # object array of str
    frames: np.ndarray  # int64, -1: not pinned

    def __len__(self) -> int:
        return len(self.video_id)


@dataclass(frozen=True)
class BenchmarkSet:
    """One test set of a benchmark; ``None`` fields are not pinned."""

    name: str
    index_sha256: str | None = None
    items: SetItems | None = None
    frame_num: int | None = None
    split: str = "test"
    note: str = ""


@dataclass(frozen=True)
class Definition:
    """A benchmark: its name and test sets (in their order)."""

    name: str
    test_sets: dict[str, BenchmarkSet]
    description: str = ""
    source: str = ""
    sha256: str = ""  # of the definition's JSON data: what cached checks are keyed by


def shipped_definitions() -> list[str]:
    """Names of the definitions shipped in ``configs/benchmarks/``."""
    return sorted(p.stem for p in SHIPPED_DIR.glob("*.json"))


def load_definition(ref: str | Path) -> Definition:
    """The definition ``ref`` names: a JSON file, or a shipped name (a ``ValueError`` lists
    them)."""
    path = Path(ref)
    if not path.is_file():
        if str(ref) not in shipped_definitions():
            raise ValueError(
                f"--benchmark {ref}: no such file nor shipped benchmark "
                f"(shipped: {', '.join(shipped_definitions())})"
            )
        path = SHIPPED_DIR / f"{ref}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: unreadable benchmark definition ({exc})") from None
    return parse_definition(data, str(path))


def parse_definition(data: Any, source: str = "<definition>") -> Definition:
    """A :class:`Definition` from its JSON data; a wrong shape is a ``ValueError`` naming it."""
    if not isinstance(data, dict) or data.get("format") != DEFINITION_FORMAT:
        raise ValueError(f"{source}: not a {DEFINITION_FORMAT} file")
    sets: dict[str, BenchmarkSet] = {}
    for k, entry in enumerate(data.get("test_sets") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ValueError(f"{source}: test_sets[{k}] has no name")
        items = entry.get("items")
        if items is not None:
            bad = [r for r in items if not (isinstance(r, list) and len(r) == 3)]
            if bad:
                raise ValueError(
                    f"{source}: {entry['name']}: an item is [method, video_id, frames], got {bad[0]}"
                )
            items = SetItems(
                np.array([str(r[0]) for r in items], dtype=object),
                np.array([str(r[1]) for r in items], dtype=object),
                np.array([-1 if r[2] is None else int(r[2]) for r in items], dtype=np.int64),
            )
        sets[entry["name"]] = BenchmarkSet(
            entry["name"],
            entry.get("index_sha256"),
            items,
            entry.get("frame_num"),
            entry.get("split", "test"),
            entry.get("note", ""),
        )
    if not sets:
        raise ValueError(f"{source}: no test sets")
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return Definition(str(data.get("name", "")), sets, data.get("description", ""),
                      data.get("source", ""), digest)  # fmt: skip


def set_json(
    name: str,
    items: Sequence[tuple[str, str, int | None]] | None,
    *,
    index_sha256: str | None = None,
    split: str = "test",
    frame_num: int | None = None,
    note: str = "",
) -> dict[str, Any]:
    """One test set as the definition's JSON (items sorted by method, then video id)."""
    rows = None if items is None else [list(r) for r in sorted(items, key=lambda r: r[:2])]
    return {"name": name, "index_sha256": index_sha256, "split": split, "frame_num": frame_num,
            "note": note, "items": rows}  # fmt: skip


def definition_json(
    name: str, test_sets: list[dict[str, Any]], *, description: str = "", source: str = ""
) -> dict[str, Any]:
    """A whole definition as JSON data."""
    return {"format": DEFINITION_FORMAT, "name": name, "description": description,
            "source": source, "test_sets": test_sets}  # fmt: skip


def write_definition(data: dict[str, Any], path: str | Path) -> None:
    """Write a definition (one item a line, so that diffs stay readable), atomically."""
    sets = []
    for entry in data["test_sets"]:
        head = json.dumps({k: v for k, v in entry.items() if k != "items"})[:-1]
        if entry.get("items") is None:
            sets.append(head + ', "items": null}')
        else:
            rows = ",\n    ".join(json.dumps(r) for r in entry["items"])
            sets.append(f'{head}, "items": [\n    {rows}\n  ]}}')
    top = json.dumps({k: v for k, v in data.items() if k != "test_sets"}, indent=1)[:-2]
    atomic_write_text(path, top + ',\n "test_sets": [\n  ' + ",\n  ".join(sets) + "\n ]\n}\n")


def definition_from_indexes(
    names: Sequence[str],
    data_root: str | Path,
    *,
    name: str,
    split: str = "test",
    frame_num: int | None = 32,
) -> dict[str, Any]:
    """A definition pinning every listed index: its SHA-256 and the videos of ``split`` with
    the rows a frame detector writes for each (``frame_num`` evenly spaced frames, all when
    None: :func:`preprocessing.frames.sample_positions`, as ``fairforensics test`` samples)."""
    from fairforensics.preprocessing.frames import sample_positions
    from fairforensics.preprocessing.resolve import resolve_index, resolve_index_path

    sets = []
    for index_name in names:
        path = resolve_index_path(index_name, data_root)
        index = resolve_index(index_name, data_root)
        videos = index.split(split)
        if not videos:
            raise ValueError(f"{path}: no video in split {split!r}")
        items = [
            (v.method, v.id, len(v.frames) if frame_num is None
             else len(sample_positions(len(v.frames), frame_num)))
            for v in videos
        ]  # fmt: skip
        sets.append(set_json(str(index_name), items, index_sha256=file_sha256(path),
                                  split=split, frame_num=frame_num))  # fmt: skip
    source = f"fairforensics board define from the indexes under {Path(data_root).name or '.'}"
    return definition_json(name, sets, source=source)
