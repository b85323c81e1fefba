"""Test faces of a dataset index, with their 68 landmarks, for the metamorphic runner.

Landmarks come from the index's landmark files (``.npy``, 68x2, in the crop's pixels, as the
preprocessing writes them); a frame without a usable file is analysed with
:class:`preprocessing.faces.FaceAnalyzer` (largest face). A frame that cannot be read, or in
which no face is found, is yielded as a :class:`~fairness.metamorphic.runner.Skipped` record
with its reason, never raised; so is a non-frontal face (head yaw above ``max_yaw`` degrees,
paper 000 removed them), which is also counted in the log. For a video detector
(``clip_size``), a sample is a clip of consecutive frames placed as at test time
(:func:`preprocessing.clips.clip_windows`), with the landmarks of each frame; a clip with an
unreadable or non-frontal frame is skipped whole.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from fairforensics.fairness.metamorphic.pose import NON_FRONTAL, estimate_yaw
from fairforensics.fairness.metamorphic.regions import LandmarkError, check_landmarks
from fairforensics.fairness.metamorphic.runner import FaceSample, Skipped
from fairforensics.preprocessing.clips import clip_windows, video_runs
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, read_index

log = logging.getLogger(__name__)


def read_rgb(path: Path) -> np.ndarray | None:
    """An image file as RGB uint8, or None when it cannot be read."""
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    return None if bgr is None else np.ascontiguousarray(bgr[..., ::-1])


def frame_positions(n_frames: int, frame_num: int | None) -> list[int]:
    """``frame_num`` evenly spaced positions among ``n_frames`` (all when None or larger)."""
    if frame_num is None or frame_num >= n_frames:
        return list(range(n_frames))
    if frame_num < 1:
        raise ValueError(f"frame_num must be at least 1, got {frame_num}")
    return sorted({int(round(p)) for p in np.linspace(0, n_frames - 1, frame_num)})


class LandmarkSource:
    """Landmarks of a frame: its stored file when usable, else dlib through ``analyzer``."""

    def __init__(self, analyzer: Any | None = None) -> None:
        self._analyzer = analyzer

    @property
    def analyzer(self) -> Any:
        if self._analyzer is None:
            from fairforensics.preprocessing.faces import FaceAnalyzer

            self._analyzer = FaceAnalyzer()
        return self._analyzer

    def __call__(self, image: np.ndarray, stored: Path | None, key: str) -> np.ndarray | str:
        """The (68, 2) landmarks, or the reason none could be had."""
        if stored is not None:
            try:
                return check_landmarks(np.load(stored, allow_pickle=False), source=str(stored))
            except (OSError, ValueError, LandmarkError) as exc:
                log.warning("%s: landmark file unusable (%s); detecting the face instead", key, exc)
        faces = self.analyzer.analyze(image)
        if not faces:
            return "no face found by the landmark detector"
        return check_landmarks(faces[0][1], source=key)


def _frame_face(
    index: DatasetIndex,
    video: VideoEntry,
    pos: int,
    key: str,
    landmarks: LandmarkSource,
    max_yaw: float | None,
) -> tuple[np.ndarray, np.ndarray] | Skipped:
    """(image, landmarks) of one stored frame, or why it cannot be tested."""
    path = index.resolve(video.frames[pos])
    image = read_rgb(path)
    if image is None:
        return Skipped(key, f"unreadable image {path}")
    stored = index.resolve(video.landmarks[pos]) if video.landmarks else None
    found = landmarks(image, stored, key)
    if isinstance(found, str):
        return Skipped(key, found)
    if max_yaw is not None:
        try:
            yaw = estimate_yaw(found, image.shape[:2])
        except (ValueError, cv2.error) as exc:
            return Skipped(key, f"head pose could not be estimated: {exc}")
        if yaw > max_yaw:
            return Skipped(key, f"{NON_FRONTAL}: yaw {yaw:.1f} > max_yaw {max_yaw:g} degrees")
    return image, found


def _video_samples(
    index: DatasetIndex,
    video: VideoEntry,
    frame_num: int | None,
    landmarks: LandmarkSource,
    max_yaw: float | None,
    clip_size: int | None = None,
) -> Iterator[FaceSample | Skipped]:
    if clip_size is None:
        starts = frame_positions(len(video.frames), frame_num)
    else:
        n_clips = max((frame_num or len(video.frames)) // clip_size, 1)
        starts = [w.start for w in clip_windows(video_runs(video), clip_size, n_clips)]
    for pos in starts:
        key = f"{index.dataset}/{video.method}/{video.id}/{pos:03d}"
        faces = [
            _frame_face(index, video, p, key, landmarks, max_yaw)
            for p in range(pos, pos + (clip_size or 1))
        ]
        bad = next((f for f in faces if isinstance(f, Skipped)), None)
        if bad is not None:
            yield bad
            continue
        images, points = zip(*faces, strict=True)
        yield FaceSample(
            key=key,
            image=images[0] if clip_size is None else np.stack(images),
            label=video.label,
            attributes=dict(video.attributes),
            landmarks=points[0] if clip_size is None else np.stack(points),
            dataset=index.dataset,
            video_id=video.id,
            frame=pos,
            method=video.method,
            identity=video.identity or "",
        )


def samples_from_index(
    index: DatasetIndex | str | Path,
    split: str = "test",
    *,
    frame_num: int | None = None,
    analyzer: Any | None = None,
    max_yaw: float | None = None,
    clip_size: int | None = None,
) -> Iterator[FaceSample | Skipped]:
    """Faces of ``split`` (``frame_num`` evenly spaced frames per video; all when None).

    ``max_yaw``: skip faces turned further than this many degrees (None: keep every face).
    ``clip_size`` (a video detector): samples are clips, ``frame_num // clip_size`` per video.
    """
    if not isinstance(index, DatasetIndex):
        index = read_index(index)
    videos = index.split(split)
    if not videos:
        raise ValueError(f"dataset {index.dataset!r} has no videos in split {split!r}")
    landmarks = LandmarkSource(analyzer)
    non_frontal = 0
    for video in videos:
        for sample in _video_samples(index, video, frame_num, landmarks, max_yaw, clip_size):
            if isinstance(sample, Skipped) and sample.reason.startswith(NON_FRONTAL):
                non_frontal += 1
            yield sample
    if max_yaw is not None:
        log.info(
            "%s: %d non-frontal face(s) removed (yaw > %g)", index.dataset, non_frontal, max_yaw
        )
