"""Frame sampling and decoding (DeepfakeBench, Appendix A.1 "Frame Sampling").

Two readers give the same frame numbers: ``pyav`` (default, ``preprocessing.pyav_reader``)
decodes only what the kept frames depend on; ``opencv`` decodes every frame up to the last one
needed and skips the colour conversion of the others with ``grab()``. When PyAV fails on a
file, the OpenCV reader takes over and the reason is logged. Images pass through as one frame; a folder
of images (DF40's ``frames/<video>/``) is a video whose frames are its images in name order.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

import cv2
import numpy as np

from fairforensics.preprocessing.video_problems import libav_messages, why_unopenable

logger = logging.getLogger(__name__)
libav_messages(verbose=False)  # OpenCV's FFmpeg prints "moov atom not found" lines otherwise

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"})
VIDEO_SUFFIXES = frozenset(
    {".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v", ".mpg", ".mpeg", ".wmv"}
)
SamplingMode = Literal["fixed_num_frames", "fixed_stride"]  # "clips": see sample_clips
DecodeBackend = Literal["pyav", "opencv"]


class MediaReadError(RuntimeError):
    """A video or image cannot be opened or decoded."""


def is_image(path: str | Path) -> bool:
    """True when the file suffix is an image format."""
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


def sample_indices(
    total: int, mode: SamplingMode = "fixed_num_frames", num_frames: int = 32, stride: int = 1
) -> list[int]:
    """Frame numbers to keep from a video of ``total`` frames.

    ``fixed_num_frames``: ``num_frames`` evenly spaced frames from first to last (as
    DeepfakeBench, ``np.linspace(0, total - 1, num_frames)`` truncated); all frames when the
    video is shorter. ``fixed_stride``: every ``stride``-th frame starting at 0.
    """
    if total <= 0:
        return []
    if mode == "fixed_num_frames":
        if num_frames <= 0:
            raise ValueError(f"num_frames must be positive, got {num_frames}")
        if total <= num_frames:
            return list(range(total))
        return np.linspace(0, total - 1, num_frames, endpoint=True).astype(int).tolist()
    if mode == "fixed_stride":
        if stride <= 0:
            raise ValueError(f"stride must be positive, got {stride}")
        return list(range(0, total, stride))
    raise ValueError(f"unknown sampling mode {mode!r}; allowed: fixed_num_frames, fixed_stride")


def sample_clips(total: int, clip_size: int = 16, num_clips: int = 4) -> list[list[int]]:
    """Runs of ``clip_size`` consecutive frame numbers of a video of ``total`` frames.

    The clips do not overlap (each has its own crop), so there are at most
    ``total // clip_size`` of them; their starts are evenly spaced from the first frame to the
    last possible start (``np.linspace(0, total - clip_size, n)`` rounded). A video shorter
    than ``clip_size`` gives one clip of all its frames.
    """
    if clip_size <= 0 or num_clips <= 0:
        raise ValueError(f"clip_size and num_clips must be positive, got {clip_size}, {num_clips}")
    if total <= 0:
        return []
    if total <= clip_size:
        return [list(range(total))]
    n = min(num_clips, total // clip_size)
    starts = np.round(np.linspace(0, total - clip_size, n)).astype(int) if n > 1 else [0]
    return [list(range(s, s + clip_size)) for s in starts]


def read_image(path: str | Path) -> np.ndarray:
    """An image file as uint8 RGB (EXIF orientation applied, alpha dropped)."""
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if bgr is None:
        raise MediaReadError(f"{path}: unreadable image")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def frame_files(folder: str | Path) -> list[Path]:
    """The images of a folder of frames (a video already cut into images), in name order."""
    return sorted(p for p in Path(folder).iterdir() if p.is_file() and is_image(p))


def count_frames(path: str | Path) -> int:
    """Number of frames of a video from its header (0 when unknown); images count 1; a folder
    of frames counts its images."""
    if is_image(path):
        return 1
    if Path(path).is_dir():
        return len(frame_files(path))
    cap = cv2.VideoCapture(str(path))
    try:
        if not cap.isOpened():
            raise MediaReadError(f"{path}: cannot open video: {why_unopenable(path)}")
        return max(int(cap.get(cv2.CAP_PROP_FRAME_COUNT)), 0)
    finally:
        cap.release()


def read_frames(
    path: str | Path,
    indices: list[int] | None,
    gray: bool = False,
    backend: DecodeBackend = "pyav",
    threads: int = 1,
    notes: list[str] | None = None,
    device: str = "cpu",
) -> dict[int, np.ndarray]:
    """Decode the frames ``indices`` (sorted, unique) of a video; ``None``: every frame.

    Returns ``{frame number: RGB uint8 array}`` (or single-channel when ``gray``); frames past
    the real end of the video are missing from the result. ``threads`` is the decoder's thread
    count and ``device`` its hardware (PyAV: ``cpu`` or ``cuda``). A fallback from PyAV to
    OpenCV (on the CPU) is logged and appended to ``notes``.
    """
    if is_image(path):
        rgb = read_image(path)
        return {0: cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY) if gray else rgb}
    if Path(path).is_dir():
        files = frame_files(path)
        keep = range(len(files)) if indices is None else [i for i in indices if i < len(files)]
        rgbs = {i: read_image(files[i]) for i in keep}
        return {i: cv2.cvtColor(f, cv2.COLOR_RGB2GRAY) for i, f in rgbs.items()} if gray else rgbs
    if backend not in ("pyav", "opencv"):
        raise ValueError(f"unknown decode backend {backend!r}; allowed: pyav, opencv")
    if backend == "pyav":
        try:
            from fairforensics.preprocessing.pyav_reader import read_frames_pyav

            frames = read_frames_pyav(path, indices, threads, device)
        except Exception as exc:  # any PyAV failure: OpenCV may still read the file
            note = (
                f"PyAV ({device}) could not decode it ({type(exc).__name__}: {exc}); "
                "read with OpenCV"
            )
            logger.warning("%s: %s", path, note)
            if notes is not None:
                notes.append(note)
        else:
            if gray:
                return {i: cv2.cvtColor(f, cv2.COLOR_RGB2GRAY) for i, f in frames.items()}
            return frames
    return _read_opencv(path, indices, gray)


def _read_opencv(path: str | Path, indices: list[int] | None, gray: bool) -> dict[int, np.ndarray]:
    cap = cv2.VideoCapture(str(path))
    try:
        if not cap.isOpened():
            raise MediaReadError(f"{path}: cannot open video: {why_unopenable(path)}")
        wanted = set(indices) if indices is not None else None
        last = max(indices) if indices else (None if indices is None else -1)
        out: dict[int, np.ndarray] = {}
        i = 0
        while last is None or i <= last:
            if not cap.grab():
                break
            if wanted is None or i in wanted:
                ok, bgr = cap.retrieve()
                if ok and bgr is not None:
                    code = cv2.COLOR_BGR2GRAY if gray else cv2.COLOR_BGR2RGB
                    out[i] = cv2.cvtColor(bgr, code)
            i += 1
        return out
    finally:
        cap.release()
