"""One in-memory path from a video or image to aligned face crops, in three steps.

1. :func:`decode_sampled`: the frames that ``sampling`` keeps, decoded once (and only those).
2. :func:`find_faces`: face boxes and dlib's 68 landmarks on given frames; the largest face per
   frame (landmarks smoothed through time, or one alignment per clip in ``sampling.mode: clips``)
   or, with ``face.keep: all``, every face, grouped into tracks across frames.
3. :func:`crop_faces`: the aligned crops of given frames with given faces.

Preprocessing (:mod:`preprocessing.worker`) runs these steps and then writes the crops, so
``detect`` (which scores the crops in memory, :func:`face_crops`) and ``preprocess`` cannot
drift. Something may go between the steps: robustness evaluation perturbs the decoded frames and
crops them with the clean frames' faces (``faces: clean``), or finds the faces again on the
perturbed frames (``faces: detect``), e.g. ``find_faces(replace(decoded, frames=perturbed))``.

Every step takes a ``log`` (anything with ``notes``, ``warnings`` and ``skipped_frames`` lists,
such as :class:`FaceLog` or the worker's ``VideoResult``) and an optional ``timing`` dict that it adds
its CPU seconds to under the names of :data:`STAGES`. Nothing here imports torch unless
``face.detector`` is ``mtcnn``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import cv2
import numpy as np

from fairforensics.preprocessing.align import crop_face, warp_face
from fairforensics.preprocessing.clip_crops import Found, crop_clips, smooth_landmarks
from fairforensics.preprocessing.config import (
    AlignConfig,
    FaceConfig,
    FaceSettings,
    OutputConfig,
    SamplingConfig,
)
from fairforensics.preprocessing.faces import Box, FaceAnalyzer
from fairforensics.preprocessing.video import (
    MediaReadError,
    count_frames,
    is_image,
    read_frames,
    sample_clips,
    sample_indices,
)

logger = logging.getLogger(__name__)

#: the stages a ``timing`` dict holds (CPU seconds); ``write`` is the worker's
STAGES = ("decode", "detect", "landmarks", "align", "write")
#: a face continues a track when its box overlaps the track's last box by this IoU or more
TRACK_IOU = 0.3


class NoFaceError(MediaReadError):
    """No face in any sampled frame of a video or image."""


class Log(Protocol):
    notes: list[str]
    warnings: list[str]
    skipped_frames: list[dict[str, Any]]


@dataclass
class FaceLog:
    """What the steps note about one file: remarks, what makes it less than asked (fewer
    frames than sampling wants: ``warnings``) and frames lost, each with its reason."""

    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped_frames: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class DecodedFrames:
    """The sampled frames of one file, decoded (step 1)."""

    path: Path
    frames: dict[int, np.ndarray]  # frame number -> RGB uint8 HxWx3 (frames past the end absent)
    total: int  # frames of the file (an image: 1)
    keep: list[int]  # the frame numbers sampling asked for
    clips: list[list[int]] | None = None  # sampling.mode clips: the runs of frame numbers

    @property
    def image(self) -> bool:
        return is_image(self.path)


@dataclass
class FoundFaces:
    """The faces to crop (step 2), in crop order; ``found[j]``, ``boxes[j]`` and ``tracks[j]``
    describe the same face."""

    found: list[Found]  # (frame number, rank in its frame (0: largest), 68 alignment landmarks)
    boxes: list[Box | None]  # the detector's box (None: a clip frame with interpolated landmarks)
    tracks: list[int]  # the same face across frames (0 for the largest face)
    matrices: dict[int, np.ndarray] | None = None  # clips: the clip's alignment of each frame
    clip_of: dict[int, int] | None = None  # clips: the clip of each frame number
    detected: int = 0  # faces the detector found (with their landmarks)

    @property
    def landmarks(self) -> list[np.ndarray]:
        return [lm for _, _, lm in self.found]

    def __len__(self) -> int:
        return len(self.found)


@dataclass
class FaceCrop:
    """One aligned face crop (step 3)."""

    frame: int
    rank: int
    track: int
    box: Box | None
    clip: int | None
    image: np.ndarray  # size x size x 3 RGB uint8
    matrix: np.ndarray  # 2x3, frame pixels -> crop pixels
    landmarks: np.ndarray  # the 68 landmarks in crop pixels


@dataclass
class FileCrops:
    """Everything :func:`face_crops` made of one file."""

    decoded: DecodedFrames
    faces: FoundFaces
    crops: list[FaceCrop]
    log: FaceLog


def _add(timing: dict[str, float] | None, stage: str, t0: float) -> None:
    if timing is not None:
        timing[stage] = timing.get(stage, 0.0) + time.process_time() - t0


def face_analyzer(face: FaceConfig) -> FaceAnalyzer:
    """The detector and landmark model that ``face`` describes."""
    return FaceAnalyzer(
        face.detector,
        face.upsample,
        face.detect_max_side,
        face.retry_upsample,
        face.device,
        detect_on=face.detect_on,
    )


# ---------------------------------------------------------------- step 1: decode


def plan_frames(sampling: SamplingConfig, total: int) -> tuple[list[int], list[list[int]] | None]:
    """Frame numbers to decode, and the clips they form (``None`` outside ``clips`` mode)."""
    s = sampling
    if s.mode == "clips":
        clips = sample_clips(total, s.clip_size, s.num_clips)
        return [i for clip in clips for i in clip], clips
    return sample_indices(total, s.mode, s.num_frames, s.stride), None


def short_video_note(
    sampling: SamplingConfig, total: int, clips: list[list[int]] | None
) -> str | None:
    """The note for a video too short for what ``sampling`` asks."""
    s = sampling
    if clips is not None and (total < s.clip_size or len(clips) < s.num_clips):
        return (
            f"only {total} frames: {len(clips)} clip(s) of {len(clips[0]) if clips else 0} "
            f"frames instead of {s.num_clips} of {s.clip_size}"
        )
    if s.mode == "fixed_num_frames" and total < s.num_frames:
        return f"only {total} frames (< {s.num_frames}); kept all of them"
    return None


def decode_sampled(
    path: str | Path,
    settings: FaceSettings,
    log: Log | None = None,
    timing: dict[str, float] | None = None,
) -> DecodedFrames:
    """Decode the frames of ``path`` that ``settings.sampling`` keeps (an image: its one frame).

    A missing, unreadable or empty file raises :class:`MediaReadError`; a video shorter than
    asked, or truncated (frames past its real end, each in ``log.skipped_frames``), is a warning
    logged and kept in ``log.warnings``.
    """
    path = Path(path)
    log = log if log is not None else FaceLog()
    if not (path.is_file() or path.is_dir()):  # a folder: a video cut into images (DF40)
        raise MediaReadError(f"{path}: file not found")
    t0 = time.process_time()
    d = settings.decode
    dec = {"backend": d.backend, "threads": d.threads, "device": d.device, "notes": log.notes}
    total = count_frames(path)
    if total <= 0:
        frames = read_frames(path, None, **dec)  # header without a frame count: decode all
        total = len(frames)
        keep, clips = plan_frames(settings.sampling, total)
        frames = {i: frames[i] for i in keep if i in frames}
    else:
        keep, clips = plan_frames(settings.sampling, total)
        frames = read_frames(path, keep, **dec)  # each clip's run decoded in one pass
    _add(timing, "decode", t0)
    if not frames:
        raise MediaReadError(f"{path}: no decodable frame")
    note = None if is_image(path) else short_video_note(settings.sampling, total, clips)
    if note:
        _warn(log, path, note)
    missing = [i for i in keep if i not in frames]
    for i in missing:
        log.skipped_frames.append({"frame": i, "reason": "past the real end of the video"})
    if missing:
        _warn(
            log,
            path,
            f"truncated: {len(missing)} of the {len(keep)} sampled frames lie past the real end "
            f"of the video (its header says {total} frames); {len(keep) - len(missing)} kept",
        )
    return DecodedFrames(path, frames, total, keep, clips)


def _warn(log: Log, path: Path, warning: str) -> None:
    """Log a warning about ``path`` and keep it in ``log.warnings`` (the manifest's)."""
    logger.warning("%s: %s", path, warning)
    log.warnings.append(warning)


# ---------------------------------------------------------------- step 2: faces


def find_faces(
    decoded: DecodedFrames,
    settings: FaceSettings,
    analyzer: FaceAnalyzer | None = None,
    log: Log | None = None,
    timing: dict[str, float] | None = None,
) -> FoundFaces:
    """Boxes and landmarks of the faces to crop in ``decoded.frames`` (``settings.face`` and
    ``settings.align``; module docstring). ``analyzer``: a :func:`face_analyzer` to reuse.

    Frames without a face go to ``log.skipped_frames`` (in a clip their landmarks are
    interpolated instead); no face at all raises :class:`NoFaceError`.
    """
    log = log if log is not None else FaceLog()
    frames, clips, face = decoded.frames, decoded.clips, settings.face
    analyzer = analyzer or face_analyzer(face)
    every_face = face.keep == "all"
    batched = face.detector == "mtcnn" and face.batch_size > 1
    detected = _detect_batched(analyzer, frames, face.batch_size, timing) if batched else {}
    follow = face.face_size_from_previous and not every_face and not batched
    face_size: float | None = None  # side of the largest face of the previous kept frame
    found: list[Found] = []
    boxes: dict[tuple[int, int], Box] = {}
    for i in sorted(frames):
        if batched:
            frame_boxes = detected[i]
        else:
            t0 = time.process_time()
            frame_boxes = analyzer.detect(frames[i], face_size)
            _add(timing, "detect", t0)
        if not frame_boxes:
            if clips is None:  # in a clip, the frame's landmarks are interpolated instead
                log.skipped_frames.append({"frame": i, "reason": "no face"})
            continue
        if follow:
            b = frame_boxes[0]
            face_size = float(min(b[2] - b[0], b[3] - b[1]))
        t0 = time.process_time()
        for k, box in enumerate(frame_boxes if every_face else frame_boxes[:1]):
            found.append((i, k, analyzer.landmarks(frames[i], box)))
            boxes[(i, k)] = box
        _add(timing, "landmarks", t0)
    if not found:
        raise NoFaceError(f"{decoded.path}: no face in any of the {len(frames)} sampled frames")
    n_detected = len(found)
    if clips is not None:
        a = settings.align
        found, matrices, clip_of = crop_clips(
            clips, set(frames), found, a.crop, a.smooth_window, log
        )
        if not found:
            raise MediaReadError(f"{decoded.path}: no clip could be aligned")
        return FoundFaces(
            found,
            [boxes.get((i, k)) for i, k, _ in found],
            [0] * len(found),
            matrices,
            clip_of,
            n_detected,
        )
    keys = [(i, k) for i, k, _ in found]
    if every_face:
        tracks = assign_tracks([(key[0], boxes[key]) for key in keys])
    else:  # smoothing follows one face through time
        smoothed = smooth_landmarks([lm for _, _, lm in found], settings.align.smooth_window)
        found = [(i, k, lm) for (i, k), lm in zip(keys, smoothed, strict=True)]
        tracks = [0] * len(found)
    return FoundFaces(found, [boxes[key] for key in keys], tracks, detected=n_detected)


def _detect_batched(
    analyzer: FaceAnalyzer,
    frames: dict[int, np.ndarray],
    batch_size: int,
    timing: dict[str, float] | None,
) -> dict[int, list[Box]]:
    """Face boxes of every frame, ``batch_size`` frames per ``detect_batch`` call."""
    order = sorted(frames)
    out: dict[int, list[Box]] = {}
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        t0 = time.process_time()
        out.update(zip(chunk, analyzer.detect_batch([frames[i] for i in chunk]), strict=True))
        _add(timing, "detect", t0)
    return out


def box_iou(a: Box, b: Box) -> float:
    """Intersection over union of two (left, top, right, bottom) boxes."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def assign_tracks(faces: list[tuple[int, Box]]) -> list[int]:
    """A track number for each (frame number, box), in frame order then largest first: a face
    continues the track whose latest box it overlaps most (IoU >= :data:`TRACK_IOU`, one face
    per track and frame), else starts a new one (numbered by first appearance)."""
    last: list[Box] = []  # latest box of each track
    out: list[int] = []
    taken: set[int] = set()
    frame = None
    for i, box in faces:
        if i != frame:
            frame, taken = i, set()
        scores = [(box_iou(box, b), t) for t, b in enumerate(last) if t not in taken]
        best = max(scores, default=(0.0, -1))
        if best[0] >= TRACK_IOU:
            track = best[1]
            last[track] = box
        else:
            track = len(last)
            last.append(box)
        taken.add(track)
        out.append(track)
    return out


# ---------------------------------------------------------------- step 3: crops


def crop_faces(
    frames: dict[int, np.ndarray],
    faces: FoundFaces,
    align: AlignConfig,
    skipped: list[dict[str, Any]] | None = None,
    timing: dict[str, float] | None = None,
) -> list[FaceCrop]:
    """The aligned crop of every face of ``faces`` in ``frames`` (which may be other frames of
    the same size than those the faces were found on, e.g. perturbed ones). A face whose
    landmarks cannot be aligned loses its frame (appended to ``skipped``), not the file. Each
    face is cropped as ``align.crop`` says (:class:`configs.crop.CropSpec`)."""
    size, spec = align.size, align.crop
    crops: list[FaceCrop] = []
    for (i, k, lm), box, track in zip(faces.found, faces.boxes, faces.tracks, strict=True):
        t0 = time.process_time()
        if faces.matrices is not None:
            image, matrix, crop_lm = warp_face(frames[i], lm, faces.matrices[i], size)
        else:
            try:
                image, matrix, crop_lm = crop_face(frames[i], lm, spec)
            except ValueError as exc:  # degenerate landmarks: lose the frame, not the video
                if skipped is not None:
                    skipped.append({"frame": i, "reason": f"alignment failed: {exc}"})
                _add(timing, "align", t0)
                continue
        clip = faces.clip_of[i] if faces.clip_of is not None else None
        crops.append(FaceCrop(i, k, track, box, clip, image, matrix, crop_lm))
        _add(timing, "align", t0)
    return crops


def as_stored(image: np.ndarray, output: OutputConfig) -> np.ndarray:
    """An RGB crop as it reads back from the file preprocessing writes with ``output``
    (PNG: unchanged; JPEG: through the same encoder at ``output.jpeg_quality``)."""
    if output.format != "jpg":
        return image
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), encode_params(output))
    if not ok:
        raise ValueError("cannot encode the crop as JPEG")
    return cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


# Lossless either way; the "up" filter with run-length zlib encodes a 256 px face in 2.2 ms
# instead of 3.7 ms (libpng's adaptive filters) for files of the same size.
PNG_PARAMS = [
    cv2.IMWRITE_PNG_COMPRESSION, 1,
    cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_RLE,
    cv2.IMWRITE_PNG_FILTER, cv2.IMWRITE_PNG_FILTER_UP,
]  # fmt: skip


def encode_params(output: OutputConfig) -> list[int]:
    """OpenCV's encoder parameters for crops written with ``output``."""
    if output.format == "jpg":
        return [cv2.IMWRITE_JPEG_QUALITY, output.jpeg_quality]
    return PNG_PARAMS


# ---------------------------------------------------------------- all three


def face_crops(
    path: str | Path,
    settings: FaceSettings,
    analyzer: FaceAnalyzer | None = None,
    timing: dict[str, float] | None = None,
) -> FileCrops:
    """Decode, find faces and crop one file, every crop as preprocessing would store it
    (:func:`as_stored`). Raises :class:`MediaReadError` (:class:`NoFaceError` when no sampled
    frame has a face); what was lost on the way is in ``FileCrops.log``."""
    log = FaceLog()
    decoded = decode_sampled(path, settings, log, timing)
    faces = find_faces(decoded, settings, analyzer, log, timing)
    crops = crop_faces(decoded.frames, faces, settings.align, log.skipped_frames, timing)
    if not crops:
        raise MediaReadError(f"{decoded.path}: no frame could be aligned")
    for crop in crops:
        crop.image = as_stored(crop.image, settings.output)
    return FileCrops(decoded, faces, crops, log)
