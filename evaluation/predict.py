"""Run a detector over a dataset index (or plain images) and produce a predictions file's rows.

Frames are read, resized to the detector's ``input_size`` and normalised with its ``mean``/``std``
exactly as during training (:mod:`preprocessing.frames`), without augmentation. One row per frame,
or, for a video detector (``input_kind == "clip"``), one row per clip of its ``clip_size``
consecutive frames (``unit`` ``clip``; ``frame`` is the clip's first frame).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import torch
from torch.utils.data import DataLoader, Sampler
from tqdm import tqdm

from fairforensics.configs.threads import apply_main_threads, init_worker_threads
from fairforensics.detectors.base import Detector
from fairforensics.evaluation.predictions import Predictions
from fairforensics.preprocessing.device import amp_dtype as amp_precision
from fairforensics.preprocessing.device import resolve_device
from fairforensics.preprocessing.frames import FrameDataset, collate, to_device
from fairforensics.preprocessing.index import DatasetIndex
from fairforensics.preprocessing.resolve import resolve_index

log = logging.getLogger(__name__)

TRAIN_ONLY_KEYS = ("pairs", "random_pairs", "blend_all", "identity", "method_groups")


def eval_requires(requires: frozenset[str]) -> frozenset[str]:
    """The ``requires`` keys that make sense without training (no pairs, no online blends)."""
    return frozenset(k for k in requires if k not in TRAIN_ONLY_KEYS and not k.startswith("blend:"))


def autocast(device: torch.device, dtype: torch.dtype | None) -> contextlib.AbstractContextManager:
    """``torch.autocast`` for ``dtype`` (bf16/fp16), or a no-op for fp32."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


@torch.no_grad()
def predict_loader(
    detector: torch.nn.Module,
    loader: DataLoader,
    *,
    mean: Sequence[float],
    std: Sequence[float],
    device: str | torch.device = "cpu",
    amp_dtype: torch.dtype | None = None,
    channels_last: bool = False,
    progress: bool = True,
) -> tuple[dict[str, list[Any]], list[str], list[str]]:
    """Rows (column lists) of every frame of ``loader``, plus replaced and skipped inputs."""
    device = resolve_device(device)
    was_training = detector.training
    detector.eval()
    cols: dict[str, list[Any]] = {
        k: [] for k in ("dataset", "video_id", "frame", "label", "score", "method", "unit")
    }
    attrs: list[dict[str, str]] = []
    replaced: list[str] = []
    skipped: list[str] = []
    try:
        # progress=True: a bar on a terminal only (tqdm's disable=None), never in a log file
        bar = tqdm(loader, desc="predict", leave=False, disable=None if progress else True)
        for batch in bar:
            replaced.extend(batch.get("_replaced", ()))
            skipped.extend(batch.get("_skipped", ()))
            if "image" not in batch:
                continue
            unit = "clip" if batch["image"].dim() == 5 else "frame"
            batch = to_device(batch, device, mean, std, channels_last)
            with autocast(device, amp_dtype):
                out = detector(batch)
            prob = out["prob"].float().cpu().numpy()
            if not np.isfinite(prob).all():
                raise FloatingPointError("the detector produced NaN or infinite scores")
            cols["score"].extend(prob.tolist())
            cols["label"].extend(batch["label"].cpu().tolist())
            cols["frame"].extend(batch["frame"].cpu().tolist())
            for key in ("dataset", "video_id", "method"):
                cols[key].extend(batch[key])
            n = len(prob)
            cols["unit"].extend([unit] * n)
            names = list(batch["attributes"])
            attrs.extend({k: batch["attributes"][k][i] for k in names} for i in range(n))
    finally:
        detector.train(was_training)
    names = sorted({k for a in attrs for k in a})
    for k in names:
        cols[f"attr:{k}"] = [a.get(k, "") for a in attrs]
    return cols, replaced, skipped


def clip_size_of(detector: Detector) -> int | None:
    """The clip length a video detector scores (``None`` for an image detector)."""
    return int(detector.cfg.clip_size) if detector.input_kind == "clip" else None


def rows_to_predictions(cols: dict[str, list[Any]]) -> Predictions:
    """A :class:`Predictions` from the column lists of :func:`predict_loader`."""
    attributes = {k[5:]: v for k, v in cols.items() if k.startswith("attr:")}
    return Predictions(
        dataset=cols["dataset"],
        video_id=cols["video_id"],
        frame=cols["frame"],
        label=cols["label"],
        score=cols["score"],
        method=cols["method"],
        attributes=attributes,
        unit=cols.get("unit"),
    )


