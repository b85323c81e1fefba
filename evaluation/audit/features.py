"""What the shortcut audit reads of each video or image: its file's metadata and two properties
of its face crops, none of which says anything about a face being real or fake.

File metadata (the raw file the index's ``source`` names, under ``source_root``): container and
codec (categories), width, height, frame rate, bit rate, duration and file size of a video, read
from its header with PyAV (nothing is decoded); for an image, its format, size, file size and,
for a JPEG, the quality estimated from its quantisation tables (:func:`jpeg_quality`). From the
index: the face's side as a share of the frame's (:func:`face_share`: the face detector of the
index's own preprocessing settings, run on the first frame the index keeps) and the sharpness
of the crops (:func:`crop_sharpness`: the variance of the Laplacian, Pech-Pacheco et al., ICPR
2000). A file that is missing or unreadable is logged and skipped, with its reason
(:attr:`FeatureTable.skipped`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from fairforensics.preprocessing.index import DatasetIndex, VideoEntry
from fairforensics.preprocessing.video import MediaReadError, is_image

log = logging.getLogger(__name__)

#: features that are categories (compared by equality), the others are numbers
CATEGORICAL = ("container", "codec")
#: every feature, in the order tables show them
FEATURES = (
    "container",
    "codec",
    "width",
    "height",
    "frame_rate",
    "bit_rate",
    "duration",
    "file_size",
    "jpeg_quality",
    "face_share",
    "sharpness",
)

#: the IJG's (libjpeg's) standard luminance quantisation table at quality 50 (ITU-T T.81,
#: Annex K, Table K.1), row by row: the order of Pillow's ``quantization``
_IJG_LUMINANCE = np.array(
    [16, 11, 10, 16, 24, 40, 51, 61,
     12, 12, 14, 19, 26, 58, 60, 55,
     14, 13, 16, 24, 40, 57, 69, 56,
     14, 17, 22, 29, 51, 87, 80, 62,
     18, 22, 37, 56, 68, 109, 103, 77,
     24, 35, 55, 64, 81, 104, 113, 92,
     49, 64, 78, 87, 103, 121, 120, 101,
     72, 92, 95, 98, 112, 100, 103, 99],
    dtype=np.float64,
)  # fmt: skip


def ijg_table(quality: int) -> np.ndarray:
    """The luminance table libjpeg writes at ``quality`` (``jpeg_quality_scaling``: the standard
    table scaled by ``5000 / q`` percent below 50 and ``200 - 2 q`` from 50, rounded, clamped to
    1..255 as baseline JPEG needs)."""
    scale = 5000 / quality if quality < 50 else 200 - 2 * quality
    return np.clip(np.floor((_IJG_LUMINANCE * scale + 50) / 100), 1, 255)


_IJG_TABLES = np.stack([ijg_table(q) for q in range(1, 101)])


def jpeg_quality(luminance: Sequence[int]) -> float:
    """The IJG quality (1-100) whose luminance table is nearest ``luminance`` (64 values, row by
    row as Pillow gives them; least absolute difference): the exact inverse of libjpeg's
    scaling for its own files, the IJG quality of the nearest coarseness for other encoders'."""
    table = np.asarray(luminance, dtype=np.float64)
    if table.shape != (64,):
        raise ValueError(f"a JPEG quantisation table has 64 entries, got {table.shape}")
    return float(np.argmin(np.abs(_IJG_TABLES - table).sum(axis=1)) + 1)


def image_features(path: Path) -> dict[str, float | str]:
    """Format, width, height, file size and (JPEG only) estimated quality of an image file."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            fmt = image.format or path.suffix.lstrip(".").upper()
            width, height = image.size
            tables = getattr(image, "quantization", None) or {}
    except (OSError, UnidentifiedImageError) as exc:
        raise MediaReadError(f"{path}: unreadable image ({exc})") from None
    out: dict[str, float | str] = {
        "container": fmt,
        "codec": fmt,
        "width": float(width),
        "height": float(height),
        "file_size": float(os.path.getsize(path)),
    }
    if 0 in tables:
        out["jpeg_quality"] = jpeg_quality(list(tables[0]))
    return out


def video_features(path: Path) -> dict[str, float | str]:
    """Container, codec, width, height, frame rate, bit rate (bits/s), duration (s) and file size
    (bytes) of a video, from its header with PyAV."""
    import av

    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise MediaReadError(f"{path}: no video stream")
            stream = container.streams.video[0]
            ctx = stream.codec_context
            duration = np.nan
            if container.duration is not None:
                duration = container.duration / av.time_base
            elif stream.duration is not None and stream.time_base is not None:
                duration = float(stream.duration * stream.time_base)
            rate = stream.average_rate or stream.base_rate
            return {
                "container": container.format.name,
                "codec": ctx.name,
                "width": float(ctx.width),
                "height": float(ctx.height),
                "frame_rate": float(rate) if rate else np.nan,
                "bit_rate": float(container.bit_rate or stream.bit_rate or np.nan),
                "duration": float(duration),
                "file_size": float(os.path.getsize(path)),
            }
    except av.FFmpegError as exc:
        raise MediaReadError(f"{path}: unreadable video ({exc})") from None


def media_features(path: str | Path) -> dict[str, float | str]:
    """:func:`image_features` or :func:`video_features`, by the file's suffix."""
    path = Path(path)
    if not path.is_file():
        raise MediaReadError(f"{path}: raw file not found")
    return image_features(path) if is_image(path) else video_features(path)


