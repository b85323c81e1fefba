"""Throughput of the training data pipeline and step: images/s for loading, stepping, both.

Used by ``scripts/bench_train.py``; numbers are printed as JSON, never asserted in tests.
"""

from __future__ import annotations

import copy
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import albumentations as A
import cv2
import numpy as np
import torch
from PIL import Image
from sklearn.metrics import auc as sk_auc
from sklearn.metrics import average_precision_score, roc_curve
from torch.utils.data import DataLoader
from torchvision import transforms as T

from fairforensics.detectors import build_detector
from fairforensics.preprocessing.device import to_channels_last
from fairforensics.preprocessing.frames import FrameDataset, collate, to_device
from fairforensics.preprocessing.index import DatasetIndex, VideoEntry, read_index, write_index
from fairforensics.training.augment import FancyPCA, build_augment
from fairforensics.training.cache import PackedCache
from fairforensics.training.config import AugmentConfig
from fairforensics.training.host_memory import keep_freed_host_memory
from fairforensics.training.samplers import TrainSampler
from fairforensics.training.step import TrainStep


def real_face_index(folder: Path, faces_dir: Path, n_frames: int = 224, size: int = 256) -> Path:
    """An index of ``n_frames`` face photos found under ``faces_dir``, resized to ``size``, 8 per
    video, written to ``folder``."""
    photos = sorted(p for p in Path(faces_dir).rglob("*") if p.suffix.lower() in (".jpg", ".png"))
    if not photos:
        raise FileNotFoundError(f"no face photos under {faces_dir}")
    videos = []
    for v in range(0, n_frames, 8):
        rel = Path("bench") / f"v{v:04d}"
        (folder / rel).mkdir(parents=True, exist_ok=True)
        frames = []
        for f in range(v, min(v + 8, n_frames)):
            img = cv2.imread(str(photos[f % len(photos)]), cv2.IMREAD_COLOR)
            h, w = img.shape[:2]
            s = min(h, w)
            img = cv2.resize(
                img[(h - s) // 2 : (h + s) // 2, (w - s) // 2 : (w + s) // 2], (size, size)
            )
            cv2.imwrite(str(folder / rel / f"{f:03d}.png"), img)
            frames.append(f"{rel.as_posix()}/{f:03d}.png")
        label = (v // 8) % 2
        videos.append(
            VideoEntry(
                id=f"v{v:04d}",
                label=label,
                method="real" if label == 0 else "fake",
                split="train",
                frames=frames,
            )
        )
    path = folder / "bench.json"
    write_index(DatasetIndex(dataset="bench", task="deepfake", videos=videos, root=folder), path)
    return path


def reference_getitem(ds: FrameDataset, i: int, aug: Any, mean: Any, std: Any) -> torch.Tensor:
    """A DeepfakeBench-style ``__getitem__`` for side-by-side timing on the same frames.

    Its documented steps: ``cv2.imread`` + RGB + cubic resize, a PIL image round trip, the same
    albumentations pipeline, then ``ToTensor`` + ``Normalize`` (float) inside the worker.
    """
    index, video = ds.videos[ds.items[i].video]
    img = cv2.cvtColor(
        cv2.imread(str(index.resolve(video.frames[ds.items[i].pos]))), cv2.COLOR_BGR2RGB
    )
    img = cv2.resize(img, (ds.resolution, ds.resolution), interpolation=cv2.INTER_CUBIC)
    img = np.array(Image.fromarray(np.array(img, dtype=np.uint8)))
    if aug is not None:
        img = aug(image=img)["image"]
    return T.Normalize(mean, std)(T.ToTensor()(img))


def stock_pipeline(cfg: AugmentConfig, resolution: int) -> A.Compose:
    """The same augmentations with albumentations' own FancyPCA (for the reference timing)."""
    pipeline = build_augment(cfg, resolution)
    for transform in pipeline.transforms:
        if isinstance(transform, A.OneOf):
            transform.transforms = [
                A.FancyPCA(alpha=t.alpha) if isinstance(t, FancyPCA) else t
                for t in transform.transforms
            ]
    return pipeline


class _ReferenceDataset(torch.utils.data.Dataset):
    """Wraps :func:`reference_getitem` for the side-by-side DataLoader timing."""

    def __init__(self, ds: FrameDataset, aug: Any, mean: Any, std: Any) -> None:
        self.ds, self.aug, self.mean, self.std = ds, aug, mean, std
        self.labels = ds.labels

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, i: int) -> dict[str, Any]:
        image = reference_getitem(self.ds, i, self.aug, self.mean, self.std)
        return {"image": image, "label": int(self.labels[i])}


def _rate(n: int, seconds: float) -> float:
    return round(n / max(seconds, 1e-9), 2)


def bench_train(
    detector: str = "meso4",
    *,
    batch_size: int = 32,
    resolution: int = 256,
    precision: str = "fp32",
    channels_last: bool = False,
    device: str = "cpu",
    steps: int = 10,
    warmup: int = 2,
    num_workers: int = 2,
    index: str | Path | None = None,
    faces_dir: str | Path | None = None,
    cache: bool = True,
    rounds: int = 3,
    compile: bool = False,
    keep_host_memory: bool = True,
) -> dict[str, Any]:
    """Images/s for ``getitem`` alone, the DataLoader alone, the step alone and both together,
    on the frames of ``index``, or else of 224 photos under ``faces_dir``."""
    if index is None and faces_dir is None:
        raise ValueError("bench_train needs a dataset index or a folder of face photos")
    dev = torch.device(device)
    if keep_host_memory:  # as the trainer does; process-wide, so the reference gains as well
        keep_freed_host_memory()
    tmp = None
    if index is None:
        tmp = tempfile.TemporaryDirectory(prefix="bench_train_")
        index = real_face_index(Path(tmp.name), Path(faces_dir), size=resolution)
    try:
        idx = read_index(index)
        model = build_detector(detector, input_size=resolution).to(dev)
        requires = model.requires
        aug = build_augment(AugmentConfig(), resolution, keypoints="landmarks" in requires)
        ref_aug = stock_pipeline(AugmentConfig(), resolution)
        ds = FrameDataset(
            [idx],
            "train",
            frame_num=32,
            resolution=resolution,
            requires=requires,
            augment=aug,
            train=True,
        )
        out: dict[str, Any] = {
            "detector": detector,
            "batch_size": batch_size,
            "resolution": resolution,
            "precision": precision,
            "channels_last": channels_last,
            "keep_host_memory": keep_host_memory,
            "device": str(dev),
            "frames": len(ds),
            "num_workers": num_workers,
            "torch_threads": torch.get_num_threads(),
        }
        n = min(len(ds), 224)
        t0 = time.perf_counter()
        for i in range(n):
            ds[i]
        out["getitem_samples_per_s"] = _rate(n, time.perf_counter() - t0)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # as in a DataLoader worker; spares it thread contention
        try:
            t0 = time.perf_counter()
            for i in range(n):
                reference_getitem(ds, i, ref_aug, model.cfg.mean, model.cfg.std)
            out["reference_getitem_samples_per_s"] = _rate(n, time.perf_counter() - t0)
        finally:
            torch.set_num_threads(threads)

        def loader() -> DataLoader:
            return DataLoader(
                ds,
                batch_size=batch_size,
                sampler=TrainSampler(ds.labels, seed=0),
                num_workers=num_workers,
                collate_fn=collate,
                drop_last=True,
                pin_memory=dev.type == "cuda",
                persistent_workers=num_workers > 0,
            )

        out["loader_samples_per_s"], out["loader_warm_samples_per_s"] = _loader_rates(loader())
        ref = DataLoader(
            _ReferenceDataset(ds, ref_aug, model.cfg.mean, model.cfg.std),
            batch_size=batch_size,
            shuffle=True,
            num_workers=num_workers,
            drop_last=True,
            persistent_workers=num_workers > 0,
        )
        out["reference_loader_samples_per_s"], out["reference_loader_warm_samples_per_s"] = (
            _loader_rates(ref)
        )
        if cache:
            with tempfile.TemporaryDirectory(prefix="bench_cache_") as cache_dir:
                ds.cache = PackedCache.build(ds, cache_dir, "bench")
                t0 = time.perf_counter()
                for i in range(n):
                    ds[i]
                out["getitem_cached_samples_per_s"] = _rate(n, time.perf_counter() - t0)
                out["loader_cached_samples_per_s"], out["loader_cached_warm_samples_per_s"] = (
                    _loader_rates(loader())
                )

        amp = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
        if dev.type == "cuda":
            torch.backends.cudnn.benchmark = True  # as in both trainers
        reference = copy.deepcopy(model).train()
        if channels_last:
            model = to_channels_last(model)
        model.train()
        step = TrainStep(
            model,
            torch.optim.Adam(model.parameters(), lr=2e-4),
            device=dev,
            forward=torch.compile(model) if compile else model,
            amp_dtype=amp,
            channels_last=channels_last,
        )
        ref_step = reference_step(reference, torch.optim.Adam(reference.parameters(), lr=2e-4))
        synth = collate([ds[i % len(ds)] for i in range(batch_size)])
        ref_synth = dict(synth)  # what DeepfakeBench's workers deliver: normalised float32
        ref_synth["image"] = to_device(synth, "cpu", model.cfg.mean, model.cfg.std)["image"]
        ref_synth = {k: ref_synth[k] for k in ("image", "label")}
        ours, theirs = [], []
        for _ in range(warmup):
            step(synth)
            ref_step(ref_synth, dev)
        for _ in range(rounds):  # interleaved, so that a busy moment slows both alike
            ours.append(_timed(lambda: step(synth), steps, batch_size, dev))
            theirs.append(_timed(lambda: ref_step(ref_synth, dev), steps, batch_size, dev))
        out["step_images_per_s"] = statistics.median(ours)
        out["reference_step_images_per_s"] = statistics.median(theirs)
        out["step_rounds"] = {"ours": ours, "reference": theirs}
        out["step_speedup"] = round(
            out["step_images_per_s"] / out["reference_step_images_per_s"], 3
        )

        batches = _endless(loader())
        for _ in range(warmup):  # workers started and prefetching before the clock starts
            step(next(batches))
        out["train_images_per_s"] = _timed(lambda: step(next(batches)), steps, batch_size, dev)
        out["loader_keeps_fraction"] = round(
            out["train_images_per_s"] / out["step_images_per_s"], 3
        )
        return out
    finally:
        if tmp is not None:
            tmp.cleanup()


def reference_step(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer
) -> Callable[[dict[str, torch.Tensor], torch.device], dict[str, float]]:
    """DeepfakeBench's training step, for side-by-side timing on the same model and batch.

    The body of its ``Trainer.train_epoch`` loop: move the (already normalised float) batch,
    ``zero_grad``, forward, loss, backward, ``step`` in fp32 and NCHW, then its per-batch
    training metrics (``calculate_metrics_for_train``: accuracy, AP, ROC AUC and EER with
    scikit-learn on the batch).
    """

    def step(batch: dict[str, torch.Tensor], dev: torch.device) -> dict[str, float]:
        data = {k: v.to(dev) for k, v in batch.items()}
        optimizer.zero_grad()
        out = model(data)
        loss = model.loss(data, out)["total"]
        loss.backward()
        optimizer.step()
        logits, label = out["logits"].detach(), data["label"]
        prob = torch.softmax(logits, dim=1)[:, 1].cpu().numpy()
        y = label.cpu().numpy()
        metrics = {"loss": loss.item(), "acc": (logits.argmax(1) == label).sum().item() / len(y)}
        if 0 < y.sum() < len(y):
            metrics["ap"] = float(average_precision_score(y, prob))
            fpr, tpr, _ = roc_curve(y, prob)
            metrics["auc"] = float(sk_auc(fpr, tpr))
            metrics["eer"] = float(fpr[np.nanargmin(np.abs(1 - tpr - fpr))])
        return metrics

    return step


def _loader_rates(loader: DataLoader, warm_epochs: int = 2) -> tuple[float, float]:
    """Samples/s over the first epoch (workers starting up) and over ``warm_epochs`` more."""
    rates = []
    for epochs in (1, warm_epochs):
        t0, seen = time.perf_counter(), 0
        for _ in range(epochs):
            for batch in loader:
                seen += len(batch["label"])
        rates.append(_rate(seen, time.perf_counter() - t0))
    return rates[0], rates[1]


def _endless(loader: DataLoader) -> Iterator[dict[str, Any]]:
    """Batches of ``loader``, epoch after epoch."""
    while True:
        yield from loader


def _timed(fn: Callable[[], Any], steps: int, batch_size: int, dev: torch.device) -> float:
    """Images/s over ``steps`` calls of ``fn``."""
    _sync(dev)
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    _sync(dev)
    return _rate(steps * batch_size, time.perf_counter() - t0)


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


__all__ = ["bench_train", "real_face_index"]
