"""Preprocess one video or image: sample, detect, landmarks, align, masks, write atomically.

A video's folder appears only through one ``os.rename`` of a fully written temporary folder
that ends with the completion record ``_done.json``; a killed run leaves at most a hidden
``.<name>.tmp-*`` folder, which the next run removes and redoes.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from fairforensics.configs.filemode import file_mode
from fairforensics.configs.loader import ConfigError
from fairforensics.preprocessing.align import crop_face, warp_face, warp_mask
from fairforensics.preprocessing.clip_crops import crop_clips, smooth_landmarks
from fairforensics.preprocessing.config import PreprocessConfig
from fairforensics.preprocessing.datasets.base import SourceItem
from fairforensics.preprocessing.faces import Box, FaceAnalyzer
from fairforensics.preprocessing.files import write_json
from fairforensics.preprocessing.video import (
    MediaReadError,
    count_frames,
    is_image,
    read_frames,
    sample_clips,
    sample_indices,
)

logger = logging.getLogger(__name__)

RECORD = "_done.json"
RECORD_VERSION = 1
STAGES = ("decode", "detect", "landmarks", "align", "write")


@dataclass
class VideoResult:
    """What happened to one item; ``record`` is the completion record when it succeeded."""

    key: tuple[str, str]
    record: dict[str, Any] | None = None
    reason: str | None = None  # why the whole item was skipped
    skipped_frames: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # what makes the video less than asked (fewer frames than sampling wants); kept in the
    # completion record, so the manifest lists them on a resumed run too
    warnings: list[str] = field(default_factory=list)
    # CPU seconds per stage (the worker's threads included; robust to a busy machine)
    timing: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    frames_sampled: int = 0
    faces: int = 0
    cpu_s: float = 0.0  # CPU time of the worker on this item (robust to a busy machine)


def read_record(video_dir: Path, fingerprint: str) -> dict[str, Any] | None:
    """The completion record of a finished video made with the same settings, else ``None``."""
    path = video_dir / RECORD
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if record.get("version") != RECORD_VERSION or record.get("fingerprint") != fingerprint:
        return None
    for kind in ("frames", "landmarks", "masks"):
        if not all((video_dir / rel).is_file() for rel in record.get(kind) or []):
            return None
    return record


def _analyzer(cfg: PreprocessConfig) -> FaceAnalyzer:
    f = cfg.face
    key = (f.detector, f.upsample, f.detect_max_side, f.retry_upsample, f.device, f.detect_on)
    if key not in _ANALYZERS:
        _ANALYZERS[key] = FaceAnalyzer(*key[:5], detect_on=f.detect_on)
    return _ANALYZERS[key]


def check_face_device(cfg: PreprocessConfig) -> None:
    """``face.device: cuda`` without a usable CUDA device is a ConfigError, never a CPU fallback."""
    global _CUDA_CHECKED
    if cfg.face.device != "cuda" or _CUDA_CHECKED:
        return
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(
            f"face.device: cuda, but torch {torch.__version__} sees no CUDA device in this "
            "process; set face.device: cpu (--set face.device=cpu) or run on a machine with CUDA"
        )
    _CUDA_CHECKED = True


_CUDA_CHECKED = False


_ANALYZERS: dict[tuple, FaceAnalyzer] = {}


# Lossless either way; the "up" filter with run-length zlib encodes a 256 px face in 2.2 ms
# instead of 3.7 ms (libpng's adaptive filters) for files of the same size.
PNG_PARAMS = [
    cv2.IMWRITE_PNG_COMPRESSION, 1,
    cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_RLE,
    cv2.IMWRITE_PNG_FILTER, cv2.IMWRITE_PNG_FILTER_UP,
]  # fmt: skip


def _encode(cfg: PreprocessConfig) -> tuple[str, list[int]]:
    if cfg.output.format == "jpg":
        return ".jpg", [cv2.IMWRITE_JPEG_QUALITY, cfg.output.jpeg_quality]
    return ".png", PNG_PARAMS


def _write_image(path: Path, image: np.ndarray, params: list[int]) -> None:
    if image.ndim == 3:
        image = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    if not cv2.imwrite(str(path), image, params):
        raise OSError(f"{path}: cannot write image")


def limit_threads() -> None:
    """One OpenCV and one BLAS/OpenMP thread in this process: a pool runs one video per core.

    Applied once in each pool worker (not in a caller's own process); the decoder's threads
    are ``decode.threads``. dlib's detector and predictor are single-threaded.
    """
    global _THREADS_LIMITED
    if _THREADS_LIMITED or multiprocessing.parent_process() is None:
        return
    from threadpoolctl import threadpool_limits

    cv2.setNumThreads(1)
    threadpool_limits(1)
    _THREADS_LIMITED = True


_THREADS_LIMITED = False


def process_item(item: SourceItem, cfg: PreprocessConfig, video_dir: Path) -> VideoResult:
    """Preprocess ``item`` into ``video_dir``; never raises on bad input (see ``reason``).

    A ``face.device`` this process cannot use raises (``check_face_device``): every video would
    fail alike, so the run stops instead of skipping them all.
    """
    limit_threads()
    check_face_device(cfg)
    result = VideoResult(key=item.key)
    cpu0 = time.process_time()
    try:
        _process(item, cfg, video_dir, result)
    except MediaReadError as exc:
        result.reason = str(exc)
    except Exception as exc:  # a corrupt file must never stop a long job
        logger.exception("%s: failed", item.path)
        result.reason = f"{type(exc).__name__}: {exc}"
    if result.reason:
        result.record = None
    result.cpu_s = time.process_time() - cpu0
    return result


def _process(item: SourceItem, cfg: PreprocessConfig, video_dir: Path, result: VideoResult) -> None:
    t = result.timing
    if not item.path.is_file():
        raise MediaReadError(f"{item.path}: file not found")
    t0 = time.process_time()
    image = is_image(item.path)
    d = cfg.decode
    dec = {"backend": d.backend, "threads": d.threads, "device": d.device, "notes": result.notes}
    total = count_frames(item.path)
    if total <= 0:
        frames = read_frames(item.path, None, **dec)  # header without a frame count: decode all
        total = len(frames)
        keep, clips = _plan(cfg, total)
        frames = {i: frames[i] for i in keep if i in frames}
    else:
        keep, clips = _plan(cfg, total)
        frames = read_frames(item.path, keep, **dec)  # each clip's run decoded in one pass
    t["decode"] += time.process_time() - t0
    if not frames:
        raise MediaReadError(f"{item.path}: no decodable frame")
    short = None if image else _short_note(cfg, total, clips)
    if short:
        _warn(result, item, short)
    missing = [i for i in keep if i not in frames]
    for i in missing:
        result.skipped_frames.append({"frame": i, "reason": "past the real end of the video"})
    if missing:
        _warn(
            result,
            item,
            f"truncated: {len(missing)} of the {len(keep)} sampled frames lie past the real end "
            f"of the video (its header says {total} frames); {len(keep) - len(missing)} kept",
        )
    result.frames_sampled = len(frames)

    analyzer = _analyzer(cfg)
    every_face = cfg.face.keep == "all"
    batched = cfg.face.detector == "mtcnn" and cfg.face.batch_size > 1
    detected = _detect_batched(analyzer, frames, cfg.face.batch_size, t) if batched else {}
    follow = cfg.face.face_size_from_previous and not every_face and not batched
    face_size: float | None = None  # side of the largest face of the previous kept frame
    found: list[tuple[int, int, np.ndarray]] = []  # (frame number, face rank, landmarks)
    for i in sorted(frames):
        if batched:
            boxes = detected[i]
        else:
            t0 = time.process_time()
            boxes = analyzer.detect(frames[i], face_size)
            t["detect"] += time.process_time() - t0
        if not boxes:
            if clips is None:  # in a clip, the frame's landmarks are interpolated instead
                result.skipped_frames.append({"frame": i, "reason": "no face"})
            continue
        if follow:
            face_size = float(min(boxes[0][2] - boxes[0][0], boxes[0][3] - boxes[0][1]))
        t0 = time.process_time()
        for k, box in enumerate(boxes if every_face else boxes[:1]):
            found.append((i, k, analyzer.landmarks(frames[i], box)))
        t["landmarks"] += time.process_time() - t0
    result.faces = len(found)
    if not found:
        raise MediaReadError(f"{item.path}: no face in any of the {len(frames)} sampled frames")
    matrices: dict[int, np.ndarray] | None = None
    clip_of: dict[int, int] | None = None
    if clips is not None:
        found, matrices, clip_of = crop_clips(
            clips, set(frames), found, cfg.align.crop, cfg.align.smooth_window, result
        )
        landmarks = [lm for _, _, lm in found]
        if not found:
            raise MediaReadError(f"{item.path}: no clip could be aligned")
    else:
        landmarks = [lm for _, _, lm in found]
        if not every_face:  # smoothing follows one face through time
            landmarks = smooth_landmarks(landmarks, cfg.align.smooth_window)

    masks: dict[int, np.ndarray] | None = None
    if item.mask is not None:
        t0 = time.process_time()
        try:
            masks = read_frames(item.mask, sorted({i for i, _, _ in found}), gray=True, **dec)
        except MediaReadError as exc:
            result.notes.append(f"mask unreadable ({exc}); no masks for this video")
            logger.warning("%s: mask unreadable: %s", item.path, exc)
        if masks is not None and any(i not in masks for i, _, _ in found):
            result.notes.append("mask video shorter than the video; no masks for this video")
            logger.warning("%s: mask video %s is too short", item.path, item.mask)
            masks = None
        t["decode"] += time.process_time() - t0

    video_dir.parent.mkdir(parents=True, exist_ok=True)
    for stale in video_dir.parent.glob(f".{video_dir.name}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(dir=video_dir.parent, prefix=f".{video_dir.name}.tmp-"))
    tmp.chmod(file_mode(directory=True))  # mkdtemp makes 0700 whatever the umask
    try:
        record = _write(
            cfg, frames, found, landmarks, masks, tmp, t, result.skipped_frames, matrices, clip_of
        )
        if not record["frames"]:
            raise MediaReadError(f"{item.path}: no frame could be aligned")
        record["num_source_frames"] = total
        record["skipped_frames"] = result.skipped_frames
        record["warnings"] = result.warnings
        write_json(tmp / RECORD, record, indent=None)  # the folder is renamed into place
        if video_dir.exists():  # an earlier result made with other settings, or --overwrite
            shutil.rmtree(video_dir)
        os.rename(tmp, video_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    result.record = record


def _warn(result: VideoResult, item: SourceItem, warning: str) -> None:
    """Log a warning about ``item`` and keep it for the manifest."""
    logger.warning("%s: %s", item.path, warning)
    result.warnings.append(warning)


def _plan(cfg: PreprocessConfig, total: int) -> tuple[list[int], list[list[int]] | None]:
    """Frame numbers to decode, and the clips they form (``None`` outside ``clips`` mode)."""
    s = cfg.sampling
    if s.mode == "clips":
        clips = sample_clips(total, s.clip_size, s.num_clips)
        return [i for clip in clips for i in clip], clips
    return sample_indices(total, s.mode, s.num_frames, s.stride), None


def _short_note(cfg: PreprocessConfig, total: int, clips: list[list[int]] | None) -> str | None:
    """The manifest's note for a video too short for what ``sampling`` asks."""
    s = cfg.sampling
    if clips is not None and (total < s.clip_size or len(clips) < s.num_clips):
        return (
            f"only {total} frames: {len(clips)} clip(s) of {len(clips[0]) if clips else 0} "
            f"frames instead of {s.num_clips} of {s.clip_size}"
        )
    if s.mode == "fixed_num_frames" and total < s.num_frames:
        return f"only {total} frames (< {s.num_frames}); kept all of them"
    return None


def _detect_batched(
    analyzer: FaceAnalyzer, frames: dict[int, np.ndarray], batch_size: int, t: dict[str, float]
) -> dict[int, list[Box]]:
    """Face boxes of every frame, ``batch_size`` frames per ``detect_batch`` call."""
    order = sorted(frames)
    out: dict[int, list[Box]] = {}
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        t0 = time.process_time()
        out.update(zip(chunk, analyzer.detect_batch([frames[i] for i in chunk]), strict=True))
        t["detect"] += time.process_time() - t0
    return out


def _write(
    cfg: PreprocessConfig,
    frames: dict[int, np.ndarray],
    found: list[tuple[int, int, np.ndarray]],
    landmarks: list[np.ndarray],
    masks: dict[int, np.ndarray] | None,
    tmp: Path,
    t: dict[str, float],
    skipped: list[dict[str, Any]],
    matrices: dict[int, np.ndarray] | None = None,
    clip_of: dict[int, int] | None = None,
) -> dict[str, Any]:
    """Align and write every found face into ``tmp``; frames that fail go to ``skipped``.

    ``matrices``: a given alignment per frame number (one per clip); ``clip_of``: the clip of
    each frame number, recorded as ``clips`` ([first position, length] in ``frames``)."""
    suffix, params = _encode(cfg)
    crop_spec, size = cfg.align.crop, cfg.align.size
    for sub in ("frames", "landmarks") + (("masks",) if masks is not None else ()):
        (tmp / sub).mkdir()
    record: dict[str, Any] = {
        "version": RECORD_VERSION,
        "fingerprint": cfg.fingerprint(),
        "frames": [],
        "landmarks": [],
        "masks": [] if masks is not None else None,
        "frame_indices": [],
    }
    if clip_of is not None:
        record["clips"] = []
    for (i, k, _), lm in zip(found, landmarks, strict=True):
        t0 = time.process_time()
        if matrices is not None:
            crop, matrix, crop_lm = warp_face(frames[i], lm, matrices[i], size)
        else:
            try:
                crop, matrix, crop_lm = crop_face(frames[i], lm, crop_spec)
            except ValueError as exc:  # degenerate landmarks: lose the frame, not the video
                skipped.append({"frame": i, "reason": f"alignment failed: {exc}"})
                continue
        mask = None
        if masks is not None:
            mask = warp_mask(masks[i], matrix, size, cfg.output.mask_threshold)
        t["align"] += time.process_time() - t0
        t0 = time.process_time()
        name = f"{i:03d}_{k}" if cfg.face.keep == "all" else f"{i:03d}"
        _write_image(tmp / "frames" / f"{name}{suffix}", crop, params)
        np.save(tmp / "landmarks" / f"{name}.npy", crop_lm.astype(np.float32))
        record["frames"].append(f"frames/{name}{suffix}")
        record["landmarks"].append(f"landmarks/{name}.npy")
        if mask is not None:
            _write_image(tmp / "masks" / f"{name}.png", mask, PNG_PARAMS)
            record["masks"].append(f"masks/{name}.png")
        if clip_of is not None:
            if not record["clips"] or clip_of[i] != clip_of[record["frame_indices"][-1]]:
                record["clips"].append([len(record["frame_indices"]), 0])
            record["clips"][-1][1] += 1
        record["frame_indices"].append(i)
        t["write"] += time.process_time() - t0
    return record
