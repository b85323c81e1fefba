"""The dataset over one or more dataset indexes, and the collate function that makes batches.

A sample is one frame of a video; each video contributes ``frame_num`` frames spread evenly
over its stored frames (DeepfakeBench's "32 frames per video", paper 002 Sec. 4.1, without its
flaw of always taking the first N). For a video detector (``clip_size``), a sample is a clip of
``clip_size`` consecutive frames, ``frame_num // clip_size`` clips per video placed by
:func:`preprocessing.clips.clip_windows` (the runs recorded by ``sampling.mode: clips``, else
DeepfakeBench v2's rule on the frame list; a new start drawn every epoch in training), with one
augmentation for the whole clip (:func:`apply_augment_clip`). Images leave the dataset as uint8
tensors ([3, H, W], or [T, 3, H, W] for clips); :func:`to_device` moves a batch to the device
and normalises it with the detector's mean/std there, which keeps workers cheap.

The keys a detector lists in ``requires`` (see :mod:`detectors.base`) are produced here:
``mask``/``has_mask``, ``landmarks``, ``method_label``, ``identity``, ``views``, ``pairs``/``pair_index``
(with ``random_pairs``: the real partner drawn at random instead of from the same source),
``method_groups`` (a real frame followed by the same frame of one fake of every training method of
the same identity: LSDA's domain groups),
``blend:<name>`` (with ``xray`` when the generator makes one; blends are made from real frames
only, or from every frame, real or fake, when ``blend_all`` is also required: DeepfakeBench's
FWA) and ``pixel_map``. A frame that
cannot be used (the image, or the landmarks file or mask the detector needs, is unreadable or
malformed) is logged with what failed and replaced by the nearest usable frame of the same video;
when no frame of the video can be used the sample is skipped with the failures as its reason. Both
are reported through the batch keys ``_replaced`` and ``_skipped`` so the trainer can count them
per epoch.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import cv2
import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info

from fairforensics.preprocessing.albu_seed import entropy_pool, first_state, seed_pipeline
from fairforensics.preprocessing.blending import (
    BlendingError,
    NearestLandmarks,
    generate,
    needs_partner,
)
from fairforensics.preprocessing.clips import clip_windows, has_gaps, video_runs
from fairforensics.preprocessing.frame_table import VideoTable
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry

log = logging.getLogger(__name__)

SAMPLE_KEYS = frozenset(
    {
        "mask",
        "landmarks",
        "method_label",
        "identity",
        "views",
        "pairs",
        "random_pairs",
        "pixel_map",
        "blend_all",
        "method_groups",
    }
)


class TrainDataError(ValueError):
    """The datasets cannot give what the detector requires (empty split, no landmarks, ...)."""


class UnusableFrame(ValueError):
    """A frame cannot be used: its image, landmarks file or mask is unreadable or malformed (the
    message says which file and why)."""


def read_landmarks(path: Any, name: str) -> np.ndarray:
    """The 68x2 float32 landmarks saved at ``path`` (``name``: how messages call the file);
    :class:`UnusableFrame` saying why when the file cannot be read or holds another shape."""
    try:
        points = np.load(path)
    except (OSError, ValueError, EOFError) as exc:  # EOFError: an empty file
        raise UnusableFrame(f"unreadable landmarks file {name}: {exc}") from None
    if points.shape != (68, 2):
        raise UnusableFrame(f"landmarks file {name} holds shape {points.shape}, not (68, 2)")
    return points.astype(np.float32)


def sample_positions(n_frames: int, frame_num: int) -> list[int]:
    """``frame_num`` positions spread evenly over ``n_frames`` (all if there are fewer)."""
    return list(_positions(n_frames, frame_num))


@lru_cache(maxsize=4096)
def _positions(n_frames: int, frame_num: int) -> tuple[int, ...]:
    if frame_num >= n_frames:
        return tuple(range(n_frames))
    return tuple(sorted({int(round(x)) for x in np.linspace(0, n_frames - 1, frame_num)}))


def identity_of(index: DatasetIndex, video: VideoEntry) -> str:
    """``dataset/identity`` of a video: the index's subject id, else the video id."""
    return f"{index.dataset}/{video.identity or video.id}"


def sample_seed(*parts: int) -> int:
    """A 32-bit seed that depends on every part (seed, epoch, index, view): the first word of
    ``np.random.SeedSequence([p & 0xFFFFFFFF for p in parts]).generate_state(1)``, computed by
    numpy's algorithm in Python (:func:`preprocessing.albu_seed.entropy_pool`; cheaper than
    numpy's call in a DataLoader worker)."""
    return first_state(entropy_pool([int(p) & 0xFFFFFFFF for p in parts]))


def read_rgb(path: str) -> np.ndarray | None:
    """A frame as uint8 RGB, or ``None`` when it is missing or unreadable (decoded to RGB by
    OpenCV: the pixels of a BGR decode and a channel swap, without the swap's copy)."""
    return cv2.imread(path, cv2.IMREAD_COLOR_RGB)


