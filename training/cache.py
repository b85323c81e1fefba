"""Optional packed frame cache: a split's frames decoded once into a uint8 memory-mapped array.

Later epochs (and runs) read frames from the array instead of decoding PNG/JPEG files. The
cache file is keyed by a hash of the frame paths, their sizes and modification times, and the
resolution, so a changed dataset builds a new cache. A frame that cannot be decoded is marked
invalid and read (and reported) through the normal path.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from tqdm import tqdm

from fairforensics.preprocessing.files import write_json
from fairforensics.preprocessing.frames import read_rgb

log = logging.getLogger(__name__)


class PackedCache:
    """Frames of one :class:`preprocessing.frames.FrameDataset` at its resolution, memory-mapped."""

    def __init__(
        self,
        path: Path,
        keys: list[tuple[int, int]],
        sizes: np.ndarray,
        valid: np.ndarray,
        resolution: int,
    ) -> None:
        self.path = path
        self.slot = {k: i for i, k in enumerate(keys)}
        self.sizes = sizes
        self.valid = valid
        self.resolution = resolution
        self._arr: np.ndarray | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_arr"] = None  # each worker opens its own map instead of pickling the data
        return state

    def get(self, video: int, pos: int) -> tuple[np.ndarray, tuple[int, int]] | None:
        """(frame at the resolution, stored (h, w)), or None when not cached / not decodable."""
        slot = self.slot.get((video, pos))
        if slot is None or not self.valid[slot]:
            return None
        if self._arr is None:
            r = self.resolution
            self._arr = np.memmap(
                self.path, dtype=np.uint8, mode="r", shape=(len(self.slot), r, r, 3)
            )
        return np.array(self._arr[slot]), (int(self.sizes[slot, 0]), int(self.sizes[slot, 1]))

    @classmethod
    def build(cls, dataset: Any, cache_dir: str | Path, name: str) -> PackedCache:
        """Open the cache of ``dataset`` in ``cache_dir``, building it first if needed."""
        keys = dataset.frame_keys()
        paths = [dataset.videos[v][0].resolve(dataset.videos[v][1].frames[p]) for v, p in keys]
        digest = hashlib.sha1(str(dataset.resolution).encode())
        for p in paths:
            try:
                st = p.stat()
                digest.update(f"{p}|{st.st_size}|{st.st_mtime_ns}\n".encode())
            except OSError:
                digest.update(f"{p}|missing\n".encode())
        stem = Path(cache_dir) / f"{name}-{digest.hexdigest()[:16]}"
        data, meta = stem.with_suffix(".u8"), stem.with_suffix(".json")
        res = dataset.resolution
        if not meta.is_file():
            data.parent.mkdir(parents=True, exist_ok=True)
            tmp = data.with_suffix(f".u8.{os.getpid()}.tmp")
            out = np.memmap(tmp, dtype=np.uint8, mode="w+", shape=(len(keys), res, res, 3))
            sizes = np.zeros((len(keys), 2), dtype=np.int64)
            valid = np.zeros(len(keys), dtype=bool)
            for i, path in enumerate(tqdm(paths, desc=f"cache {name}", leave=False, disable=None)):
                img = read_rgb(str(path))
                if img is None:
                    log.warning(
                        "cache %s: cannot decode %s; it will be read (and reported) at train time",
                        name,
                        path,
                    )
                    continue
                sizes[i] = img.shape[:2]
                if img.shape[:2] != (res, res):
                    interp = cv2.INTER_AREA if max(img.shape[:2]) > res else cv2.INTER_CUBIC
                    img = cv2.resize(img, (res, res), interpolation=interp)
                out[i] = img
                valid[i] = True
            out.flush()
            del out
            os.replace(tmp, data)
            write_json(meta, {"sizes": sizes, "valid": valid}, indent=None)
        info = json.loads(meta.read_text(encoding="utf-8"))
        return cls(
            data,
            keys,
            np.asarray(info["sizes"], dtype=np.int64),
            np.asarray(info["valid"], dtype=bool),
            res,
        )
