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
from fairforensics.preprocessing.align import warp_mask
from fairforensics.preprocessing.config import PreprocessConfig
from fairforensics.preprocessing.datasets.base import SourceItem
from fairforensics.preprocessing.face_path import (
    PNG_PARAMS,
    STAGES,
    FoundFaces,
    crop_faces,
    decode_sampled,
    encode_params,
    face_analyzer,
    find_faces,
)
from fairforensics.preprocessing.faces import FaceAnalyzer
from fairforensics.preprocessing.files import write_json
from fairforensics.preprocessing.video import MediaReadError, read_frames

logger = logging.getLogger(__name__)

RECORD = "_done.json"
RECORD_VERSION = 1


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
    """This process's analyzer for ``cfg.face`` (made once)."""
    f = cfg.face
    key = (f.detector, f.upsample, f.detect_max_side, f.retry_upsample, f.device, f.detect_on)
    if key not in _ANALYZERS:
        _ANALYZERS[key] = face_analyzer(f)
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
    settings = cfg.face_settings()
    decoded = decode_sampled(item.path, settings, result, t)
    frames = decoded.frames
    result.frames_sampled = len(frames)
    faces = find_faces(decoded, settings, _analyzer(cfg), result, t)
    result.faces = faces.detected

    masks: dict[int, np.ndarray] | None = None
    if item.mask is not None:
        t0 = time.process_time()
        d = cfg.decode
        dec = {"backend": d.backend, "threads": d.threads, "device": d.device}
        try:
            masks = read_frames(
                item.mask,
                sorted({i for i, _, _ in faces.found}),
                gray=True,
                notes=result.notes,
                **dec,
            )
        except MediaReadError as exc:
            result.notes.append(f"mask unreadable ({exc}); no masks for this video")
            logger.warning("%s: mask unreadable: %s", item.path, exc)
        if masks is not None and any(i not in masks for i, _, _ in faces.found):
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
            cfg,
            frames,
            faces.found,
            faces.landmarks,
            masks,
            tmp,
            t,
            result.skipped_frames,
            faces.matrices,
            faces.clip_of,
        )
        if not record["frames"]:
            raise MediaReadError(f"{item.path}: no frame could be aligned")
        record["num_source_frames"] = decoded.total
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
    """Crop every found face (:func:`preprocessing.face_path.crop_faces`) and write it into
    ``tmp``; frames that fail go to ``skipped``.

    ``landmarks``: the alignment landmarks of ``found``'s faces; ``matrices``: a given alignment
    per frame number (one per clip); ``clip_of``: the clip of each frame number, recorded as
    ``clips`` ([first position, length] in ``frames``)."""
    faces = FoundFaces(
        [(i, k, lm) for (i, k, _), lm in zip(found, landmarks, strict=True)],
        [None] * len(found),
        [0] * len(found),
        matrices,
        clip_of,
    )
    crops = crop_faces(frames, faces, cfg.align, skipped, t)
    suffix, params = f".{cfg.output.format}", encode_params(cfg.output)
    size = cfg.align.size
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
    for crop in crops:
        i = crop.frame
        mask = None
        if masks is not None:
            t0 = time.process_time()
            mask = warp_mask(masks[i], crop.matrix, size, cfg.output.mask_threshold)
            t["align"] += time.process_time() - t0
        t0 = time.process_time()
        name = f"{i:03d}_{crop.rank}" if cfg.face.keep == "all" else f"{i:03d}"
        _write_image(tmp / "frames" / f"{name}{suffix}", crop.image, params)
        np.save(tmp / "landmarks" / f"{name}.npy", crop.landmarks.astype(np.float32))
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