def opencv_threads_for_loader(num_workers: int) -> None:
    """OpenCV on one thread when DataLoader workers decode (they are the parallelism; a pool
    per worker only oversubscribes the cores). Call it in the main process before the workers
    start: they inherit the setting, whereas changing OpenCV's thread pool inside a forked
    worker can deadlock on the parent's pool."""
    if num_workers > 0:
        cv2.setNumThreads(1)


def method_names_of(indexes: Sequence[DatasetIndex], split: str | None = None) -> list[str]:
    """Sorted fake/attack method names of the indexes (the classes 1..K of ``method_label``)."""
    names: set[str] = set()
    for index in indexes:
        for v in index.videos if split is None else index.split(split):
            if v.label == 1:
                names.add(v.method)
    return sorted(names)


@dataclass(frozen=True, slots=True)
class _Item:
    video: int  # position in FrameDataset.videos
    pos: int  # frame position (clip start) in the video's frame list
    span: int = 1  # clips in training: the start is drawn from pos .. pos + span - 1
    run: tuple[int, int] | None = None  # clips: (first position, length) of the clip's run


class _Items(Sequence):
    """``FrameDataset.items``: the samples as :class:`_Item` views of its arrays."""

    def __init__(self, ds: FrameDataset) -> None:
        self.ds = ds

    def __len__(self) -> int:
        return len(self.ds.item_video)

    def __getitem__(self, i: int) -> _Item:  # type: ignore[override]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return self.ds._item(int(i) % len(self))

    def __iter__(self) -> Iterator[_Item]:
        return (self.ds._item(i) for i in range(len(self)))