def make_eval_loader(
    dataset: torch.utils.data.Dataset,
    batch_size: int,
    num_workers: int = 0,
    sampler: Sampler | None = None,
    pin_memory: bool = False,
) -> DataLoader:
    """A deterministic evaluation loader (no shuffling; its own generator, so the global RNG
    is not consumed); sets this process's threads for ``num_workers`` workers beside it."""
    apply_main_threads(num_workers)
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=False,
        sampler=sampler,
        num_workers=num_workers,
        collate_fn=collate,
        pin_memory=pin_memory,
        generator=torch.Generator().manual_seed(0),
        persistent_workers=False,
        worker_init_fn=init_worker_threads,
    )


def predict_index(
    detector: Detector,
    index: DatasetIndex | str | Path,
    split: str = "test",
    *,
    frame_num: int | None = None,
    batch_size: int = 32,
    num_workers: int = 0,
    device: str = "cpu",
    amp: bool = False,
) -> Predictions:
    """Score the frames of ``split`` of ``index`` (``frame_num`` per video; ``None`` = all).

    Returns one row per frame (a video detector: per clip, ``frame_num // clip_size`` clips per
    video) with dataset, video_id, frame, label, score, method, unit and every attribute.
    Unreadable frames are logged and replaced by another frame of the same video.
    """
    if not isinstance(index, DatasetIndex):
        index = resolve_index(index, Path(index).parent)
    cfg = detector.cfg
    dataset = FrameDataset(
        [index],
        split,
        frame_num=frame_num or max(len(v.frames) for v in index.split(split) or index.videos),
        resolution=cfg.input_size,
        requires=eval_requires(detector.requires),
        clip_size=clip_size_of(detector),
    )
    dev = resolve_device(device)
    detector.to(dev)
    dtype = amp_precision("auto" if amp else "fp32", dev)
    loader = make_eval_loader(dataset, batch_size, num_workers, pin_memory=dev.type == "cuda")
    cols, replaced, skipped = predict_loader(
        detector, loader, mean=cfg.mean, std=cfg.std, device=dev, amp_dtype=dtype
    )
    if replaced or skipped:
        log.warning(
            "%s/%s: %d frames replaced, %d samples skipped",
            index.dataset,
            split,
            len(replaced),
            len(skipped),
        )
    return rows_to_predictions(cols)


@torch.no_grad()
def predict_images(
    detector: Detector, images: Sequence[np.ndarray], batch_size: int = 32, device: str = "cpu"
) -> np.ndarray:
    """Class-1 scores of uint8 HxWx3 RGB ``images`` (a video detector: of clips, uint8
    TxHxWx3 with T its ``clip_size``), resized to ``cfg.input_size`` and normalised with
    ``cfg.mean``/``cfg.std``."""
    cfg = detector.cfg
    size = cfg.input_size
    clip = clip_size_of(detector)
    shape = "HxWx3 RGB" if clip is None else f"{clip}xHxWx3 RGB clips"
    dev = resolve_device(device)
    detector.to(dev)
    was_training = detector.training
    detector.eval()
    mean = torch.tensor(cfg.mean, device=dev).view(3, 1, 1)
    std = torch.tensor(cfg.std, device=dev).view(3, 1, 1)
    scores: list[np.ndarray] = []
    try:
        for start in range(0, len(images), batch_size):
            chunk = []
            for n, img in enumerate(images[start : start + batch_size], start):
                img = np.asarray(img)
                frames = img[None] if clip is None else img
                if (
                    img.dtype != np.uint8
                    or frames.ndim != 4
                    or frames.shape[3] != 3
                    or (clip is not None and len(frames) != clip)
                ):
                    raise ValueError(
                        f"images[{n}] must be uint8 {shape}, got {img.dtype} {img.shape}"
                    )
                if frames.shape[1:3] != (size, size):
                    interp = cv2.INTER_AREA if max(frames.shape[1:3]) > size else cv2.INTER_CUBIC
                    frames = np.stack(
                        [cv2.resize(f, (size, size), interpolation=interp) for f in frames]
                    )
                chunk.append(frames if clip is not None else frames[0])
            x = torch.from_numpy(np.stack(chunk)).to(dev)
            x = x.movedim(-1, -3).float().div_(255.0)  # [B, (T,) 3, H, W]
            x = (x - mean) / std
            n = len(chunk)
            batch = {"image": x, "label": torch.zeros(n, dtype=torch.long, device=dev)}
            scores.append(detector(batch)["prob"].float().cpu().numpy())
    finally:
        detector.train(was_training)
    return np.concatenate(scores) if scores else np.zeros(0, dtype=np.float32)
