"""The videos a :class:`preprocessing.frames.FrameDataset` reads, held as arrays.

A dataset of 3e6 frames kept as Python objects (one per frame, or the index's own per-frame
strings) costs hundreds of bytes a frame, and every DataLoader worker that touches them copies
their pages (reference counts are writes). :class:`VideoTable` holds what a sample needs in a
few numpy arrays and one bytes buffer per kind of path, which forked workers share without
copying: per video the index, label, method and attribute codes and the id; per frame the path
(and the landmarks and mask paths when they are read) and the frame number in the source video.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from fairforensics.preprocessing.index import DatasetIndex, VideoEntry


class StringTable:
    """Strings as one UTF-8 buffer and their offsets (no Python object per string)."""

    __slots__ = ("buf", "off")

    def __init__(self, strings: Iterable[str]) -> None:
        listed = list(strings)
        joined = "".join(listed)
        if joined.isascii():  # one character a byte: no bytes object per string
            self.buf = joined.encode()
        else:
            listed = [s.encode() for s in listed]  # type: ignore[misc]
            self.buf = b"".join(listed)  # type: ignore[arg-type]
        self.off = np.zeros(len(listed) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, listed), np.int64, len(listed)), out=self.off[1:])

    def __len__(self) -> int:
        return len(self.off) - 1

    def __getitem__(self, i: int) -> str:
        return self.buf[self.off[i] : self.off[i + 1]].decode()

    @property
    def nbytes(self) -> int:
        """Bytes held (buffer and offsets)."""
        return len(self.buf) + self.off.nbytes


def _codes(values: Sequence[str | None]) -> tuple[np.ndarray, list[str]]:
    """Integer codes of ``values`` (-1 for ``None``) and the names, in order of appearance."""
    names: dict[str, int] = {}
    codes = np.fromiter(
        (-1 if v is None else names.setdefault(v, len(names)) for v in values),
        np.int32,
        len(values),
    )
    return codes, list(names)


class VideoTable:
    """Per-video and per-frame columns of ``videos`` ((index, entry) pairs, in dataset order).

    ``landmarks``/``masks``: also pack those paths (only the detectors that read them need them).
    """

    def __init__(
        self,
        videos: Sequence[tuple[DatasetIndex, VideoEntry]],
        *,
        landmarks: bool = False,
        masks: bool = False,
    ) -> None:
        slots: dict[int, int] = {}
        self.roots: list[Path] = []
        self.datasets: list[str] = []
        for index, _ in videos:
            if id(index) not in slots:
                slots[id(index)] = len(self.roots)
                self.roots.append(index.root)
                self.datasets.append(index.dataset)
        n = len(videos)
        entries = [v for _, v in videos]
        self.index_of = np.fromiter((slots[id(ix)] for ix, _ in videos), np.int32, n)
        self.label = np.fromiter((v.label for v in entries), np.int64, n)
        self.method, self.methods = _codes([v.method for v in entries])
        self.ids = StringTable(v.id for v in entries)
        counts = np.fromiter((len(v.frames) for v in entries), np.int64, n)
        self.first = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=self.first[1:])
        self.frames = StringTable(f for v in entries for f in v.frames)
        self.frame_no = np.concatenate(
            [np.asarray(v.frame_indices or range(len(v.frames)), np.int32) for v in entries]
            or [np.zeros(0, np.int32)]
        )
        if len(self.frame_no) != self.first[-1]:
            raise ValueError("frame_indices of a video do not match its frames")
        self.has_landmarks = np.fromiter((bool(v.landmarks) for v in entries), bool, n)
        self.has_masks = np.fromiter((bool(v.masks) for v in entries), bool, n)
        self.landmarks = self._per_frame(entries, "landmarks") if landmarks else None
        self.masks = self._per_frame(entries, "masks") if masks else None
        self.attr_keys = sorted({k for v in entries for k in v.attributes})
        self.attr_codes = np.full((n, len(self.attr_keys)), -1, dtype=np.int32)
        self.attr_values: list[list[str]] = []
        for j, key in enumerate(self.attr_keys):
            self.attr_codes[:, j], names = _codes([v.attributes.get(key) for v in entries])
            self.attr_values.append(names)
        # each video's attribute keys in its own order (a sample's dict keeps that order)
        orders: dict[tuple[int, ...], int] = {}
        self.attr_order = np.fromiter(
            (
                orders.setdefault(tuple(self.attr_keys.index(k) for k in v.attributes), len(orders))
                for v in entries
            ),
            np.int32,
            n,
        )
        self.attr_orders = list(orders)

    def _per_frame(self, entries: Sequence[VideoEntry], name: str) -> StringTable:
        """The ``name`` paths of every frame ('' where a video has none)."""

        def paths(v: VideoEntry) -> Iterable[str]:
            listed = getattr(v, name) or []
            return (listed[p] if p < len(listed) else "" for p in range(len(v.frames)))

        return StringTable(p for v in entries for p in paths(v))

    def __len__(self) -> int:
        return len(self.index_of)

    def n_frames(self, vid: int) -> int:
        """Frames stored for video ``vid``."""
        return int(self.first[vid + 1] - self.first[vid])

    def frame(self, vid: int, pos: int) -> str:
        """Path (relative to its index) of frame ``pos`` of video ``vid``."""
        return self.frames[int(self.first[vid]) + pos]

    def landmark(self, vid: int, pos: int) -> str:
        """Landmarks path of frame ``pos`` of video ``vid`` (built with ``landmarks``)."""
        assert self.landmarks is not None
        return self.landmarks[int(self.first[vid]) + pos]

    def mask(self, vid: int, pos: int) -> str:
        """Mask path of frame ``pos`` of video ``vid`` (built with ``masks``)."""
        assert self.masks is not None
        return self.masks[int(self.first[vid]) + pos]

    def resolve(self, vid: int, relative: str) -> Path:
        """Absolute path of a path of video ``vid``'s index."""
        return self.roots[self.index_of[vid]] / relative

    def dataset(self, vid: int) -> str:
        return self.datasets[self.index_of[vid]]

    def method_of(self, vid: int) -> str:
        return self.methods[self.method[vid]]

    def video_id(self, vid: int) -> str:
        return self.ids[vid]

    def frame_number(self, vid: int, pos: int) -> int:
        """Frame number in the source video (the position where the index has none)."""
        return int(self.frame_no[int(self.first[vid]) + pos])

    def attributes(self, vid: int) -> dict[str, str]:
        """The attribute map of video ``vid``."""
        codes = self.attr_codes[vid]
        return {
            self.attr_keys[j]: self.attr_values[j][codes[j]]
            for j in self.attr_orders[self.attr_order[vid]]
        }

    def attribute_codes(self, key: str, videos: np.ndarray) -> np.ndarray:
        """Codes of attribute ``key`` for each of ``videos``: 0 where missing, else 1 + the
        value's position in ``attr_values`` (int32, one per video given)."""
        if key not in self.attr_keys:
            return np.zeros(len(videos), dtype=np.int32)
        return self.attr_codes[videos, self.attr_keys.index(key)] + 1

    def attribute_column(self, key: str, videos: np.ndarray) -> np.ndarray:
        """Value of attribute ``key`` for each of ``videos`` ('' where missing), dtype object."""
        if key not in self.attr_keys:
            return np.full(len(videos), "", dtype=object)
        j = self.attr_keys.index(key)
        names = np.array([*self.attr_values[j], ""], dtype=object)
        return names[self.attr_codes[videos, j]]  # code -1 picks the trailing ''

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays and buffers (not the few name lists)."""
        arrays = [self.index_of, self.label, self.method, self.first, self.frame_no]
        arrays += [self.has_landmarks, self.has_masks, self.attr_codes, self.attr_order]
        tables = [t for t in (self.ids, self.frames, self.landmarks, self.masks) if t is not None]
        return sum(a.nbytes for a in arrays) + sum(t.nbytes for t in tables)
