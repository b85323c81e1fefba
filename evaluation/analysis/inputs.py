"""Inputs of the analysis tools: frames sampled from a dataset index, turned into model batches."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import torch

from fairforensics.detectors.base import DetectorConfig
from fairforensics.preprocessing.index import DatasetIndex
from fairforensics.preprocessing.resolve import resolve_index

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Frame:
    """One frame file of an index with its video's label and method."""

    path: Path
    label: int
    method: str
    video_id: str


def sample_frames(
    index: DatasetIndex | str | Path,
    n_per_class: int,
    split: str = "test",
    seed: int = 0,
) -> list[Frame]:
    """Up to ``n_per_class`` random frames of each class (paper 002 Sec. 4.3: 2500 real and 2500
    fake for t-SNE; A.4: 2000 per class for spectra), drawn without replacement, seeded."""
    if not isinstance(index, DatasetIndex):
        index = resolve_index(index, Path(index).parent)
    videos = index.split(split)
    if not videos:
        raise ValueError(f"{index.dataset}: split {split!r} has no videos")
    rng = np.random.default_rng(seed)
    out: list[Frame] = []
    for label in (0, 1):
        pool = [
            Frame(index.resolve(f), v.label, v.method, v.id)
            for v in videos
            if v.label == label
            for f in v.frames
        ]
        if len(pool) < n_per_class:
            log.warning(
                "%s/%s: only %d frames of class %d (asked %d)",
                index.dataset,
                split,
                len(pool),
                label,
                n_per_class,
            )
        take = (
            rng.choice(len(pool), size=min(n_per_class, len(pool)), replace=False) if pool else []
        )
        out += [pool[i] for i in sorted(take)]
    return out


def read_frames(frames: Sequence[Frame | str | Path]) -> tuple[list[np.ndarray], list[int]]:
    """uint8 RGB images of the readable frames and the positions of those read; unreadable
    files are logged and skipped."""
    images, kept = [], []
    for n, frame in enumerate(frames):
        path = frame.path if isinstance(frame, Frame) else Path(frame)
        img = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if img is None:
            log.warning("%s: unreadable image, skipped", path)
            continue
        images.append(cv2.cvtColor(img, cv2.COLOR_BGR2RGB))
        kept.append(n)
    return images, kept


def to_batch(
    images: Sequence[np.ndarray], cfg: DetectorConfig, device: str | torch.device = "cpu"
) -> torch.Tensor:
    """Float [B, 3, S, S] images resized to ``cfg.input_size``, normalised with ``cfg.mean``/``std``
    (the preprocessing of :func:`evaluation.predict.predict_images`)."""
    size = cfg.input_size
    chunk = []
    for n, img in enumerate(images):
        img = np.asarray(img)
        if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
            raise ValueError(f"images[{n}] must be uint8 HxWx3 RGB, got {img.dtype} {img.shape}")
        if img.shape[:2] != (size, size):
            interp = cv2.INTER_AREA if max(img.shape[:2]) > size else cv2.INTER_CUBIC
            img = cv2.resize(img, (size, size), interpolation=interp)
        chunk.append(img)
    x = torch.from_numpy(np.stack(chunk)).to(device).permute(0, 3, 1, 2).float().div_(255.0)
    mean = torch.tensor(cfg.mean, device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(cfg.std, device=x.device).view(1, 3, 1, 1)
    return (x - mean) / std
