"""Where the clips of a video detector lie in a video's stored frames.

A video's stored frames form *runs* of consecutive source frames: the clips that
``sampling.mode: clips`` recorded in the index (``VideoEntry.clips``), or else the whole frame
list, as DeepfakeBench v2 reads its JSON indexes (clips of ``clip_size`` consecutive entries of a
video's frame list). :func:`clip_windows` places ``num_clips`` clips on the runs with
DeepfakeBench v2's rule (``training/dataset/abstract_dataset.py``, ``video_mode``): a run holding
``k`` clips is cut into ``k`` parts of ``step = (n - clip_size) // (k - 1)`` frames; at test time
clip ``i`` starts at ``i * step`` (one clip: at the run's start), in training anywhere in
``[i * step, min((i + 1) * step, n - clip_size + 1))`` (one clip: anywhere in the run), drawn
again every epoch. Unlike DeepfakeBench, the rule covers the whole frame list instead of only
its first ``frame_num`` entries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairforensics.preprocessing.index import VideoEntry


@dataclass(frozen=True)
class ClipWindow:
    """Where one clip may start: positions ``start .. start + span - 1`` of the frame list."""

    start: int  # the test-time start (a position in the video's frame list)
    span: int  # admissible starts for training (1: fixed)
    run: tuple[int, int]  # (first position, length) of the run the clip lies in


def video_runs(video: VideoEntry) -> list[tuple[int, int]]:
    """(first position, length) of each run of consecutive frames of ``video``."""
    if video.clips is not None:
        return [(int(s), int(n)) for s, n in video.clips]
    return [(0, len(video.frames))]


def has_gaps(video: VideoEntry) -> bool:
    """True when a run of ``video`` holds frames that are not consecutive in the source video
    (known from ``frame_indices``; e.g. 32 frames spread over a whole video)."""
    idx = video.frame_indices
    if not idx:
        return False
    return any(
        np.any(np.diff(idx[start : start + length]) != 1) for start, length in video_runs(video)
    )


def _run_windows(start: int, n: int, clip_size: int, k: int) -> list[ClipWindow]:
    """DeepfakeBench v2's ``k`` clips on one run of ``n`` frames starting at ``start``."""
    last = n - clip_size  # last admissible start, relative to the run
    if k == 1:
        return [ClipWindow(start, last + 1, (start, n))]
    step = last // (k - 1)
    return [
        ClipWindow(start + i * step, min((i + 1) * step, last + 1) - i * step, (start, n))
        for i in range(k)
    ]


def clip_windows(runs: list[tuple[int, int]], clip_size: int, num_clips: int) -> list[ClipWindow]:
    """``num_clips`` clip windows over ``runs`` (fewer when the runs are short).

    Runs shorter than ``clip_size`` hold no clip. With at least ``num_clips`` usable runs, one
    clip on each of ``num_clips`` evenly spaced runs; with fewer, the clips are shared out over
    the runs (the first ones get one more when it does not divide), each run holding at most
    ``length // clip_size`` of them, placed by DeepfakeBench v2's rule (module docstring).
    """
    if clip_size < 1 or num_clips < 1:
        raise ValueError(f"clip_size and num_clips must be >= 1, got {clip_size}, {num_clips}")
    usable = [(s, n) for s, n in runs if n >= clip_size]
    if not usable:
        return []
    if len(usable) >= num_clips:
        picks = np.round(np.linspace(0, len(usable) - 1, num_clips)).astype(int)
        chosen = [usable[i] for i in sorted(set(picks.tolist()))]
        return [w for s, n in chosen for w in _run_windows(s, n, clip_size, 1)]
    base, extra = divmod(num_clips, len(usable))
    windows = []
    for r, (s, n) in enumerate(usable):
        k = min(base + (r < extra), n // clip_size)
        windows += _run_windows(s, n, clip_size, k)
    return windows