def crop_sharpness(paths: Sequence[str | Path]) -> float:
    """Mean over the crops of the variance of their grey-level Laplacian (a blur measure)."""
    values = []
    for path in paths:
        gray = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
        if gray is None:
            raise MediaReadError(f"{path}: unreadable face crop")
        values.append(float(cv2.Laplacian(gray, cv2.CV_64F).var()))
    return float(np.mean(values))


def face_share(frame: np.ndarray, analyzer) -> float:
    """Side of the largest face box as a share of the frame's side, both taken as the square
    root of their area; NaN when no face is found."""
    boxes = analyzer.detect(frame)
    if not boxes:
        return float("nan")
    left, top, right, bottom = boxes[0]
    height, width = frame.shape[:2]
    return float(np.sqrt(max(right - left, 0) * max(bottom - top, 0) / (width * height)))


@dataclass
class FeatureTable:
    """The audit's inputs: one row per video (or image) that could be read."""

    videos: list[VideoEntry]
    columns: dict[str, np.ndarray]  # feature -> values (object for categories, float others)
    skipped: list[dict[str, str]] = field(default_factory=list)  # method, id, source, reason
    unavailable: dict[str, str] = field(default_factory=dict)  # feature -> why it is not read
    files_read: bool = True  # the raw files' metadata was read (a source root was known)

    @property
    def names(self) -> list[str]:
        """The features read for at least one video, in :data:`FEATURES` order."""
        return [n for n in FEATURES if n in self.columns]


def _face_analyzer(index: DatasetIndex):
    """The face detector of the index's preprocessing settings (defaults when it has none)."""
    from fairforensics.preprocessing.config import FaceSettings
    from fairforensics.preprocessing.face_path import face_analyzer

    settings = (
        FaceSettings.from_json(index.preprocess, f"{index.dataset}: preprocess")
        if index.preprocess is not None
        else FaceSettings()
    )
    return face_analyzer(settings.face)


def _first_frame(path: Path, video: VideoEntry) -> np.ndarray:
    from fairforensics.preprocessing.video import read_frames

    first = video.frame_indices[0] if video.frame_indices else 0
    frames = read_frames(path, [first])
    if first not in frames:
        raise MediaReadError(f"{path}: frame {first} of the index is past the end")
    return frames[first]


def read_features(
    index: DatasetIndex,
    videos: Sequence[VideoEntry],
    source_root: str | Path | None,
    *,
    faces: bool = True,
    progress: bool = False,
    no_root: str = "no --source-root given and none recorded in the index",
) -> FeatureTable:
    """The features of ``videos`` (module docstring). Without ``source_root`` (or for an index
    without ``source`` paths) only the crops' sharpness is read; ``faces=False`` skips the face
    detector (``face_share``); ``no_root`` is the reason listed without ``source_root``."""
    from tqdm import tqdm

    unavailable: dict[str, str] = {}
    with_files = source_root is not None and all(v.source for v in videos)
    if not with_files:
        why = (
            no_root
            if source_root is None
            else "the index does not record every video's source file"
        )
        unavailable = {n: why for n in FEATURES if n != "sharpness"}
    elif not faces:
        unavailable["face_share"] = "face detection turned off"
    analyzer = _face_analyzer(index) if with_files and faces else None
    rows: list[dict[str, float | str]] = []
    kept: list[VideoEntry] = []
    skipped: list[dict[str, str]] = []
    for video in tqdm(videos, desc="audit features", unit="video", disable=not progress):
        path = Path(source_root) / video.source if with_files else None
        try:
            row: dict[str, float | str] = {
                "sharpness": crop_sharpness([index.resolve(f) for f in video.frames])
            }
            if path is not None:
                row |= media_features(path)
                if analyzer is not None:
                    row["face_share"] = face_share(_first_frame(path, video), analyzer)
        except MediaReadError as exc:
            log.warning("audit: skipped %s/%s: %s", video.method, video.id, exc)
            skipped.append(
                {
                    "method": video.method,
                    "id": video.id,
                    "source": str(path or ""),
                    "reason": str(exc),
                }
            )
            continue
        rows.append(row)
        kept.append(video)
    columns: dict[str, np.ndarray] = {}
    for name in FEATURES:
        if name in unavailable:
            continue
        values = [r.get(name) for r in rows]
        if all(v is None or (isinstance(v, float) and np.isnan(v)) for v in values):
            unavailable[name] = "not recorded for any video"
            continue
        if name in CATEGORICAL:
            columns[name] = np.array(["" if v is None else str(v) for v in values], dtype=object)
        else:
            columns[name] = np.array([np.nan if v is None else v for v in values], dtype=float)
    return FeatureTable(kept, columns, skipped, unavailable, files_read=with_files)
