"""One stable crop per clip (``sampling.mode: clips``): landmarks for every frame, one alignment.

Video detectors such as FTCN and AltFreezing see a clip through one fixed crop, so the face does
not jitter between frames. Every frame of a clip keeps its own 68 landmarks (frames where the
detector found no face get them interpolated from the nearest frames that have one), and the
whole clip is warped with the crop of the clip's mean landmarks
(:func:`preprocessing.align.crop_matrix`, the same crop as single frames).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from scipy.ndimage import uniform_filter1d

from fairforensics.configs.crop import CropSpec
from fairforensics.preprocessing.align import crop_matrix

Found = tuple[int, int, np.ndarray]  # (frame number, face rank, 68 landmarks)


class _Log(Protocol):
    skipped_frames: list[dict[str, Any]]
    notes: list[str]


def smooth_landmarks(landmarks: list[np.ndarray], window: int) -> list[np.ndarray]:
    """Moving average of landmarks over neighbouring frames (``window`` <= 1: unchanged)."""
    if window <= 1 or len(landmarks) < 2:
        return landmarks
    stacked = uniform_filter1d(np.stack(landmarks), size=window, axis=0, mode="nearest")
    return list(stacked.astype(np.float32))


def fill_landmarks(numbers: list[int], detected: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Landmarks (68, 2) for each frame number of ``numbers``: ``detected`` where present, else
    linearly interpolated between the nearest detected frames before and after (the nearest
    one's at either end). ``detected`` must hold at least one frame."""
    if not detected:
        raise ValueError("no frame of the clip has landmarks")
    known = np.array(sorted(detected))
    stack = np.stack([np.asarray(detected[k], np.float32) for k in known])
    out: dict[int, np.ndarray] = {}
    for n in numbers:
        if n in detected:
            out[n] = np.asarray(detected[n], np.float32)
            continue
        j = int(np.searchsorted(known, n))
        if j == 0 or j == len(known):
            out[n] = stack[min(j, len(known) - 1)].copy()
            continue
        a, b = known[j - 1], known[j]
        w = (n - a) / (b - a)
        out[n] = ((1 - w) * stack[j - 1] + w * stack[j]).astype(np.float32)
    return out


def clip_matrix(landmarks: list[np.ndarray], crop: CropSpec) -> np.ndarray:
    """The 2x3 crop matrix of the clip's mean landmarks, shared by all its frames."""
    return crop_matrix(np.mean(np.stack(landmarks), axis=0), crop)


def crop_clips(
    clips: list[list[int]],
    decoded: set[int],
    found: list[Found],
    crop: CropSpec,
    smooth_window: int,
    log: _Log,
) -> tuple[list[Found], dict[int, np.ndarray], dict[int, int]]:
    """The faces to write, the alignment matrix and the clip of every kept frame number.

    Per clip: landmarks for each decoded frame (interpolated where no face was found; noted in
    ``log.notes``), smoothed over ``smooth_window`` frames within the clip, and one matrix. A
    clip without any face, or whose alignment fails, goes to ``log.skipped_frames``.
    """
    detected = {i: lm for i, _, lm in found}
    out: list[Found] = []
    matrices: dict[int, np.ndarray] = {}
    clip_of: dict[int, int] = {}
    for c, clip in enumerate(clips):
        numbers = [i for i in clip if i in decoded]
        have = {i: detected[i] for i in numbers if i in detected}
        reason = "no face in any frame of its clip" if not have else None
        if have:
            filled = fill_landmarks(numbers, have)
            lms = smooth_landmarks([filled[i] for i in numbers], smooth_window)
            try:
                matrix = clip_matrix(lms, crop)
            except ValueError as exc:
                reason = f"alignment of its clip failed: {exc}"
        if reason is not None:
            log.skipped_frames.extend({"frame": i, "reason": reason} for i in numbers)
            continue
        if len(have) < len(numbers):
            log.notes.append(
                f"clip {c}: no face in {len(numbers) - len(have)} of its {len(numbers)} "
                "frames; their landmarks are interpolated"
            )
        for i, lm in zip(numbers, lms, strict=True):
            out.append((i, 0, lm))
            matrices[i] = matrix
            clip_of[i] = c
    return out, matrices, clip_of
