"""Score face crops held in memory exactly as ``test.py`` scores the same crops read from an
index: the same :class:`preprocessing.frames.FrameDataset` (frame or clip sampling over a video's
crops, the resize to the detector's input), the same batches (:func:`evaluation.predict.
predict_loader`: normalisation on the device, AMP, NaN check), with the crops taken from memory
instead of files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fairforensics.detectors.base import Detector
from fairforensics.evaluation.predict import (
    clip_size_of,
    eval_requires,
    make_eval_loader,
    predict_loader,
    rows_to_predictions,
)
from fairforensics.evaluation.predictions import Predictions
from fairforensics.preprocessing.device import amp_dtype, resolve_device
from fairforensics.preprocessing.frames import FrameDataset
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry

DATASET = "detect"


@dataclass
class Unit:
    """What is scored as one "video" of test.py: the crops of one face track of one file, in
    frame order. ``clips``: the clip of each crop (one crop per clip frame), or None."""

    key: str
    images: list[np.ndarray]  # RGB uint8 crops, any size (resized to the detector's input)
    frames: list[int]  # the source frame number of each crop
    clips: list[int] | None = None


class MemoryFrames:
    """The frame source a :class:`FrameDataset` reads through its ``cache`` hook: (video
    position, frame position) -> (image, its size). Images not at the detector's resolution are
    resized by the dataset itself, as a stored crop would be."""

    def __init__(self, units: Sequence[Unit]) -> None:
        self.units = list(units)

    def get(self, video: int, pos: int) -> tuple[np.ndarray, tuple[int, int]]:
        image = self.units[video].images[pos]
        return image, (int(image.shape[0]), int(image.shape[1]))


def _runs(clips: list[int]) -> list[list[int]]:
    """[first position, length] of each run of equal clip numbers."""
    runs: list[list[int]] = []
    for pos, clip in enumerate(clips):
        if runs and clips[pos - 1] == clip:
            runs[-1][1] += 1
        else:
            runs.append([pos, 1])
    return runs


def units_index(units: Sequence[Unit], task: str = "deepfake") -> DatasetIndex:
    """An in-memory index of ``units`` (one test video each; the frame paths are never read)."""
    videos = [
        VideoEntry(
            id=unit.key,
            label=0,  # unknown; not reported
            method="input",
            split="test",
            frames=[f"{n}/{pos}" for pos in range(len(unit.images))],
            frame_indices=list(unit.frames),
            clips=_runs(unit.clips) if unit.clips is not None else None,
        )
        for n, unit in enumerate(units)
    ]
    return DatasetIndex(DATASET, task, videos, root=Path("."))


def short_for_clips(detector: Detector, unit: Unit) -> str | None:
    """Why a video detector cannot score ``unit`` (no run of ``clip_size`` crops), else None."""
    clip = clip_size_of(detector)
    if clip is None:
        return None
    runs = _runs(unit.clips) if unit.clips is not None else [[0, len(unit.images)]]
    if max(n for _, n in runs) >= clip:
        return None
    return (
        f"{type(detector).name or 'the detector'} scores clips of {clip} consecutive frames; "
        f"the longest run of frames with a face has {max(n for _, n in runs)}"
    )


def score_units(
    detector: Detector,
    units: Sequence[Unit],
    *,
    frame_num: int | None,
    batch_size: int = 32,
    device: str = "cpu",
    amp: bool = True,
    task: str = "deepfake",
) -> Predictions:
    """One row per scored frame (or clip) of every unit, as ``predict_index`` gives for an index
    of these crops: ``frame_num`` crops per unit spread over it (None: all), ``video_id`` the
    unit's key, ``frame`` the source frame number (a clip's first)."""
    index = units_index(units, task)
    cfg = detector.cfg
    # landmarks are left out: no detector reads them outside training (SLADD draws its
    # training pairs with them), and a crop in memory has them only in face_path's FaceCrop
    requires = eval_requires(detector.requires) - {"landmarks"}
    dataset = FrameDataset(
        [index],
        "test",
        frame_num=frame_num or max(len(u.images) for u in units),
        resolution=cfg.input_size,
        requires=requires,
        clip_size=clip_size_of(detector),
        cache=MemoryFrames(units),
    )
    dev = resolve_device(device)
    detector.to(dev)
    dtype = amp_dtype("auto" if amp else "fp32", dev)
    loader = make_eval_loader(dataset, batch_size, 0, pin_memory=dev.type == "cuda")
    cols, _, _ = predict_loader(
        detector, loader, mean=cfg.mean, std=cfg.std, device=dev, amp_dtype=dtype, progress=False
    )
    return rows_to_predictions(cols)