class FrameDataset(Dataset):
    """Frames of the videos of ``split`` in ``indexes``, with the keys a detector ``requires``.

    ``augment`` is an albumentations pipeline from :func:`training.augment.build_augment`,
    or one with a fast path for lone images (``training.albu_fast.FusedAugment``; ``None`` for
    evaluation); call :meth:`set_epoch` before each epoch so that augmentations
    differ between epochs yet repeat exactly on resume. ``clip_size`` (video detectors): samples
    are clips (module docstring); videos too short for one are left out and listed in
    :attr:`short_videos`.
    """

    def __init__(
        self,
        indexes: Sequence[DatasetIndex],
        split: str,
        *,
        frame_num: int,
        resolution: int,
        requires: frozenset[str] | set[str] = frozenset(),
        augment: Any = None,
        seed: int = 0,
        method_names: Sequence[str] | None = None,
        pixel_map_size: int = 14,
        clip_size: int | None = None,
        train: bool = False,
        cache: Any = None,
    ) -> None:
        self.resolution = resolution
        self.requires = frozenset(requires)
        self.augment = augment
        self.seed = seed
        self.epoch = 0
        self.pixel_map_size = pixel_map_size
        self.clip_size = clip_size
        self.clip = clip_size or 1  # frames per sample
        self.train = train
        self.cache = cache
        self.blend = sorted(k.split(":", 1)[1] for k in self.requires if k.startswith("blend:"))
        self.pairs = train and "pairs" in self.requires
        self.method_groups = train and "method_groups" in self.requires
        unknown = sorted(k for k in self.requires - SAMPLE_KEYS if not k.startswith("blend:"))
        if unknown:
            raise TrainDataError(
                f"the detector requires unknown batch keys {unknown}; the pipeline provides "
                f"{sorted(SAMPLE_KEYS)} and blend:<generator>"
            )
        if len(self.blend) > 1:
            raise TrainDataError(f"a detector may ask for one blend generator, got {self.blend}")
        if clip_size is not None and (self.blend or self.pairs or self.method_groups) and train:
            raise TrainDataError(
                "online blends and pairs are made from single frames; a video detector "
                f"(clip_size {clip_size}) cannot require {sorted(self.requires)}"
            )
        self.method_names = (
            list(method_names) if method_names is not None else method_names_of(indexes)
        )
        self.videos: list[tuple[DatasetIndex, VideoEntry]] = [
            (index, v) for index in indexes for v in index.split(split)
        ]
        if not self.videos:
            names = ", ".join(i.dataset for i in indexes)
            raise TrainDataError(f"split {split!r} of dataset(s) {names} has no videos")
        keep = range(len(self.videos))
        if train and self.blend and "blend_all" not in self.requires:
            keep = [i for i in keep if self.videos[i][1].label == 0]  # blends are made from reals
        elif self.pairs:
            keep = [i for i in keep if self.videos[i][1].label == 1]  # each fake brings its real
        elif self.method_groups:
            self._fakes_by_method = self._fakes_by_identity()
            keep = [i for i in keep if self._group_of(i) is not None]  # reals with every method
            if not keep:
                raise TrainDataError(
                    f"requires 'method_groups' but no real video of split {split!r} has a fake of "
                    f"every training method ({', '.join(self.method_names)}) with its identity "
                    "(FaceForensics++-like data: fakes XXX_YYY of real XXX)"
                )
        self.short_videos: list[str] = []
        #: what samples read, as arrays (shared by forked workers without copies)
        self.table = VideoTable(
            self.videos,
            landmarks="landmarks" in self.requires or bool(self.blend),
            masks="mask" in self.requires,
        )
        self.item_span: np.ndarray | None = None  # clips only: span and (first, length) of run
        self.item_run: np.ndarray | None = None
        if clip_size is None:
            n_frames = np.diff(self.table.first)
            positions = [_positions(int(n_frames[i]), frame_num) for i in keep]
            counts = np.fromiter(map(len, positions), np.int64, len(positions))
            #: per sample: its video (position in :attr:`videos`) and frame position
            self.item_video = np.repeat(np.asarray(keep, np.int32), counts)
            self.item_pos = np.fromiter(
                (p for ps in positions for p in ps), np.int32, int(counts.sum())
            )
        else:
            items = self._clip_items(keep, frame_num, clip_size, split)
            self.item_video = np.array([it.video for it in items], np.int32)
            self.item_pos = np.array([it.pos for it in items], np.int32)
            self.item_span = np.array([it.span for it in items], np.int32)
            self.item_run = np.array([it.run or (-1, -1) for it in items], np.int32).reshape(-1, 2)
        if not len(self.item_video):
            raise TrainDataError(
                f"split {split!r}: no usable samples for requires={sorted(self.requires)}"
            )
        if "landmarks" in self.requires or (train and self.blend):
            bare = [f"{ix.dataset}:{v.method}/{v.id}" for ix, v in self.videos if not v.landmarks]
            if bare:
                raise TrainDataError(
                    f"the detector requires landmarks but {len(bare)} videos have none, e.g. "
                    f"{bare[0]}; preprocess with landmarks"
                )
        self._reals_by_identity = self._real_partners() if self.pairs else {}
        self._all_reals = sorted({i for c in self._reals_by_identity.values() for i in c})
        self._partner_tables: dict[str, Any] = {}
        #: identity classes (``identity`` key): ``dataset/identity`` of the split's videos, sorted
        self.identities = sorted({identity_of(ix, v) for ix, v in self.videos})
        self._identity_class = {name: i for i, name in enumerate(self.identities)}
        self._identity_of_video = np.fromiter(
            (self._identity_class[identity_of(ix, v)] for ix, v in self.videos),
            np.int64,
            len(self.videos),
        )
        self._method_label_of = np.fromiter(
            (self._method_label(v) for _, v in self.videos), np.int64, len(self.videos)
        )

    def _clip_items(self, keep: Any, frame_num: int, clip_size: int, split: str) -> list[_Item]:
        """``frame_num // clip_size`` clips per video (at least one); short videos are listed."""
        items, gaps = [], []
        for i in keep:
            index, video = self.videos[i]
            windows = clip_windows(video_runs(video), clip_size, max(frame_num // clip_size, 1))
            if not windows:
                self.short_videos.append(f"{index.dataset}:{video.method}/{video.id}")
                continue
            if has_gaps(video):
                gaps.append(f"{index.dataset}:{video.method}/{video.id}")
            items += [_Item(i, w.start, w.span if self.train else 1, w.run) for w in windows]
        if self.short_videos:
            log.warning(
                "split %r: %d videos have no run of %d consecutive frames and are left out, "
                "e.g. %s", split, len(self.short_videos), clip_size, self.short_videos[0],
            )  # fmt: skip
        if gaps:
            log.warning(
                "split %r: %d videos store frames that are not consecutive in the source video "
                "(e.g. %s), so their clips skip frames; preprocess with sampling.mode: clips "
                "for video detectors", split, len(gaps), gaps[0],
            )  # fmt: skip
        if not items and self.short_videos:
            raise TrainDataError(
                f"split {split!r}: no video has {clip_size} consecutive frames for one clip "
                f"(clip_size); e.g. {self.short_videos[0]}"
            )
        return items

    def __len__(self) -> int:
        return len(self.item_video)

    @property
    def items(self) -> _Items:
        """The samples as :class:`_Item` views (built on access; the data are arrays)."""
        return _Items(self)

    def _item(self, i: int) -> _Item:
        if self.item_span is None or self.item_run is None:
            return _Item(int(self.item_video[i]), int(self.item_pos[i]))
        first, length = (int(x) for x in self.item_run[i])
        run = None if first < 0 else (first, length)
        return _Item(int(self.item_video[i]), int(self.item_pos[i]), int(self.item_span[i]), run)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    @property
    def frames_per_sample(self) -> int:
        """Frames read per sample (the clip size for video detectors, else 1)."""
        return self.clip

    @property
    def labels(self) -> np.ndarray:
        """Label of every sample (for class-balanced sampling)."""
        return self.table.label[self.item_video]

    def groups(self, key: str) -> np.ndarray:
        """Value of attribute ``key`` for every sample (empty string where a video lacks it)."""
        return self.table.attribute_column(key, self.item_video)

    def group_codes(self, key: str) -> np.ndarray:
        """:meth:`groups` as int32 codes (0: the attribute is missing), for the sampler."""
        return self.table.attribute_codes(key, self.item_video)

    def frame_keys(self) -> list[tuple[int, int]]:
        """(video position, frame position) of every frame the samples read (for the cache)."""
        span = self.item_span if self.item_span is not None else np.ones(len(self), np.int64)
        width = span.astype(np.int64) + self.clip - 1
        offset = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
        video = np.repeat(self.item_video.astype(np.int64), width)
        keys = np.unique(video << 32 | (np.repeat(self.item_pos, width) + offset))
        return list(zip((keys >> 32).tolist(), (keys & 0xFFFFFFFF).tolist(), strict=True))

    def _fakes_by_identity(self) -> dict[tuple[str, str], list[int]]:
        """(``dataset/identity``, method) -> positions of the fake videos."""
        fakes: dict[tuple[str, str], list[int]] = {}
        for i, (index, v) in enumerate(self.videos):
            if v.label == 1 and v.method in self.method_names:
                fakes.setdefault((identity_of(index, v), v.method), []).append(i)
        return fakes

    def _group_of(self, vid: int) -> list[list[int]] | None:
        """The fake videos of every training method sharing real video ``vid``'s identity."""
        index, video = self.videos[vid]
        if video.label != 0:
            return None
        group = [
            self._fakes_by_method.get((identity_of(index, video), m)) for m in self.method_names
        ]
        return None if not all(group) else group  # type: ignore[return-value]

    # ---------------------------------------------------------------- reading
    def _real_partners(self) -> dict[str, list[int]]:
        reals: dict[str, list[int]] = {}
        for i, (index, v) in enumerate(self.videos):
            if v.label == 0:
                for key in {v.identity or v.id, v.id}:
                    reals.setdefault(f"{index.dataset}/{key}", []).append(i)
        if not reals:
            raise TrainDataError("requires 'pairs' but the split has no real videos")
        return reals

    def _load_frame(
        self, vid: int, pos: int
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(image, landmarks, mask) of one frame at the resolution; :class:`UnusableFrame`
        naming the file when one of them cannot be read."""
        table = self.table
        cached = self.cache.get(vid, pos) if self.cache is not None else None
        if cached is not None:
            image, (h, w) = cached  # packed at the resolution; (h, w) = stored frame size
        else:
            frame = table.frame(vid, pos)
            image = read_rgb(str(table.resolve(vid, frame)))
            if image is None:
                raise UnusableFrame(f"unreadable frame {frame}")
            h, w = image.shape[:2]
        res = self.resolution
        landmarks = mask = None
        if table.has_landmarks[vid] and ("landmarks" in self.requires or self.blend):
            rel = table.landmark(vid, pos)
            landmarks = read_landmarks(table.resolve(vid, rel), rel)
            landmarks = landmarks * np.array([res / w, res / h], np.float32)
        if "mask" in self.requires and table.has_masks[vid]:
            rel = table.mask(vid, pos)
            raw = cv2.imread(str(table.resolve(vid, rel)), cv2.IMREAD_GRAYSCALE)
            if raw is None:
                raise UnusableFrame(f"unreadable mask {rel}")
            mask = (
                cv2.resize(raw, (res, res), interpolation=cv2.INTER_LINEAR).astype(np.float32)
                / 255.0
            )
        if image.shape[:2] != (res, res):
            interp = cv2.INTER_AREA if max(image.shape[:2]) > res else cv2.INTER_CUBIC
            image = cv2.resize(image, (res, res), interpolation=interp)
        return image, landmarks, mask

    def _load_clip(
        self, vid: int, pos: int, replaced: list[str], run: tuple[int, int] | None = None
    ) -> tuple[list, int] | None:
        """Frames ``pos..pos+clip-1``, or the nearest usable ones of the same video (of the same
        ``run`` of consecutive frames, for clips); :class:`UnusableFrame` listing what failed
        when there are none."""
        table = self.table
        first, n = run if run is not None else (0, table.n_frames(vid))
        starts = range(first, first + max(n - self.clip + 1, 1))
        failures: dict[int, str] = {}  # frame position -> why it cannot be used
        for start in sorted(starts, key=lambda s: (abs(s - pos), s)):
            frames = []
            for p in range(start, start + self.clip):
                if p in failures:
                    break
                try:
                    frames.append(self._load_frame(vid, p))
                except UnusableFrame as exc:
                    failures[p] = str(exc)
                    dataset = table.dataset(vid)
                    log.warning("%s: %s; using another frame of the video", dataset, exc)
                    replaced.append(f"{dataset}/{table.frame(vid, p)}")
                    break
            else:
                return frames, start
        reasons = list(dict.fromkeys(failures.values()))
        more = f" (+{len(reasons) - 3} more)" if len(reasons) > 3 else ""
        raise UnusableFrame("no usable frame: " + "; ".join(reasons[:3]) + more)

    # ---------------------------------------------------------------- samples
    def _sample(
        self, vid: int, pos: int, seed: int, replaced: list[str], run: tuple[int, int] | None = None
    ) -> dict[str, Any]:
        """One sample of video ``vid`` at ``pos``; :class:`UnusableFrame` when nothing is usable."""
        table = self.table
        frames, start = self._load_clip(vid, pos, replaced, run)
        n_views = 2 if "views" in self.requires else 1
        views = []
        for view in range(n_views):
            if self.clip_size is None:
                aug = [apply_augment(self.augment, sample_seed(seed, view), *f) for f in frames]
            else:
                aug = apply_augment_clip(self.augment, sample_seed(seed, view), frames)
            views.append(aug)
        images = [a[0] for a in views[0]]
        clip = self.clip_size is not None
        label = int(table.label[vid])
        out: dict[str, Any] = {
            "image": _to_chw(images, clip),
            "label": label,
            "video_id": table.video_id(vid),
            "method": table.method_of(vid),
            "dataset": table.dataset(vid),
            "frame": table.frame_number(vid, start),
            "attributes": table.attributes(vid),
        }
        if n_views == 2:
            out["views"] = torch.stack([_to_chw([a[0] for a in v], clip) for v in views])
        if "landmarks" in self.requires:
            points = np.stack([a[1] for a in views[0]])
            out["landmarks"] = torch.from_numpy(points if clip else points.squeeze(0))
        if "mask" in self.requires:
            masks = [a[2] for a in views[0]]
            has = label == 0 or masks[0] is not None
            arr = np.stack(
                [m if m is not None else np.zeros(images[0].shape[:2], np.float32) for m in masks]
            )
            tensor = torch.from_numpy(arr.astype(np.float32))[:, None]
            out["mask"] = tensor if clip else tensor.squeeze(0)
            out["has_mask"] = has
        if "method_label" in self.requires:
            out["method_label"] = int(self._method_label_of[vid])
        if "identity" in self.requires:
            out["identity"] = int(self._identity_of_video[vid])
        if "pixel_map" in self.requires:
            out["pixel_map"] = torch.full(
                (1, self.pixel_map_size, self.pixel_map_size), float(label)
            )
        return out

    def _method_label(self, video: VideoEntry) -> int:
        if video.label == 0:
            return 0
        if video.method in self.method_names:
            return 1 + self.method_names.index(video.method)
        return -100  # a method unseen in training: ignored by cross-entropy

    def _blend_partner(self, vid: int, pos: int, rng: np.random.Generator) -> tuple | None:
        """(image, landmarks) of a nearest-landmark real face of another video (Face X-ray)."""
        index, video = self.videos[vid]
        if index.dataset not in self._partner_tables:
            self._partner_tables[index.dataset] = NearestLandmarks.from_index(index, "train")
        partner = self._partner_tables[index.dataset].sample(index.resolve(video.frames[pos]), rng)
        image = read_rgb(str(partner.frame))
        try:
            if image is None:
                raise UnusableFrame(f"unreadable frame {partner.frame}")
            landmarks = read_landmarks(partner.landmarks, str(partner.landmarks))
        except UnusableFrame as exc:
            log.warning("%s/%s: no blend partner: %s", index.dataset, video.id, exc)
            return None
        h, w = image.shape[:2]
        res = self.resolution
        if (h, w) != (res, res):
            image = cv2.resize(image, (res, res), interpolation=cv2.INTER_AREA)
            landmarks = landmarks * np.array([res / w, res / h], np.float32)
        return image, landmarks

    def _blended(
        self, real: dict[str, Any], vid: int, pos: int, seed: int
    ) -> dict[str, Any] | None:
        """An online blended fake made from a real frame by ``preprocessing.blending.generate``."""
        try:
            image, landmarks, _ = self._load_frame(vid, pos)
        except UnusableFrame as exc:
            log.warning(
                "%s/%s: no blend: %s", self.videos[vid][0].dataset, self.videos[vid][1].id, exc
            )
            return None
        rng = np.random.default_rng(sample_seed(seed, 7))
        partner = self._blend_partner(vid, pos, rng) if needs_partner(self.blend[0]) else None
        if needs_partner(self.blend[0]) and partner is None:
            return None
        try:
            result = generate(self.blend[0], image, landmarks, rng, partner=partner)
        except BlendingError as exc:
            index, video = self.videos[vid]
            log.warning(
                "%s/%s: no %s blend of frame %d: %s",
                index.dataset,
                video.id,
                self.blend[0],
                pos,
                exc,
            )
            return None
        if "real" in result:  # the generator's real image of the pair (SBI's transformed target)
            r_img, _, _ = apply_augment(
                self.augment, sample_seed(seed, 0), result["real"], landmarks
            )
            real["image"] = _to_chw([r_img])
        b_img, b_mask, xray = result["image"], result["mask"], result.get("xray")
        b_img, b_lm, b_mask = apply_augment(
            self.augment, sample_seed(seed, 0), b_img, landmarks, b_mask
        )
        fake = dict(real)
        fake.update(image=_to_chw([b_img]), label=1, method=f"blend:{self.blend[0]}", _replaced=[])
        if "landmarks" in self.requires:
            fake["landmarks"] = torch.from_numpy(b_lm)
        if "mask" in self.requires:
            fake["mask"] = torch.from_numpy(np.asarray(b_mask, np.float32))[None]
            fake["has_mask"] = True
        if "method_label" in self.requires:
            fake["method_label"] = 1
        if "pixel_map" in self.requires:
            fake["pixel_map"] = torch.ones_like(real["pixel_map"])
        if "views" in self.requires:
            fake["views"] = torch.stack([fake["image"], fake["image"]])
        if xray is not None:
            _, _, x_aug = apply_augment(
                self.augment, sample_seed(seed, 0), b_img.copy(), None, xray
            )
            fake["xray"] = torch.from_numpy(np.asarray(x_aug, np.float32))[None]
            real["xray"] = torch.zeros_like(fake["xray"])
        return fake

    def __getitem__(self, key: int | tuple[int, int]) -> dict[str, Any] | list[dict[str, Any]]:
        """One sample dict; a list [real, blended] with ``blend:``; ``{"_pair": [fake, real]}``
        with ``pairs``; ``{"_skipped": reason}`` when nothing of the video can be read.

        ``key`` is an index, or ``(epoch, index)`` from a sampler with ``tag_epoch`` (so that
        persistent workers, which hold copies of the dataset, still see the epoch)."""
        epoch, i = key if isinstance(key, tuple) else (self.epoch, key)
        item = self._item(i)
        seed = sample_seed(self.seed, epoch, i) if self.augment is not None else 0
        replaced: list[str] = []
        pos = item.pos  # a clip's start in training: drawn anew every epoch
        if item.span > 1:
            pos += sample_seed(self.seed, epoch, i, 1) % item.span
        table = self.table
        try:
            sample = self._sample(item.video, pos, seed, replaced, item.run)
        except UnusableFrame as exc:
            name = f"{table.method_of(item.video)}/{table.video_id(item.video)}"
            reason = f"{table.dataset(item.video)}/{name}: {exc}"
            log.warning("skipping sample: %s", reason)
            return {"_skipped": reason, "_replaced": replaced}
        sample["_replaced"] = replaced
        if self.blend and self.train:
            fake = self._blended(sample, item.video, item.pos, seed)
            return [sample, fake] if fake is not None else [sample]
        if self.method_groups:
            group = [sample]
            for m, fakes in enumerate(self._group_of(item.video) or []):
                fake = fakes[sample_seed(seed, m) % len(fakes)]
                pos = min(item.pos, table.n_frames(fake) - 1)
                try:
                    got = self._sample(fake, pos, sample_seed(seed, m + 1), replaced)
                except UnusableFrame as exc:
                    name = f"{table.dataset(item.video)}/{table.video_id(item.video)}"
                    return {
                        "_skipped": f"{name}: a fake of its group: {exc}",
                        "_replaced": replaced,
                    }
                group.append(dict(got, _replaced=[]))
            return group
        if self.pairs:
            index, video = self.videos[item.video]
            partner = self._partner(video, index, seed, sample_seed(self.seed, epoch, i, 2))
            try:
                real = self._sample(
                    partner, min(item.pos, table.n_frames(partner) - 1), seed, replaced
                )
            except UnusableFrame as exc:
                return {
                    "_skipped": f"{index.dataset}/{video.id}: partner unusable: {exc}",
                    "_replaced": replaced,
                }
            return {"_pair": [sample, real]}
        return sample

    def _partner(self, video: VideoEntry, index: DatasetIndex, seed: int, draw: int) -> int:
        """A real video of the same identity (source) where possible, else a seeded random one;
        with ``random_pairs`` always the random one (``draw``: a seed of this epoch and sample)."""
        every = self._all_reals
        if "random_pairs" in self.requires:
            return every[draw % len(every)]
        for key in (video.identity, video.id.split("_")[0]):
            cands = self._reals_by_identity.get(f"{index.dataset}/{key}") if key else None
            if cands:
                return cands[seed % len(cands)]
        return every[seed % len(every)]


def apply_augment(
    pipeline: Any,
    seed: int,
    image: np.ndarray,
    landmarks: np.ndarray | None = None,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Augment one frame with a fixed ``seed``; returns (image, landmarks, mask).

    A pipeline with a fast path for a lone image (``accepts``/``augment_image``, e.g.
    ``training.albu_fast.FusedAugment``) takes it when there are no landmarks and no mask."""
    if pipeline is None:
        return image, landmarks, mask
    if hasattr(pipeline, "augment_image"):
        if landmarks is None and mask is None and pipeline.accepts(image):
            return pipeline.augment_image(seed, image), None, None
        pipeline = pipeline.pipeline
    seed_pipeline(pipeline, seed)
    kwargs: dict[str, Any] = {"image": image}
    if landmarks is not None:
        if "keypoints" not in pipeline.processors:
            raise ValueError("landmarks given but the pipeline was built without keypoints=True")
        kwargs["keypoints"] = landmarks
    if mask is not None:
        kwargs["mask"] = mask
    out = pipeline(**kwargs)
    points = None
    if landmarks is not None:
        points = np.asarray(out["keypoints"], dtype=np.float32).reshape(-1, 2)
    return out["image"], points, out.get("mask")


def apply_augment_clip(
    pipeline: Any,
    seed: int,
    frames: list[tuple[np.ndarray, np.ndarray | None, np.ndarray | None]],
) -> list[tuple[np.ndarray, np.ndarray | None, np.ndarray | None]]:
    """Augment the (image, landmarks, mask) frames of a clip with one draw of the random
    parameters (albumentations' ``images``/``masks`` targets, the landmarks of all frames as one
    keypoint set): the same flip, rotation, blur, resize, colour and JPEG quality on every
    frame, so the clip's motion is kept. Returns the frames in the same layout."""
    if pipeline is None:
        return frames
    pipeline = getattr(pipeline, "pipeline", pipeline)  # a fused one's albumentations pipeline
    seed_pipeline(pipeline, seed)
    images = np.stack([f[0] for f in frames])
    kwargs: dict[str, Any] = {"images": images}
    points = [f[1] for f in frames]
    if points[0] is not None:
        if "keypoints" not in pipeline.processors:
            raise ValueError("landmarks given but the pipeline was built without keypoints=True")
        kwargs["keypoints"] = np.concatenate(points)
    masks = [f[2] for f in frames]
    if all(m is not None for m in masks):
        kwargs["masks"] = np.stack(masks)
    out = pipeline(**kwargs)
    n = len(frames)
    moved = (
        np.asarray(out["keypoints"], np.float32).reshape(n, -1, 2)
        if "keypoints" in kwargs
        else [None] * n
    )
    new_masks = list(out["masks"]) if "masks" in kwargs else masks
    return list(zip(list(out["images"]), moved, new_masks, strict=True))


def _to_chw(images: list[np.ndarray], clip: bool = False) -> torch.Tensor:
    """uint8 [3, H, W] (one frame) or [T, 3, H, W] (a clip, also of one frame).

    uint8 RGB frames of one size are split by OpenCV straight into the planes of the result
    (about 0.04 ms at 256x256 against 0.3 ms for numpy's transposing copy); anything else is
    stacked and transposed by numpy."""
    h, w = images[0].shape[:2]
    if all(i.dtype == np.uint8 and i.shape == (h, w, 3) for i in images):
        arr = np.empty((len(images), 3, h, w), np.uint8)
        for image, planes in zip(images, arr, strict=True):
            views = list(planes)
            got = cv2.split(image, views)
            if any(g is not v for g, v in zip(got, views, strict=True)):
                planes[...] = image.transpose(2, 0, 1)  # OpenCV wrote elsewhere: copy
    else:
        arr = np.ascontiguousarray(np.stack(images).transpose(0, 3, 1, 2))
    return torch.from_numpy(arr if clip else arr[0])  # numpy's indexing: cheaper than torch's


def _stack(tensors: list[torch.Tensor]) -> torch.Tensor:
    """``torch.stack``; in a DataLoader worker straight into shared memory, which the batch
    is moved to for the main process anyway (one copy of every image fewer).

    The shared memory is written through its file (:func:`_write_shared`) where it can be:
    a write into the mapping faults in and zeroes every page first (about 2 ms of a batch of
    32 images of 256 px), a ``pwritev`` of the samples fills the file's pages with them."""
    if get_worker_info() is None:
        return torch.stack(tensors)
    first = tensors[0]  # as torch's default_collate does it
    storage = first._typed_storage()._new_shared(sum(t.numel() for t in tensors))
    out = first.new(storage).resize_(len(tensors), *first.shape)
    if _write_shared(out, tensors):
        return out
    return torch.stack(tensors, out=out)


#: ``pwritev``'s limit on buffers a call (POSIX's minimum of IOV_MAX is 16; Linux has 1024)
_IOV_MAX = 1024


def _write_shared(out: torch.Tensor, tensors: list[torch.Tensor]) -> bool:
    """Write ``tensors`` one after the other into the shared-memory file behind ``out`` (a
    new contiguous tensor of their stacked shape) with ``os.pwritev``; ``False``, with nothing
    written, where that cannot be done (another sharing strategy than torch's file
    descriptors, tensors of different shapes or dtypes or not contiguous, no ``pwritev``):
    the caller then stacks into the mapping."""
    import torch.multiprocessing as tmp

    first = tensors[0]
    if (
        not hasattr(os, "pwritev")
        or tmp.get_sharing_strategy() != "file_descriptor"
        or first.device.type != "cpu"
        or not out.is_contiguous()
        or out.storage_offset() != 0
        or any(
            t.shape != first.shape
            or t.dtype != out.dtype
            or t.device != first.device
            or not t.is_contiguous()
            for t in tensors
        )
    ):
        return False
    try:
        views = [t.numpy() for t in tensors]  # contiguous CPU tensors: views, no copies
    except (TypeError, RuntimeError):  # a dtype numpy lacks (bfloat16), a tensor needing grad
        return False
    storage = out.untyped_storage()
    if storage.nbytes() != sum(v.nbytes for v in views):
        return False
    if storage.nbytes() == 0:  # nothing to write (an empty storage may have no file)
        return True
    try:  # the file torch keeps open for the storage, not a copy (a private call of torch's)
        fd, _ = storage._share_fd_cpu_()
    except (AttributeError, RuntimeError):  # another torch: stack into the mapping
        return False
    offset = 0
    for k in range(0, len(views), _IOV_MAX):
        chunk = [memoryview(v).cast("B") for v in views[k : k + _IOV_MAX]]
        size = sum(c.nbytes for c in chunk)
        done = os.pwritev(fd, chunk, offset)
        while done < size:  # a short write (not seen on tmpfs): write the rest
            rest = b"".join(bytes(c) for c in chunk)[done:]
            done += os.pwrite(fd, rest, offset + done)
        offset += size
    return True


def collate(samples: list[Any]) -> dict[str, Any]:
    """Stack samples into a batch dict; pairs become ``[fakes..., reals...]`` with ``pair_index``."""
    flat: list[dict[str, Any]] = []
    replaced: list[str] = []
    skipped: list[str] = []
    pairs: list[list[dict[str, Any]]] = []
    for s in samples:
        group = s if isinstance(s, list) else s.get("_pair", [s])
        for g in group:
            replaced.extend(g.get("_replaced", ()))
        if "_skipped" in group[0]:
            skipped.append(group[0]["_skipped"])
        elif isinstance(s, dict) and "_pair" in s:
            pairs.append(group)
        else:
            flat.extend(group)
    if pairs:
        flat = [p[0] for p in pairs] + [p[1] for p in pairs] + flat
    batch: dict[str, Any] = {"_replaced": replaced, "_skipped": skipped}
    if not flat:
        return batch
    tensor_keys = [k for k, v in flat[0].items() if isinstance(v, torch.Tensor)]
    for key in tensor_keys:
        batch[key] = _stack([s[key] for s in flat])
    for key in ("label", "method_label", "identity"):
        if key in flat[0]:
            batch[key] = torch.tensor([s[key] for s in flat], dtype=torch.long)
    if "has_mask" in flat[0]:
        batch["has_mask"] = torch.tensor([s["has_mask"] for s in flat], dtype=torch.bool)
    batch["frame"] = torch.tensor([s["frame"] for s in flat], dtype=torch.long)
    for key in ("video_id", "method", "dataset"):
        batch[key] = [s[key] for s in flat]
    names = sorted({k for s in flat for k in s["attributes"]})
    batch["attributes"] = {k: [s["attributes"].get(k, "") for s in flat] for k in names}
    if pairs:
        n = len(pairs)
        partner = list(range(n, 2 * n)) + list(range(n))
        batch["pair_index"] = torch.tensor(
            partner + list(range(2 * n, len(flat))), dtype=torch.long
        )
    return batch


def to_device(
    batch: dict[str, Any],
    device: torch.device | str,
    mean: Sequence[float],
    std: Sequence[float],
    channels_last: bool = False,
) -> dict[str, Any]:
    """Move tensors to ``device``; ``image``/``views`` become float, normalised by mean/std."""
    device = torch.device(device)
    out = dict(batch)
    s = torch.tensor(std, dtype=torch.float64)
    scale = (1.0 / (255.0 * s)).to(device, torch.float32).view(3, 1, 1)  # (x/255 - m)/s, fused
    shift = (-torch.tensor(mean, dtype=torch.float64) / s).to(device, torch.float32).view(3, 1, 1)
    for key, value in batch.items():
        if not isinstance(value, torch.Tensor):
            continue
        value = value.to(device, non_blocking=True)
        if key in ("image", "views") and value.dtype == torch.uint8:
            if channels_last and value.dim() == 4:  # permute the uint8s, not the floats
                value = value.contiguous(memory_format=torch.channels_last)
            value = value.float().mul_(scale).add_(shift)
        out[key] = value
    return out
